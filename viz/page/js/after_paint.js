// A step in the browser only (viz.server.hosting.after_paint): clears mark_busy.js's mark, then resolves once the
// page has shown a frame with the event's outputs. Gradio's page does a lot of work when it starts an event;
// started straight after the first heatmap arrives, the next event held that heatmap back from the screen for
// 50-100 ms. Plots are drawn in an animation frame (plotly_wrapper.js), so the step waits for the next one after it:
// by then the frame with the new heatmap has been painted.
// (id) => () => Promise; id: the busy output's elem_id.
(id) => () => {
  document.getElementById(id)?.removeAttribute('aria-busy');
  return new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0))));
}
