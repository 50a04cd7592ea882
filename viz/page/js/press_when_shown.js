// An event's step, given the tab's text box as its input: press the tab's button once the box shows that text (an
// example put it there), as the visitor would.
// (page, task) => (text) => void; page: page_tools.js.
(page, task) => (text) => {
  page.whenReady(`#${task}-submit`, () => (page.box(task) || {}).value === text, button => button.click());
}
