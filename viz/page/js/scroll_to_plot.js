// A thumbnail of the model view opened its head (value 'layer:head:kind'): bring the large plot of that kind of
// attention into view (viz.attention.views_panel), opening first the section that holds it (viz.page.layout: the
// translator's encoder and decoder plots sit in "Inside one head", off the page until that section is opened).
// (plots, sections) => (value) => value ('layer:head:kind#n'); plots: the elem_id of each kind's large plot; sections: the elem_id of the
// section holding it, for a kind whose plot is not in the main view.
(plots, sections) => (value) => {
  const kind = String(value || '').split('#')[0].split(':')[2];  // '#n': a click's count (plot_clicks.js)
  const scroll = () => {
    const plot = plots[kind] && document.getElementById(plots[kind]);
    if (plot) plot.scrollIntoView({block: 'start'});
    return Boolean(plot);
  };
  const button = sections[kind] && document.getElementById(`${sections[kind]}-button`);
  if (button && button.getAttribute('aria-selected') !== 'true') {
    button.click();
    let tries = 0;  // the section's parts come onto the page a few frames after the click
    const wait = () => { if (!scroll() && ++tries < 60) requestAnimationFrame(wait); };
    requestAnimationFrame(wait);
  } else {
    scroll();
  }
  return value;
}
