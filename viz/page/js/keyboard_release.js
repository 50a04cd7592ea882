// gradio's slider sends its `release` event on pointerup only, and its number box on blur: moved with the keyboard
// (arrows, Home, End, Page Up/Down), the training-step slider changed its text but not the model the tab runs, and a
// step typed in the number box with Enter showed "Step 0" beside the trained model's result until the visitor
// clicked elsewhere. A key that moves any slider now ends as a pointer's release would, and Enter or an arrow in a
// slider's number box as leaving it would (a slider with no release listener sends nothing). Loaded with the page's
// head (viz.page.html_head).
document.addEventListener('keyup', e => {
  const t = e.target;
  if (!(t instanceof HTMLInputElement)) return;
  if (t.type === 'range'
    && ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown'].includes(e.key))
    t.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));
  else if (t.type === 'number' && ['Enter', 'ArrowUp', 'ArrowDown'].includes(e.key)
    && t.closest('.block')?.querySelector('input[type=range]'))
    t.dispatchEvent(new FocusEvent('blur'));
});
