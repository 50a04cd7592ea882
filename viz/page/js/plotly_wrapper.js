// Plotly's own mode bar, on every figure of the page: the camera button saves a PNG (at twice the size, for
// slides), and a second button saves an SVG. Gradio draws figures with window.Plotly.react(gd, data, layout,
// config); wrapping react adds the buttons to that config, and the page's theme (plot_theme.js) to the figure. It
// all runs in the browser, so it works offline.
// The wrapper also draws each figure once: for a new figure, gradio's plot first redraws its old plotly div, then
// replaces that div with a new one and draws the figure again (60-90 ms each for a long review's heatmap). Drawn
// in the next animation frame instead, only into divs still on the page and only the last figure given to each,
// a new heatmap is drawn once, just before the browser paints. Loaded with the page's head (viz.page.html_head).
(() => {
  if (window.__attentionDemoPlotly) return;
  window.__attentionDemoPlotly = true;
  const name = gd => ((gd.closest('[id]') || {}).id || 'attention') + '';
  const svgButton = {
    name: 'downloadSvg', title: 'Download plot as SVG',
    icon: {width: 1000, height: 1000, path: 'M420 50h160v350h170l-250 300l-250-300h170zM100 800h800v150h-800z'},
    click: gd => window.Plotly.downloadImage(gd, {format: 'svg', filename: name(gd)}),
  };
  const pending = new Map();  // div -> {args, done}: the last figure given to it, drawn at the next frame
  const draw = (P, react, gd) => {
    const {args, done} = pending.get(gd);
    pending.delete(gd);
    if (!gd.isConnected) return done(gd);  // replaced before it was drawn: nothing to show
    if (window.__attentionTheme) [args[1], args[2]] = window.__attentionTheme(gd, args[1], args[2]);  // plot_theme.js
    Promise.resolve(react.apply(P, args)).then(done, done);
  };
  const patch = P => {
    if (!P || P.__withDownloads) return P;
    const react = P.react;
    P.react = (gd, data, layout, config) => {
      const args = [gd, data, layout, Object.assign({}, config, {
        displaylogo: false, modeBarButtonsToAdd: [svgButton],
        toImageButtonOptions: {format: 'png', scale: 2, filename: name(gd)},
      })];
      const waiting = pending.get(gd);
      if (waiting) { waiting.args = args; return waiting.promise; }
      const entry = {args};
      entry.promise = new Promise(resolve => { entry.done = resolve; });
      pending.set(gd, entry);
      requestAnimationFrame(() => draw(P, react, gd));
      return entry.promise;
    };
    P.__withDownloads = true;
    return P;
  };
  let current = patch(window.Plotly);
  Object.defineProperty(window, 'Plotly', {configurable: true, get: () => current, set: v => { current = patch(v); }});
})();
