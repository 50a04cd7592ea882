"""The attention views: plotly figures (heatmaps, small multiples, model view, token focus), their handlers
and panel, and inside one head."""
