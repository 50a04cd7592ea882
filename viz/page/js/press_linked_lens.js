// A link with `layers=1` (viz.share.links) reads the result it runs layer by layer: once the tab shows that result
// (its state changed after the link filled the tab), press the section's button, once a page load.
// (page, task) => () => void; page: page_tools.js.
(page, task) => () => {
  const link = page.link();
  const q = new URLSearchParams(window.location.search);
  if (!link.text || link.tab !== task || q.get('layers') !== '1') return;
  window.__linkedLens = window.__linkedLens || {};
  if (window.__linkedLens[task]) return;
  window.__linkedLens[task] = true;
  page.whenReady(`#${task}-lens-submit`, () => true, button => button.click());
}
