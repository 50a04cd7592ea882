// A tab's button shows no gradio progress (viz.server.hosting.first_view): the output the new result replaces is
// marked aria-busy from the click instead, and dimmed by the page's CSS, until after_paint.js or clear_busy.js
// clears it. Runs before the event is sent and passes its inputs on unchanged.
// (id) => (...inputs) => inputs; id: the busy output's elem_id.
(id) => (...inputs) => {
  document.getElementById(id)?.setAttribute('aria-busy', 'true');
  return inputs;
}
