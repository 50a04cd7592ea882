// The Learn tab's arrow keys: right for Next (#learn-next), left for Back (#learn-back), while the Learn tab is shown
// and the visitor is not typing or moving a control (a text box, a slider, a radio button keep their own arrows).
// () => void, run once as the page loads.
() => {
  if (window.__learnKeys) return;
  window.__learnKeys = true;
  document.addEventListener('keydown', e => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || e.defaultPrevented) return;
    const t = e.target;
    if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
    const button = document.getElementById(e.key === 'ArrowRight' ? 'learn-next' : 'learn-back');
    if (!button || !button.offsetParent) return;  // the Learn tab is not shown
    e.preventDefault();
    button.click();
  });
}
