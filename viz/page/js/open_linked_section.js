// A link that restores a view kept in a section (viz.page.layout) opens that section, in the tab the link names,
// once the tab shows its sections: `?training_step=653` shows the training-step slider it set, not the section the
// tab opens on.
// (page, task, sections) => () => void; page: page_tools.js; sections: {link parameter: the section's elem_id}.
(page, task, sections) => () => {
  if (page.link().tab !== task) return;
  const q = new URLSearchParams(window.location.search);
  for (const [parameter, section] of Object.entries(sections)) {
    if (!q.has(parameter)) continue;
    const selected = button => button.getAttribute('aria-selected') === 'true';
    page.whenReady(`#${section}-button`, () => true, button => { if (!selected(button)) button.click(); });
    return;
  }
}
