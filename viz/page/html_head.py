"""What the page carries besides its components: its theme (fonts), a little CSS, and the scripts of its <head>
(viz/page/js: the plots' theme and download buttons, the plotting library loaded with the page, a slider's release by
keyboard).

Both go to demo.launch() through viz.server.hosting.launch_options().
"""

from pathlib import Path

from . import scripts


def theme():
    """gradio's default theme with Source Sans Pro's regular (400) and bold (700) faces. The default declares
    regular and semibold (600), but gradio 6.31's SourceSansPro-SemiBold.woff2 holds 55 glyphs ("A", "B", ...):
    every semibold or bold word (labels, buttons, **bold** in Markdown) was drawn in another, wider font but for
    its capitals A and B ("Attention" read "A" + "ttention" in two fonts). Its bold file is whole (1,615 glyphs),
    and a weight of 600 asked for is drawn with the 700 face when no 600 face is declared."""
    import gradio as gr

    font = gr.themes.LocalFont("Source Sans Pro", weights=(400, 700))
    return gr.themes.Default(font=[font, "ui-sans-serif", "system-ui", "sans-serif"])


CSS = (
    # The head table (viz.heads.table.HeadTable): scrolls inside its box, headers stay in view and sort it, a row
    # picks its head (the one picked outlined)
    ".heads-table { max-height: 30rem; overflow: auto; }"
    " .heads-table table { border-collapse: collapse; font-size: var(--text-sm); font-variant-numeric: tabular-nums; }"
    " .heads-table th, .heads-table td { padding: 4px 10px; text-align: right; white-space: nowrap;"
    " border-bottom: 1px solid var(--border-color-primary); }"
    " .heads-table thead th { position: sticky; top: 0; z-index: 1; cursor: pointer; user-select: none;"
    " background: var(--background-fill-secondary); }"
    " .heads-table th[aria-sort=ascending]::after { content: ' ▲'; }"
    " .heads-table th[aria-sort=descending]::after { content: ' ▼'; }"
    " .heads-table tbody tr { cursor: pointer; }"
    " .heads-table tbody tr[aria-selected=true] { outline: 2px solid var(--color-accent); outline-offset: -2px; }"
    # The prediction or translation a running model is about to replace (viz.server.hosting.first_view)
    " .gradio-container .block[aria-busy=true] { opacity: 0.55; cursor: progress; }"
    # A table's headers on a phone ("comprehensiveness") broke anywhere ("comprehensi / veness"): at syllables now
    " .gradio-container .prose th { hyphens: auto; overflow-wrap: normal; word-break: normal; }"
    # The Learn tab (viz.learn): the model's map (parts as buttons, the current one lit), the step's code and check
    " .learn-map { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px; }"
    " .learn-map-title { font-size: var(--text-sm); margin-bottom: 6px; }"
    " .learn-flow, .learn-blocks-parts { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; }"
    " .learn-blocks { border: 1px dashed var(--border-color-primary); border-radius: 8px; padding: 6px; }"
    " .learn-blocks-title { font-size: var(--text-sm); font-weight: 700; margin-bottom: 4px; }"
    " .learn-part { display: inline-flex; flex-direction: column; align-items: flex-start; text-align: left;"
    " padding: 4px 8px; border-radius: 6px; border: 1px solid var(--border-color-primary);"
    " background: var(--background-fill-secondary); color: var(--body-text-color); font: inherit; max-width: 100%; }"
    " .learn-part small { font-size: var(--text-xs); opacity: 0.8; overflow-wrap: anywhere; }"
    " button.learn-part { cursor: pointer; }"
    " button.learn-part:hover, button.learn-part:focus-visible { outline: 2px solid var(--color-accent); }"
    " .learn-part.is-current { background: var(--color-accent); color: white; border-color: var(--color-accent); }"
    " .learn-arrow { opacity: 0.6; }"
    " .learn-nav { align-items: center; flex-wrap: nowrap; }"
    " #learn-progress { text-align: center; flex: 1 1 auto; }"
    " .learn-heading { margin: 0.4em 0 0.2em; }"
    " .learn-prose { max-width: 60em; line-height: 1.5; }"
    " .learn-term { text-decoration: underline dotted; cursor: help; }"
    " .learn-code-where { font-weight: 700; margin: 1.6em 0 4px; overflow-wrap: anywhere; }"
    " .learn-code-lines { overflow-x: auto; max-width: 100%; font-size: var(--text-sm); padding: 8px;"
    " background: var(--background-fill-secondary); border-radius: 6px; margin: 0; }"
    " .learn-line-no { opacity: 0.55; user-select: none; }"
    " .learn-shapes, .learn-check-line, .learn-check-none { overflow-wrap: anywhere; }"
    " .learn-step > div { min-width: 0; }"
)


def _plotly_chunk() -> str | None:
    """The file name of gradio's plotly bundle (PlotlyPlot-<hash>.js) in its built front end, None if not found."""
    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    found = sorted(assets.glob("PlotlyPlot-*.js"))
    return found[0].name if found else None


def _script(source: str) -> str:
    return f"<script>\n{source}\n</script>"


def head_html() -> str:
    """Scripts for the page's <head> (gradio adds them before it draws the page's components): a slider's release by
    keyboard (keyboard_release.js), the plots' theme (plot_theme.js) and the wrapper that draws every figure with it
    and with download buttons (plotly_wrapper.js), and the import of the plotting library gradio's plots import on
    their first figure (preload_plotly.js; left out without that file in gradio's front end)."""
    steps = [scripts.script(name) for name in ("keyboard_release.js", "plot_theme.js", "plotly_wrapper.js")]
    chunk = _plotly_chunk()
    if chunk is not None:
        steps.append(scripts.call("preload_plotly.js", chunk) + ";")
    return "".join(_script(step) for step in steps)
