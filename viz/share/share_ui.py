"""Share and download controls of the tabs, wired into the Gradio app.

app.py calls share_controls() where the buttons go, then wire_*_links() with the tab's components. Opening a link
fills the tab's inputs and presses its own button, so a link runs exactly what a click runs (prediction,
explanation, heads, plots) and opens the view a click would give. The logic lives elsewhere: viz.share.links (URLs),
viz.share.downloads (files), viz.page.landing (the button pressed).
"""

from dataclasses import dataclass

import gradio as gr

from ..inputs import step_chosen, step_shown
from ..models import training_step
from ..page import landing
from ..page.scripts import script
from ..server.events import FOLLOW_UP, PRIVATE
from ..translation.handlers import step_slider, translation_step
from . import downloads, export_store, links


@dataclass
class ShareControls:
    share: gr.Button
    link: gr.Textbox
    download: gr.Button
    file: gr.Textbox  # hidden: the address of the last export (export_store.export_url), for the page to fetch


def share_controls(task: str) -> ShareControls:
    """'Copy link' and 'Download data' buttons with the link box and the file they fill (elem_ids
    '{task}-share', '{task}-download', '{task}-share-link', '{task}-download-file')."""
    with gr.Row():
        share = gr.Button("🔗 Copy link to this view", size="sm", elem_id=f"{task}-share")
        download = gr.Button("⬇ Download data (JSON)", size="sm", elem_id=f"{task}-download")
    link = gr.Textbox(  # shown once there is a link (or the reason there is none): an empty box said nothing
        label="Link to this view",
        interactive=False,
        buttons=["copy"],
        max_lines=3,
        visible=False,
        elem_id=f"{task}-share-link",
    )
    file = gr.Textbox(visible=False, elem_id=f"{task}-download-file")
    return ShareControls(share, link, download, file)


def _link_box(url: str | None, message: str) -> gr.Textbox:
    return gr.Textbox(value=url or f"⚠️ {message}", info=message if url else None, visible=True)


def _file(path: str | None, message: str) -> str:
    """The export's address for the page to fetch ('' and a toast with the message when there is none)."""
    if path is None:
        gr.Warning(message)
        return ""
    return export_store.export_url(path)


def _wire_buttons(controls: ShareControls, share_fn, share_inputs, download_fn, download_inputs) -> None:
    # the browser knows the page's own address (on a Space: the *.hf.space one); Python builds the rest
    shared = controls.share.click(
        share_fn, [controls.link, *share_inputs], [controls.link], js=script("with_page_address.js"), **PRIVATE
    )
    shared.then(None, [controls.link], None, js=script("copy_link.js"), **PRIVATE)
    exported = controls.download.click(download_fn, download_inputs, [controls.file], **PRIVATE)
    exported.then(None, [controls.file], None, js=script("save_download.js"), **PRIVATE)


def _choice(value: int | None, radio: gr.Radio, name: str, ignored: list[str]):
    """A 0-based layer or head from a link if the radio offers it, else no change (and `name` noted in ignored)."""
    if value is not None and 0 <= value < len(radio.choices):
        return value
    if value is not None:
        ignored.append(name)
    return gr.skip()


def _warn_ignored(ignored: list[str]) -> None:
    """A toast naming the link's values that were replaced by defaults (a link typed or cut by hand)."""
    notice = links.ignored_notice(ignored)
    if notice:
        gr.Warning(notice)


def _link(request: gr.Request | None, task: str) -> links.ViewLink | None:
    link = links.from_query(dict(request.query_params)) if request else None
    return link if link is not None and link.tab == task else None


def _model_and_step(models, link: links.ViewLink, ignored: list[str]) -> list:
    """The updates that put a tab at a link's model and training step: the model choice, the training-step slider,
    its text; nothing changes where the link names neither (or nothing usable)."""
    model, position, bad = training_step.from_link(models, link.model, link.training_step)
    ignored += bad
    if model is None and position is None:
        return [gr.skip(), gr.skip(), gr.skip()]
    return [model or gr.skip(), *training_step.reset(models, model, position)]


