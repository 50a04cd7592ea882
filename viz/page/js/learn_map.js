// The Learn tab's map of the model (viz.learn.model_map), as gr.HTML's js_on_load: a click on a part that a step
// explains (a button with data-step, the step's 0-based index) goes to that step, as a `select` event whose value is
// the index. The map is redrawn inside the same element at each step, so one listener on it serves every map.
// (element, trigger) => void; element: the component, trigger: gradio's (event name, data) of js_on_load.
(element, trigger) => {
  element.addEventListener('click', e => {
    const part = e.target.closest('[data-step]');
    if (!part || !element.contains(part)) return;
    const step = parseInt(part.dataset.step, 10);
    if (Number.isInteger(step)) trigger('select', {index: step, value: step});
  });
}
