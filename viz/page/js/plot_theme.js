// window.__attentionTheme(gd, data, layout) -> [data, layout]: copies, restyled for a dark page (light text,
// transparent panels, a colour ramp that starts dark) and for a narrow plot (smaller fonts and label margins, the
// colour bar thinner). The figures' fixed margins were sized for 10 px labels: they shrink with the font.
// Figures are built once on the server for every visitor, so what depends on the visitor's screen is applied where
// plotly draws them: plotly_wrapper.js calls it. Loaded with the page's head (viz.page.html_head).
(() => {
  if (window.__attentionTheme) return;
  const DARK_BLUES = [[0, '#0f172a'], [0.2, '#1e3a8a'], [0.55, '#3b82f6'], [1, '#dbeafe']];
  const first = cs => String(((Array.isArray(cs) && cs[0]) || [])[1]).replace(/ /g, '');
  const blues = cs => cs === 'Blues' || first(cs) === 'rgb(247,251,255)';  // plotly.py sends the named scale spelt out
  const axes = l => Object.keys(l).filter(k => /^[xy]axis\d*$/.test(k));
  const font = (o, k) => (o[k] = Object.assign({}, o[k]));  // o[k] as an object of its own, to change
  const darken = (data, l) => {
    font(l, 'font').color = '#e5e7eb';
    l.paper_bgcolor = l.plot_bgcolor = 'rgba(0,0,0,0)';
    l.hoverlabel = Object.assign({}, l.hoverlabel, {bgcolor: '#1f2937', font: {color: '#f9fafb'}});
    if (l.title && l.title.subtitle) font(l.title.subtitle, 'font').color = '#9ca3af';
    axes(l).forEach(k => Object.assign(l[k], {gridcolor: '#374151', zerolinecolor: '#4b5563', linecolor: '#4b5563'}));
    (l.annotations || []).forEach(a => { if (a.bgcolor) a.bgcolor = 'rgba(17,24,39,0.85)'; });
    if (l.coloraxis && blues(l.coloraxis.colorscale)) l.coloraxis.colorscale = DARK_BLUES;
    return data.map(t => blues(t.colorscale) ? Object.assign({}, t, {colorscale: DARK_BLUES}) : t);
  };
  // Lines of at most `most` characters, broken at spaces outside HTML tags.
  const wrap = (text, most) => String(text).split(/ (?![^<]*>)/).reduce((lines, word) => {
    const last = lines[lines.length - 1];
    const plain = (last + ' ' + word).replace(/<[^>]*>/g, '');
    if (last && plain.length > most) lines.push(word); else lines[lines.length - 1] = last ? last + ' ' + word : word;
    return lines;
  }, ['']);
  // The title below the tool bar (the top 30 px; plotly sets the text a little above its pad), wrapped to the
  // plot's width; the plot grows as much as the title block does, so the plot area keeps its size.
  const fitTitle = (l, width) => {
    const t = l.title;
    if (!t || !t.text) return;
    let extra = 0;
    if (t.yref !== 'container') {
      Object.assign(t, {yref: 'container', y: 1, yanchor: 'top', pad: Object.assign({}, t.pad, {t: 40})});
      extra += 36;
    }
    const size = (t.font && t.font.size) || 17;
    const lines = wrap(t.text, Math.max(12, Math.floor((width - 24) / (size * 0.56))));
    t.text = lines.join('<br>');
    extra += (lines.length - 1) * Math.round(size * 1.3);
    if (t.subtitle && t.subtitle.text) {
      const sub = wrap(t.subtitle.text, Math.max(12, Math.floor((width - 24) / 5.8)));
      t.subtitle.text = sub.join('<br>');
      extra += (sub.length - 1) * 13;
    }
    l.margin = Object.assign({t: 80}, l.margin);
    l.margin.t += extra;
    if (l.height) l.height += extra;
  };
  const shrink = (data, l, width) => {
    const f = width < 420 ? 0.7 : 0.82;
    if (l.title && l.title.font) l.title.font.size = Math.round(l.title.font.size * f + 2);
    if (l.title && l.title.subtitle) font(l.title.subtitle, 'font').size = 10;
    fitTitle(l, width);
    if (l.margin) ['l', 'b', 'r'].forEach(s => { if (l.margin[s] > 40) l.margin[s] = Math.round(l.margin[s] * f); });
    // margins for the tick labels actually shown (the server sized them for the longest token at 10 px)
    const longest = ax => Math.max(0, ...(ax && ax.ticktext ? ax.ticktext : []).map(t => String(t).length));
    const fontOf = ax => Math.max(7, Math.round((((ax || {}).tickfont || {}).size || 10) * f));
    if (l.margin && l.yaxis && l.yaxis.ticktext && !l.yaxis2) {
      l.margin.l = Math.min(l.margin.l, Math.round(longest(l.yaxis) * fontOf(l.yaxis) * 0.62 + 26));
    }
    if (l.margin && l.xaxis && l.xaxis.ticktext && !l.xaxis2) {
      l.margin.b = Math.min(l.margin.b, Math.round(longest(l.xaxis) * fontOf(l.xaxis) * 0.62 * 0.87 + 30));
    }
    const px = width - (l.margin ? (l.margin.l || 0) + (l.margin.r || 0) : 0);
    axes(l).forEach(k => {
      const ax = l[k], share = ax.domain ? ax.domain[1] - ax.domain[0] : 1, room = k[0] === 'x' ? 14 : 11;
      const most = Math.max(2, Math.floor(px * share / room));  // labels that fit side by side
      if (k[0] === 'x' && ax.tickvals && ax.tickvals.length > most) {
        const every = Math.ceil(ax.tickvals.length / most);
        ax.tickvals = ax.tickvals.filter((_, i) => i % every === 0);
        if (ax.ticktext) ax.ticktext = ax.ticktext.filter((_, i) => i % every === 0);
      }
      const tick = font(l[k], 'tickfont');
      tick.size = Math.max(7, Math.round((tick.size || 10) * f));
      if (l[k].title && l[k].title.text) font(l[k].title, 'font').size = 10;
    });
    // a narrow colour bar: thin, its title turned along it (a title across it took a quarter of a phone's width)
    const bar = cb => cb.orientation === 'h' ? cb
      : Object.assign({}, cb, {thickness: 8, xpad: 4, title: Object.assign({}, cb.title, {side: 'right'})});
    if (l.coloraxis && l.coloraxis.colorbar) l.coloraxis.colorbar = bar(l.coloraxis.colorbar);
    return data.map(t => t.colorbar ? Object.assign({}, t, {colorbar: bar(t.colorbar)}) : t);
  };
  window.__attentionTheme = (gd, data, layout) => {
    const dark = document.querySelector('.dark') !== null;
    // the plot's own width only on a small window: reading it makes the browser lay out the page first
    const small = window.innerWidth < 720;
    const width = small ? (gd.parentElement || gd).clientWidth || window.innerWidth : window.innerWidth;
    const narrow = width > 0 && width < 560;
    if (!dark && !narrow) return [data, layout];
    let l = JSON.parse(JSON.stringify(layout || {}));
    let d = data || [];
    if (dark) d = darken(d, l);
    if (narrow) d = shrink(d, l, width);
    return [d, l];
  };
})();
