// A compare panel's second box, when focused while empty, gets a copy of the first input to edit
// (viz.compare.input_panels). The copy comes selected, as an address bar's text does: typing or pasting replaces it
// (a pasted review used to land after the copy), a second click edits it.
(first, second) => {
  if (second && second.trim()) return second;
  const box = document.activeElement;
  let frames = 0;
  const select = () => {
    if (document.activeElement !== box) return;
    if (box.value === first) box.setSelectionRange(0, box.value.length);  // iOS ignores select() here
    else if (++frames < 30) requestAnimationFrame(select);
  };
  requestAnimationFrame(select);
  return first;
}
