// A section opened (viz.page.layout TaskPage.opens): open the accordion it holds too, as a click on its label does,
// so that what the accordion does on opening (inside one head records the heads) comes with the one click. In the
// browser, not as a server event: an event's output that is a layout block made gradio copy it, children and all,
// at every progress change (tests/app/test_hosting.py).
// (id) => () => void; id: the accordion's elem_id.
(id) => () => {
  let tries = 0;  // a section's parts come onto the page a few frames after it is opened
  const open = () => {
    const label = document.querySelector(`#${id} .label-wrap`);
    if (!label) { if (++tries < 120) requestAnimationFrame(open); return; }
    if (!label.classList.contains('open')) label.click();
  };
  requestAnimationFrame(open);
}
