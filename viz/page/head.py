"""What the page carries besides its components: its theme (fonts), a little CSS, and scripts (the plotting library
loaded with the page, a slider's release by keyboard).

Both go to demo.launch() through viz.server.hosting.launch_options().
"""

import json
from pathlib import Path


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
    # The head table (viz.heads.handlers.HeadTable): scrolls inside its box, headers stay in view and sort it
    ".heads-table { max-height: 30rem; overflow: auto; }"
    " .heads-table table { border-collapse: collapse; font-size: var(--text-sm); font-variant-numeric: tabular-nums; }"
    " .heads-table th, .heads-table td { padding: 4px 10px; text-align: right; white-space: nowrap;"
    " border-bottom: 1px solid var(--border-color-primary); }"
    " .heads-table thead th { position: sticky; top: 0; z-index: 1; cursor: pointer; user-select: none;"
    " background: var(--background-fill-secondary); }"
    " .heads-table th[aria-sort=ascending]::after { content: ' ▲'; }"
    " .heads-table th[aria-sort=descending]::after { content: ' ▼'; }"
    # The prediction or translation a running model is about to replace (viz.server.hosting.first_view)
    " .gradio-container .block[aria-busy=true] { opacity: 0.55; cursor: progress; }"
    # A table's headers on a phone ("comprehensiveness") broke anywhere ("comprehensi / veness"): at syllables now
    " .gradio-container .prose th { hyphens: auto; overflow-wrap: normal; word-break: normal; }"
)


def _plotly_chunk() -> str | None:
    """The file name of gradio's plotly bundle (PlotlyPlot-<hash>.js) in its built front end, None if not found."""
    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    found = sorted(assets.glob("PlotlyPlot-*.js"))
    return found[0].name if found else None


# gradio's slider sends its `release` event on pointerup only, and its number box on blur: moved with the keyboard
# (arrows, Home, End, Page Up/Down), the training-step slider changed its text but not the model the tab runs, and a
# step typed in the number box with Enter showed "Step 0" beside the trained model's result until the visitor
# clicked elsewhere. A key that moves any slider now ends as a pointer's release would, and Enter or an arrow in a
# slider's number box as leaving it would (a slider with no release listener sends nothing).
KEYBOARD_RELEASE = (
    "<script>document.addEventListener('keyup', e => {"
    " const t = e.target;"
    " if (!(t instanceof HTMLInputElement)) return;"
    " if (t.type === 'range'"
    " && ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown'].includes(e.key))"
    " t.dispatchEvent(new PointerEvent('pointerup', {bubbles: true}));"
    " else if (t.type === 'number' && ['Enter', 'ArrowUp', 'ArrowDown'].includes(e.key)"
    " && t.closest('.block')?.querySelector('input[type=range]'))"
    " t.dispatchEvent(new FocusEvent('blur')); });</script>"
)


def head_html() -> str:
    """Scripts for the page's <head> (gradio adds them once its app has mounted): KEYBOARD_RELEASE, and one that
    imports the module gradio's plots import on their first figure (4.6 MB of plotly), so the first click draws at
    once instead of loading and compiling it then. The browser keeps one copy per URL, so gradio's own import later
    finds it ready. Without that file in gradio's front end, only the first."""
    chunk = _plotly_chunk()
    if chunk is None:
        return KEYBOARD_RELEASE
    return KEYBOARD_RELEASE + (
        "<script>(() => { const preload = () => {"
        " const app = document.querySelector('script[type=module][src*=\"/assets/index-\"]');"
        " if (!app || window.__plotlyPreload) return;"
        f" const url = new URL({json.dumps(chunk)}, app.src).href;"
        " window.__plotlyPreload = import(url).then(() => 'loaded', e => String(e)); };"
        # gradio adds this to the head after the page has loaded: then at once
        " if (document.readyState === 'complete') preload(); else window.addEventListener('load', preload); })();"
        "</script>"
    )
