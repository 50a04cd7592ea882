// What the page's own steps share (viz.page.landing hands it to each as `page`): the link in the page's address, and
// waiting until the page shows what a step needs.
// (tabs, first) => page; tabs: the task tabs' ids (viz.share.links.TABS), first: the tab the page opens on (the
// Learn tab, viz.share.links.LEARN).
(tabs, first) => ({
  tabs,
  first,
  // The address's text, and the tab it names: a link with text but no tab (made before the Learn tab) is the first
  // task tab's; an address with neither, or with a step of the Learn tab (?learn=3), opens the page's first tab.
  link: () => {
    const q = new URLSearchParams(window.location.search);
    const named = (q.get('tab') || '').trim().toLowerCase();
    const text = (q.get('text') || '').trim();
    const known = tabs.includes(named) || named === first;
    const tab = known ? named : (text && !q.has('learn') ? tabs[0] : first);
    return {text: tab === first ? '' : text, tab};
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
