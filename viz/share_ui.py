"""Share, download and compare controls of both tabs, wired into the Gradio app.

app.py calls share_controls() where the buttons go, then wire_*_links() and *_compare_panel() with the
tab's components. The model runs are the tab's own functions (passed in), so a link opens exactly the view a
click would give. The logic lives elsewhere: viz.links (URLs), viz.downloads (files), viz.compare (diffs).
"""

from dataclasses import dataclass

import gradio as gr

from . import compare, downloads, handlers, links
from .examples import contrast_pairs

PRIVATE = dict(api_visibility="private")
# The browser knows the page's own address (on a Space: the *.hf.space one); Python builds the rest.
BASE_JS = "(link, ...rest) => [window.location.origin + window.location.pathname, ...rest]"
COPY_JS = """(url) => {
  if (url && url.startsWith('http') && navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
  return url;
}"""
# A copy of the first input to edit, when the second box is still empty.
PREFILL_JS = "(first, second) => (second && second.trim()) ? second : first"
GERMAN_PAIRS = [  # (first, second, button label)
    ("Ein Mann fährt mit dem Fahrrad die Straße entlang.", "Eine Frau fährt mit dem Fahrrad die Straße entlang.",
     "Mann → Frau"),
    ("Zwei Hunde spielen im Schnee.", "Zwei Hunde spielen im Sand.", "Schnee → Sand"),
    ("Ein Kind springt in einen Pool.", "Ein Kind springt nicht in einen Pool.", "+ nicht"),
]  # fmt: skip


@dataclass
class ShareControls:
    share: gr.Button
    link: gr.Textbox
    download: gr.Button
    file: gr.File


def share_controls(task: str) -> ShareControls:
    """'Copy link' and 'Download data' buttons with the link box and the file they fill (elem_ids
    '{task}-share', '{task}-download', '{task}-share-link', '{task}-download-file')."""
    gr.HTML("", js_on_load=downloads.PLOT_BUTTONS_JS, container=False, padding=False, elem_classes=["plot-dl"])
    with gr.Row():
        share = gr.Button("🔗 Copy link to this view", size="sm", elem_id=f"{task}-share")
        download = gr.Button("⬇ Download data (JSON)", size="sm", elem_id=f"{task}-download")
    link = gr.Textbox(
        label="Link to this view", interactive=False, buttons=["copy"], max_lines=3, elem_id=f"{task}-share-link"
    )
    file = gr.File(label="Data", interactive=False, visible=False, elem_id=f"{task}-download-file")
    return ShareControls(share, link, download, file)


def _link_box(url: str | None, message: str) -> gr.Textbox:
    return gr.Textbox(value=url or f"⚠️ {message}", info=message if url else None)


def _file(path: str | None, message: str):
    if path is None:
        gr.Warning(message)
        return gr.File(value=None, visible=False)
    return gr.File(value=path, visible=True)


def _wire_buttons(controls: ShareControls, share_fn, share_inputs, download_fn, download_inputs) -> None:
    controls.share.click(share_fn, [controls.link, *share_inputs], [controls.link], js=BASE_JS, **PRIVATE).then(
        None, [controls.link], None, js=COPY_JS, **PRIVATE
    )
    click = downloads.CLICK_DOWNLOAD_JS % controls.file.elem_id
    controls.download.click(download_fn, download_inputs, [controls.file], **PRIVATE).then(
        None, [controls.file], None, js=click, **PRIVATE
    )


def _choice(value: int | None, radio: gr.Radio) -> int:
    """A 0-based layer or head from a link if the radio offers it, else the radio's current default."""
    return value if value is not None and 0 <= value < len(radio.choices) else radio.value


def select_tab_on_load(demo: gr.Blocks, tabs: gr.Tabs) -> None:
    """Open the tab a link names."""

    def selected(request: gr.Request):
        link = links.from_query(dict(request.query_params)) if request else None
        return gr.Tabs(selected=link.tab) if link else gr.skip()

    demo.load(selected, None, tabs, **PRIVATE)


def wire_sentiment_links(
    demo, pipe, controls: ShareControls, *, review, layer, head, mode, run, outputs, redraw, drawn
):
    """Copy link, download, and opening a link. run(text) -> values for `outputs` (state, label, status);
    redraw(state, layer, head, mode) -> values for `drawn` (the highlight and the plots)."""

    def share(base, text, layer, head, mode):
        return _link_box(*links.share_url(base, links.ViewLink("sentiment", text or "", layer, head, method=mode)))

    def download(text, mode):
        method = mode if mode in (getattr(pipe, "explanation_methods", None) or ()) else None
        return _file(*downloads.sentiment_download(pipe, text, method))

    _wire_buttons(controls, share, [review, layer, head, mode], download, [review, mode])
    modes = [value for _, value in mode.choices]
    n_out = len(outputs) + 4 + len(drawn)

    def restore(request: gr.Request):
        link = links.from_query(dict(request.query_params)) if request else None
        if link is None or link.tab != "sentiment":
            return [gr.skip()] * n_out
        results = run(link.text)
        chosen_layer, chosen_head = _choice(link.layer, layer), _choice(link.head, head)
        chosen_mode = link.method if link.method in modes else mode.value
        figures = redraw(results[0], chosen_layer, chosen_head, chosen_mode)
        return [*results, link.text, chosen_layer, chosen_head, chosen_mode, *figures]

    demo.load(restore, None, [*outputs, review, layer, head, mode, *drawn], **PRIVATE)


