// The step after a failed event (gradio's page chains no .then step after one): clears mark_busy.js's mark.
// (id) => () => void; id: the busy output's elem_id.
(id) => () => {
  document.getElementById(id)?.removeAttribute('aria-busy');
}
