// After a link filled a tab's inputs, press the tab's own button: the same run, with every panel, as a click. It
// waits until the link's text is in the tab's box: pressed before, the button would run on an empty box.
// (page, task) => () => void; page: page_tools.js.
(page, task) => () => {
  const link = page.link();
  if (!link.text || link.tab !== task) return;
  page.whenReady(`#${task}-submit`, () => ((page.box(task) || {}).value || '').trim(), button => button.click());
}
