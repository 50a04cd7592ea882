// The head table (viz.heads.table), as gr.HTML's js_on_load. A header sorts the table (click, Enter or Space):
// ascending first, then descending; numbers by value, a dash ("no value") last either way; a new table (a new run)
// comes unsorted. A row (click, Enter or Space) picks its head: a `select` event whose value is the row's data-head
// ('kind:layer:head'), as a click in the grid does.
// (element, trigger) => void; element: the component, trigger: gradio's (event name, data) of js_on_load.
(element, trigger) => {
  const sortBy = th => {
    const table = th.closest('table'), body = table && table.tBodies[0];
    if (!body) return;
    const col = Array.from(th.parentNode.children).indexOf(th);
    const dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
    table.querySelectorAll('thead th').forEach(h => h.setAttribute('aria-sort', 'none'));
    th.setAttribute('aria-sort', dir);
    const sign = dir === 'ascending' ? 1 : -1;
    const rows = Array.from(body.rows).map((tr, i) => {
      const t = ((tr.children[col] || {}).textContent || '').trim(), n = parseFloat(t);
      return {tr, i, t, n: Number.isFinite(n) ? n : null};
    });
    const numeric = rows.some(r => r.n !== null);
    rows.sort((a, b) => {
      if (!numeric) return sign * a.t.localeCompare(b.t) || a.i - b.i;
      if (a.n === null || b.n === null) return (a.n === null) - (b.n === null) || a.i - b.i;
      return sign * (a.n - b.n) || a.i - b.i;
    });
    rows.forEach(r => body.appendChild(r.tr));
  };
  const pick = tr => {
    tr.closest('tbody').querySelectorAll('tr[aria-selected]').forEach(r => r.removeAttribute('aria-selected'));
    tr.setAttribute('aria-selected', 'true');
    trigger('select', {index: tr.sectionRowIndex, value: tr.dataset.head});
  };
  const act = target => {
    const th = target.closest('thead th'), tr = target.closest('tbody tr[data-head]');
    if (th) sortBy(th);
    else if (tr) pick(tr);
    return Boolean(th || tr);
  };
  element.addEventListener('click', e => act(e.target));
  element.addEventListener('keydown', e => {
    if ((e.key === 'Enter' || e.key === ' ') && act(e.target)) e.preventDefault();
  });
}
