"""The page's look on every screen: CSS for narrow screens and for plots off screen, and the plots restyled in
the browser for the dark theme (?__theme=dark) and for phones. Figures are built once on the server for every
visitor, so what depends on the visitor's screen is applied where plotly draws them (viz/page/js/plot_theme.js,
loaded with the page's head)."""

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
}
@media (max-width: 720px) {  /* a tab's sections (viz.page.layout): a long name wraps inside its button, not cut */
  .sections > .tab-wrapper, .sections > .tab-wrapper > .tab-container { height: auto !important; }
  .sections > .tab-wrapper > .tab-container button { white-space: normal !important; height: auto !important;
    min-height: 2.4em; line-height: 1.15 !important; padding: 4px 3px !important; font-size: 12px !important;
    flex: 1 1 0 !important; }
}
"""
)


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
