// What the page's own steps share (viz.page.landing hands it to each as `page`): the link in the page's address, and
// waiting until the page shows what a step needs.
// (tabs) => page; tabs: the tabs' ids (viz.share.links.TABS), the first the one the page opens on.
(tabs) => ({
  tabs,
  // The address's text, and the tab it names: the first when it names none, or one the page has not.
  link: () => {
    const q = new URLSearchParams(window.location.search);
    const named = (q.get('tab') || '').trim().toLowerCase();
    return {text: (q.get('text') || '').trim(), tab: tabs.includes(named) ? named : tabs[0]};
  },
  // Look every 50 ms, for up to two minutes, until `selector` finds an element and ready(element) holds, then
  // act(element): the tab it is in may still be mounting, and the values a link filled in may not be on the page
  // yet (gradio can start the step after an event before it has shown that event's outputs). A slow phone or a busy
  // machine can take longer than the ten seconds it used to wait.
  whenReady: (selector, ready, act) => {
    let tries = 0;
    const look = () => {
      const element = document.querySelector(selector);
      if (element && ready(element)) act(element);
      else if (++tries < 2400) setTimeout(look, 50);
    };
    look();
  },
  // A tab's text box (null before the tab has mounted).
  box: task => document.querySelector(`#${task}-input textarea`),
})