def wire_sentiment_links(
    demo, models, controls: ShareControls, *, review, choice, step, layer, head, method, scale, hide, layers
) -> None:
    """Copy link, download (by the model shown: the chosen model of the tab's ModelRegistry `models`, at the
    training step `step`'s snapshot), and opening a link: it fills the review, model, training step, layer, head,
    explanation method, colour scale and hidden tokens, then presses 'Analyse sentiment' (#sentiment-submit).
    layers: the tab's Layer by layer section (a link from a view it was read on reads the linked one too)."""

    def share(base, text, layer, head, method, scale, hide, name, position, read=None):
        model, snapshot = training_step.to_link(models, name, position)
        link = links.ViewLink(
            "sentiment", text or "", layer, head, method=method, scale=scale, hide=bool(hide), model=model,
            training_step=snapshot, layers=read is not None,
        )  # fmt: skip
        return _link_box(*links.share_url(base, link))

    def download(text, name, position, method):
        pipe = models.get(training_step.chosen(models, name, position))
        chosen = method if method in (getattr(pipe, "explanation_methods", None) or ()) else None
        return _file(*downloads.sentiment_download(pipe, text, chosen))

    shown = [review, layer, head, method, scale, hide, choice, step.slider, layers.read]
    _wire_buttons(controls, share, shown, download, [review, choice, step.slider, method])
    methods = [value for _, value in method.choices]

    def restore(request: gr.Request):
        link = _link(request, "sentiment")
        if link is None:
            return [gr.skip()] * 9
        ignored = list(link.ignored)
        chosen = link.method if link.method in methods else gr.skip()
        ignored += ["method"] if link.method and link.method not in methods else []
        controls = _choice(link.layer, layer, "layer", ignored), _choice(link.head, head, "head", ignored)
        model_and_step = _model_and_step(models, link, ignored)
        _warn_ignored(ignored)
        return link.text, *controls, chosen, link.scale or gr.skip(), link.hide or gr.skip(), *model_and_step

    restored = [review, layer, head, method, scale, hide, choice, step.slider, step.info]
    landing.press_for_link(demo.load(restore, None, restored, **PRIVATE), "sentiment")


def wire_translation_links(
    demo, models, controls: ShareControls, *, german, decoding, beam, layer, head, scale, hide, state, drawn, step,
    training, choice, layers
):  # fmt: skip
    """As wire_sentiment_links for the translation tab (decoding and beam size too); a link's decoding step is
    applied once the run it starts is drawn (`drawn`). step: the decoding-step slider and the two plots it drives;
    training: the training-step slider and its text; choice: the model choice; layers: the Layer by layer section."""

    def share(base, text, decoding, beam, layer, head, scale, hide, step, name, position, read=None):
        model, snapshot = training_step.to_link(models, name, position)
        link = links.ViewLink(
            "translation", text or "", layer, head, step_chosen(step), decoding, beam, scale=scale, hide=bool(hide),
            model=model, training_step=snapshot, layers=read is not None,
        )  # fmt: skip
        return _link_box(*links.share_url(base, link))

    def download(text, decoding, beam, name, position):
        pipe = models.get(training_step.chosen(models, name, position))
        return _file(*downloads.translation_download(pipe, text, decoding, beam))

    shown = [german, decoding, beam, layer, head, scale, hide, step[0], choice, training.slider, layers.read]
    _wire_buttons(controls, share, shown, download, [german, decoding, beam, choice, training.slider])
    pending_step = gr.State(None)

    def restore(request: gr.Request):
        link = _link(request, "translation")
        if link is None:
            return [gr.skip()] * 11
        ignored = list(link.ignored)
        chosen_beam = link.beam if link.beam is not None and beam.minimum <= link.beam <= beam.maximum else gr.skip()
        ignored += ["beam"] if link.beam is not None and chosen_beam is not link.beam else []
        controls = _choice(link.layer, layer, "layer", ignored), _choice(link.head, head, "head", ignored)
        model_and_step = _model_and_step(models, link, ignored)
        _warn_ignored(ignored)
        decoding_value = link.decoding or gr.skip()
        hidden = link.hide or gr.skip()
        shown = link.text, decoding_value, chosen_beam, *controls, link.scale or gr.skip(), hidden, link.step
        return *shown, *model_and_step

    restored = [german, decoding, beam, layer, head, scale, hide, pending_step, choice, training.slider, training.info]
    landing.press_for_link(demo.load(restore, None, restored, **PRIVATE), "translation")
    drawn.then(_apply_step, [state, layer, pending_step], [*step, pending_step], **FOLLOW_UP)


def _apply_step(view, layer, pending: int | None):
    """Move the step slider (and its plots) to the step a link asked for, once; nothing otherwise."""
    if pending is None or view is None:
        return gr.skip(), gr.skip(), gr.skip(), None
    maximum = step_slider(view).maximum
    chosen = min(step_shown(pending), maximum)
    if chosen != step_shown(pending):  # a link made for a longer translation, or typed by hand
        gr.Warning(
            f"This link's step {step_shown(pending)} is past this translation's last step; step {maximum} is shown."
        )
    slider = gr.Slider(minimum=1, maximum=maximum, value=chosen, step=1, interactive=True)
    return slider, *translation_step(view, layer, chosen), None
