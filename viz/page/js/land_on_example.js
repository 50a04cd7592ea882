// What a tab opens on when the page's address names no text (no link): `text` typed into the tab's box and its own
// button pressed, once per page, so that a first visit shows a worked example rather than empty plots. The box is
// filled as typing fills it (an input event), and left alone if the visitor typed first.
// onLoad: the step runs as the page loads, for the page's first tab: it lands at once unless the address names
// another tab, and then when its tab button is first clicked (a DOM listener, not the tab's select event: gradio
// fires the first tab's select as the page mounts). Otherwise the step runs when the tab is selected.
// (page, task, text, onLoad) => () => void; page: page_tools.js.
(page, task, text, onLoad) => {
  const fill = box => {
    const landed = window.__landed || (window.__landed = {});
    if (landed[task]) return;
    landed[task] = true;
    if (box.value.trim()) return;
    box.value = text;
    box.dispatchEvent(new Event('input', {bubbles: true}));
    const button = document.querySelector(`#${task}-submit`);
    requestAnimationFrame(() => requestAnimationFrame(() => button.click()));
  };
  const land = () => page.whenReady(`#${task}-input textarea`, () => document.querySelector(`#${task}-submit`), fill);
  return () => {
    const link = page.link();
    if (link.text) return;  // a link's own text wins
    if (!onLoad || link.tab === task) return land();
    page.whenReady(`button[data-tab-id="${task}"]`, () => true, button => {
      button.addEventListener('click', land, {once: true});
    });
  };
}
