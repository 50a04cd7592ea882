"""The page's look on every screen: CSS for narrow screens and for plots off screen, and the plots restyled in
the browser for the dark theme (?__theme=dark) and for phones. Figures are built once on the server for every
visitor, so what depends on the visitor's screen is applied where plotly draws them (downloads.PLOTLY_JS calls
window.__attentionTheme)."""

from collections.abc import Iterable

import gradio as gr

OFF_SCREEN = "off-screen"
UNTIL_DRAWN = "until-drawn"
HEADS_GRID = "heads-grid"


# Rows of plots stack on a phone (each plot gets the full width); the hidden boxes that carry plot clicks to the
# server (views_panel) stay out of sight.
# Inside one head (viz.attention.inside_head_view): vectors as rows of small squares, tables that scroll within
# themselves rather than widen the page on a phone. On a phone the heads to switch off (72 of them) scroll in a box,
# as the head table does, and each tab's example inputs in one row that scrolls sideways, so that the result of a
# click comes on the screen of its button.
# Plots skipped off screen (skip_off_screen): the browser lays them out and paints them only near the screen.
# Plots that wait for the visitor (waiting_plot) are left out of the page until they have a figure.
# The heads' grid (HEADS_GRID) has narrow cells (thirteen columns of six decimals fit at 1440 px) and its layer
# names stay in sight while a phone scrolls the heads sideways (gradio 6's pinned_columns draws no pin).
CSS = (
    f".{OFF_SCREEN} {{ content-visibility: auto; contain-intrinsic-size: auto 450px; }}"
    f'.{UNTIL_DRAWN}:has(.empty[aria-label="Empty value"]) {{ display: none !important; }}'
    + """
.views-hidden { display: none !important; }
.heads-grid td, .heads-grid th { padding-left: 0 !important; padding-right: 0 !important; }
.heads-grid .cell-wrap { padding-left: 6px !important; padding-right: 6px !important; }
.heads-grid .first-column { position: sticky; left: 0; z-index: 2; background: var(--background-fill-primary); }
.inside-head .ih-vec { display: flex; flex-wrap: wrap; align-items: center; gap: 2px; margin: 2px 0; }
.inside-head .ih-name { min-width: 7em; margin-right: 6px; font-size: 0.85em; overflow-wrap: anywhere; }
.inside-head .ih-cell { display: inline-block; width: 14px; height: 14px; border-radius: 2px;
  border: 1px solid rgba(127, 127, 127, 0.35); }
.inside-head table { display: block; max-width: 100%; overflow-x: auto; }
.inside-head td, .inside-head th { white-space: nowrap; font-variant-numeric: tabular-nums; }
.inside-head .ih-formula, .inside-head .ih-sum { overflow-wrap: anywhere; }
@media (max-width: 720px) {
  .plot-row, .view-options { flex-direction: column !important; flex-wrap: nowrap !important; }
  .plot-row > *, .view-options > * { min-width: 100% !important; width: 100% !important; }
  #sentiment-examples .gallery, #translation-examples .gallery, #lm-examples .gallery { flex-wrap: nowrap;
    overflow-x: auto; }
  #sentiment-examples .gallery-item, #translation-examples .gallery-item, #lm-examples .gallery-item {
    flex: 0 0 auto; max-width: 85%; }
}
@media (max-width: 480px) {  /* the three tabs' buttons in one row on a phone, none folded into gradio's '...' menu */
  .tab-wrapper button, .tab-container button { padding: 0 6px !important; font-size: 12.5px !important;
    min-width: 0 !important; }
  .heads-off .wrap:has(label) { gap: 4px !important; max-height: 21rem; overflow-y: auto; }  /* a half row shows */
  .heads-off label { padding: 4px 6px !important; font-size: 12px !important; }
}
"""
)

# window.__attentionTheme(gd, data, layout) -> [data, layout]: copies, restyled for a dark page (light text,
# transparent panels, a colour ramp that starts dark) and for a narrow plot (smaller fonts and label margins, the
# colour bar thinner). The figures' fixed margins were sized for 10 px labels: they shrink with the font.
THEME_JS = """
(() => {
  if (window.__attentionTheme) return;
  const DARK_BLUES = [[0, '#0f172a'], [0.2, '#1e3a8a'], [0.55, '#3b82f6'], [1, '#dbeafe']];
  const first = cs => String(((Array.isArray(cs) && cs[0]) || [])[1]).replace(/ /g, '');
  const blues = cs => cs === 'Blues' || first(cs) === 'rgb(247,251,255)';  // plotly.py sends the named scale spelt out
  const axes = l => Object.keys(l).filter(k => /^[xy]axis\\d*$/.test(k));
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
"""


def skip_off_screen(demo: gr.Blocks, keep: Iterable[str]) -> None:
    """Call once every plot of `demo` is laid out: each plot but those whose elem_id is in `keep` (a tab's first
    heatmap) gets the class OFF_SCREEN, whose layout and paint the browser skips while it is off screen. Plotly
    still draws it when its figure comes; the frame that shows a click's first heatmap no longer also lays out
    and paints the dozen plots nobody sees yet (benchmarks/RESULTS.md, "Click to drawn heatmap")."""
    keep = set(keep)
    for block in demo.blocks.values():
        if isinstance(block, gr.Plot) and block.elem_id not in keep:
            block.elem_classes = [*(block.elem_classes or []), OFF_SCREEN]


def waiting_plot(elem_id: str) -> gr.Plot:
    """A plot that waits for the visitor (a token to focus on, a head to open, a second review to compare): left out
    of the page while it has no figure, where the text or button above it says what will come. Under the worked
    example a first visit showed five blank boxes. Only for these: a plot every run fills keeps its place, or the
    page would jump under the pointer when it came."""
    return gr.Plot(show_label=False, elem_id=elem_id, elem_classes=[UNTIL_DRAWN])
