// Press the tab's button when its box holds text to read, as a click would (every panel follows): another model or
// training step chosen (viz.models.training_step).
// (task) => () => void
(task) => () => {
  const box = document.querySelector(`#${task}-input textarea`);
  if (box && box.value.trim()) document.querySelector(`#${task}-submit`)?.click();
}
