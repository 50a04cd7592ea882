// Clicks on plots, in the browser: a heatmap cell picks its row's token (and its score is taken apart), a thumbnail
// of the model view or a head's cell of a Layer by layer grid sets the layer and head controls
// (viz.attention.views_panel), a head of the composition view lists what it composes with, each by writing into a
// hidden textbox of the plot's tab. Plotly
// reports clicks through gd.on('plotly_click'), bound to a plot the first time a pointer goes down on it (gradio
// replaces plot divs on new figures, so binding at draw time would miss some).
// (hosts) => void; hosts: a CSS selector of the elements whose id names a tab ('[id^="sentiment-"], ...').
(hosts) => {
  if (window.__attentionViews) return;
  window.__attentionViews = true;
  const send = (id, value) => {
    const box = document.querySelector('#' + id + ' textarea, #' + id + ' input');
    if (!box) return;
    box.value = value + '#' + Date.now();
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const onClick = (plotId, ev) => {
    const pt = ev && ev.points && ev.points[0];
    if (!pt) return;
    const task = plotId.split('-')[0];
    const meta = pt.data.meta || {};
    if (plotId.endsWith('-model-view')) {
      send(task + '-open-head', meta.layer + ':' + meta.head + ':' + meta.kind);
    } else if (meta.open) {  // a head's cell of a Layer by layer grid ("h3" or "x3", "layer 2"): its map, large
      const cell = /^([hx])(\d+)$/.exec(String(pt.x));
      const layer = parseInt(String(pt.y).replace('layer ', ''), 10);
      if (cell && meta.open[cell[1]] && !isNaN(layer)) {
        send(task + '-open-head', layer + ':' + cell[2] + ':' + meta.open[cell[1]]);
      }
    } else if (meta.q) {  // a cell of a large heatmap: its row's token, and the cell (its score taken apart)
      const row = parseInt(String(pt.y), 10);
      send(task + '-token-click', meta.q + ':' + row);
      if (meta.kind) send(task + '-cell-click', meta.kind + ':' + row + ':' + parseInt(String(pt.x), 10));
    } else if (meta.pick) {  // a head of a layers x heads matrix (the composition view): "layer 3", "head 2"
      send(task + '-' + meta.pick, parseInt(String(pt.y).replace('layer ', ''), 10) + ':'
        + parseInt(String(pt.x).replace('head ', ''), 10));
    }
  };
  const bind = e => {
    const gd = e.target.closest && e.target.closest('.js-plotly-plot');
    if (!gd || gd.__viewsBound || typeof gd.on !== 'function') return;
    const host = gd.closest(hosts);
    if (!host) return;
    gd.__viewsBound = true;
    gd.on('plotly_click', ev => onClick(host.id, ev));
  };
  document.addEventListener('pointerdown', bind, true);
  document.addEventListener('mousedown', bind, true);
}
