// The Learn tab walks its preloaded sentence as the page loads when the address opens it (viz.learn.tab); when the
// address opens another tab, it walks when first opened: its tab button's first click presses "Walk through it".
// (page) => () => void; page: page_tools.js.
(page) => () => {
  if (page.link().tab === page.first) return;
  page.whenReady(`button[data-tab-id="${page.first}"]`, () => true, button => {
    button.addEventListener('click', () => page.whenReady('#learn-submit', () => true, b => b.click()), {once: true});
  });
}