def wire_translation_links(
    demo, pipe, controls: ShareControls, *, german, decoding, beam, layer, head, step, run, outputs, redraw, drawn
):
    """As wire_sentiment_links for the translation tab; `drawn` ends with the step slider and its two plots,
    which a link's step moves to (run(text, decoding, beam); redraw(state, layer, head))."""

    def share(base, text, decoding, beam, layer, head, step):
        link = links.ViewLink("translation", text or "", layer, head, int(step or 1) - 1, decoding, beam)
        return _link_box(*links.share_url(base, link))

    def download(text, decoding, beam):
        return _file(*downloads.translation_download(pipe, text, decoding, beam))

    _wire_buttons(controls, share, [german, decoding, beam, layer, head, step], download, [german, decoding, beam])
    n_out = len(outputs) + 5 + len(drawn)

    def restore(request: gr.Request):
        link = links.from_query(dict(request.query_params)) if request else None
        if link is None or link.tab != "translation":
            return [gr.skip()] * n_out
        chosen_decoding = link.decoding or decoding.value
        chosen_beam = link.beam if link.beam is not None and beam.minimum <= link.beam <= beam.maximum else beam.value
        results = run(link.text, chosen_decoding, chosen_beam)
        chosen_layer, chosen_head = _choice(link.layer, layer), _choice(link.head, head)
        figures = list(redraw(results[0], chosen_layer, chosen_head))
        if link.step and results[0] is not None:
            slider = handlers.step_slider(results[0])
            chosen_step = min(link.step + 1, slider.maximum)
            figures[-3:] = [
                gr.Slider(minimum=1, maximum=slider.maximum, value=chosen_step, step=1, interactive=True),
                *handlers.translation_step(results[0], chosen_layer, chosen_step),
            ]
        inputs = [link.text, chosen_decoding, chosen_beam, chosen_layer, chosen_head]
        return [*results, *inputs, *figures]

    demo.load(restore, None, [*outputs, german, decoding, beam, layer, head, *drawn], **PRIVATE)


def _compare_outputs(task: str):
    output = gr.HTML(elem_id=f"{task}-compare-output")
    diff = gr.Plot(show_label=False, elem_id=f"{task}-compare-diff")
    return gr.State(None), output, diff


def _redraw_diff_on(layer, head, state, diff) -> None:
    for control in (layer, head):
        control.change(compare.diff_figure, [state, layer, head], [diff], **PRIVATE)


def sentiment_compare_panel(pipe, *, review, submit, layer, head) -> None:
    """A second review (a copy of the first to edit), both predictions side by side, the change in probability,
    and the aligned self-attention diff for the chosen layer and head; contrast pairs fill both boxes and run."""
    gr.Markdown(
        "### Compare two reviews\nChange a word or two and see what it does: both predictions, the change in "
        "probability, and for the chosen layer and head how attention moved over the tokens both reviews share."
    )
    second = gr.Textbox(
        label="Second review (click it for a copy of the first, then edit)",
        lines=3,
        max_lines=10,
        elem_id="sentiment-compare-input",
    )
    button = gr.Button("Compare", variant="secondary", elem_id="sentiment-compare-submit")
    pairs = contrast_pairs()
    examples = gr.Examples(
        examples=[[a, b] for a, b, _ in pairs],
        inputs=[review, second],
        example_labels=[f"{kind}: {a[:40]}" for a, _, kind in pairs],
        label="Contrast pairs (one click fills both reviews and compares them)",
        **PRIVATE,
    )
    state, output, diff = _compare_outputs("sentiment")

    def run(a, b, layer, head):
        return compare.compare_reviews(pipe, a, b, layer, head)

    for trigger in (second.focus, submit.click):
        trigger(None, [review, second], [second], js=PREFILL_JS, **PRIVATE)
    button.click(run, [review, second, layer, head], [state, output, diff], **PRIVATE)
    examples.load_input_event.then(run, [review, second, layer, head], [state, output, diff], **PRIVATE)
    _redraw_diff_on(layer, head, state, diff)


def translation_compare_panel(pipe, *, german, decoding, beam, layer, head) -> None:
    """A second German sentence, both translations side by side, and the aligned cross-attention diff."""
    gr.Markdown(
        "### Compare two sentences\nTranslate a second German sentence with the same decoding: both translations, "
        "and for the chosen layer and head how cross-attention moved over the tokens both share."
    )
    second = gr.Textbox(
        label="Second German sentence (click it for a copy of the first, then edit)",
        lines=2,
        max_lines=6,
        elem_id="translation-compare-input",
    )
    button = gr.Button("Compare", variant="secondary", elem_id="translation-compare-submit")
    examples = gr.Examples(
        examples=[[a, b] for a, b, _ in GERMAN_PAIRS],
        inputs=[german, second],
        example_labels=[label for _, _, label in GERMAN_PAIRS],
        label="Sentence pairs (one click fills both sentences and compares them)",
        **PRIVATE,
    )
    state, output, diff = _compare_outputs("translation")

    def run(a, b, decoding, beam, layer, head):
        return compare.compare_translations(pipe, a, b, decoding, beam, layer, head)

    second.focus(None, [german, second], [second], js=PREFILL_JS, **PRIVATE)
    inputs = [german, second, decoding, beam, layer, head]
    button.click(run, inputs, [state, output, diff], **PRIVATE)
    examples.load_input_event.then(run, inputs, [state, output, diff], **PRIVATE)
    _redraw_diff_on(layer, head, state, diff)
