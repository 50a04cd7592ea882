// A thumbnail of the model view opened its head (value 'layer:head:kind'): bring the large plot of that kind of
// attention into view (viz.attention.views_panel), opening first the section that holds it (viz.page.layout: the
// translator's encoder and decoder plots sit in "Inside one head", off the page until that section is opened).
// (plots, sections) => (value) => value ('layer:head:kind#n'); plots: the elem_id of each kind's large plot; sections: the elem_id of the
// section holding it, for a kind whose plot is not in the main view.
(plots, sections) => (value) => {
  const kind = String(value || '').split('#')[0].split(':')[2];  // '#n': a click's count (plot_clicks.js)
  const scroll = () => {
    const plot = plots[kind] && document.getElementById(plots[kind]);
    // to the whole pixel at or above its top (scrollIntoView left a fractional top just above the screen's edge)
    if (plot) window.scrollTo(0, Math.floor(plot.getBoundingClientRect().top + window.scrollY));
    return Boolean(plot);
  };
  const button = sections[kind] && document.getElementById(`${sections[kind]}-button`);
  if (button && button.getAttribute('aria-selected') !== 'true') {
    button.click();
    let tries = 0;  // the section's parts come onto the page a few frames after the click
    // and the section shown before goes a few frames later: a scroll made while both were on the page was clamped
    // when the page shrank, past the plot; so it scrolls again for a few frames after the plot came
    const settle = (n) => { if (n > 0) requestAnimationFrame(() => { scroll(); settle(n - 1); }); };
    const wait = () => {
      if (scroll()) settle(20);
      else if (++tries < 60) requestAnimationFrame(wait);
    };
    requestAnimationFrame(wait);
  } else {
    scroll();
  }
  return value;
}
