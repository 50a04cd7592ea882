"""Sharing a view: links that restore it, the JSON download (export_store keeps and serves the files), and their
controls. The figures' PNG and SVG buttons are the page's (viz/page/js/plotly_wrapper.js)."""
