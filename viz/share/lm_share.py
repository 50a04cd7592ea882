"""The Next word tab's share link and download (as viz.share.share_ui's for the other tabs).

A link carries the prompt, the chat checkbox, the decoding options (the seed of a sampled continuation: the one typed,
else the one drawn for the continuation on screen), the model and training step, layer, head, explanation method,
colour scale, hidden tokens and the step slider's step; opening it fills them in and presses *Generate*
(#lm-submit), and the step is applied once that run is drawn.
"""

from types import SimpleNamespace

import gradio as gr

from pipelines.tasks import LM

from ..attention import task_views
from ..inputs import MAX_PROMPT_CHARS, check_text, step_chosen, step_shown
from ..models import training_step
from ..next_word import handlers as lm
from ..page import landing
from ..server.events import FOLLOW_UP
from . import downloads, links
from .share_ui import (
    PRIVATE,
    ShareControls,
    _choice,
    _file,
    _link_box,
    _model_and_step,
    _warn_ignored,
    _wire_buttons,
)


def seed_shown(view, prompt, decoding, seed):
    """The seed to share or export: the one typed, else (sampled) the one drawn for the continuation on screen when
    it is this prompt's; None for greedy decoding."""
    if decoding != "sampled":
        return None
    if seed is not None and seed != "":
        return seed
    result = getattr(view, "result", None)
    if result is None or result.temperature <= 0:
        return None
    return result.seed if check_text(prompt, MAX_PROMPT_CHARS, "prompt").text == view.text else None


def share_link(base, models, view, text, decoding, temperature, top_p, seed, max_new, chat, layer, head, step,
               method, scale, hide, name, position, read=None):  # fmt: skip
    """(the link box) for the view on screen."""
    model, snapshot = training_step.to_link(models, name, position)
    sampled = decoding == "sampled"
    link = links.ViewLink(
        LM.name, text or "", layer, head, None if view is None else step_chosen(step), decoding, method=method,
        scale=scale, hide=bool(hide), model=model, training_step=snapshot,
        temperature=float(temperature) if sampled and temperature is not None else None,
        top_p=float(top_p) if sampled and top_p is not None else None,
        seed=seed_shown(view, text, decoding, seed),
        max_new_tokens=None if max_new in (None, lm.DEFAULT_NEW_TOKENS) else int(max_new), chat=bool(chat),
        layers=read is not None,
    )  # fmt: skip
    return _link_box(*links.share_url(base, link))


def download(models, view, prompt, decoding, temperature, top_p, seed, max_new, chat, name, position, method):
    """The JSON export of this prompt's continuation (pipelines.export.lm_record), by the model shown."""
    seed = seed_shown(view, prompt, decoding, seed)
    chosen, error = lm.decoding_options(decoding, temperature, top_p, seed, max_new, chat)
    if error:
        return _file(None, error)
    pipe = models.get(training_step.chosen(models, name, position))
    method = method if method in (getattr(pipe, "explanation_methods", None) or ()) else None
    return _file(*downloads.download(LM.name, pipe, prompt, decoding=chosen, method=method))


def _in_range(value, slider: gr.Slider, name: str, ignored: list[str]):
    """A link's value for a slider if the slider offers it, else no change (and `name` noted in ignored)."""
    if value is None:
        return gr.skip()
    if slider.minimum <= value <= slider.maximum:
        return value
    ignored.append(name)
    return gr.skip()


def restore(models, link: links.ViewLink | None, i: SimpleNamespace, v: SimpleNamespace, method: gr.Radio) -> list:
    """The values a link puts in the tab (restored_components' order); every one a skip when there is no link."""
    if link is None:
        return [gr.skip()] * 16
    ignored = list(link.ignored)
    methods = [value for _, value in method.choices]
    chosen = link.method if link.method in methods else gr.skip()
    ignored += ["method"] if link.method and link.method not in methods else []
    options = [
        _in_range(link.max_new_tokens, i.max_new, "number of new tokens", ignored),
        _in_range(link.temperature, i.temperature, "temperature", ignored),
        _in_range(link.top_p, i.top_p, "top-p", ignored),
        gr.skip() if link.seed is None else link.seed,
    ]
    layer_head = _choice(link.layer, v.layer, "layer", ignored), _choice(link.head, v.head, "head", ignored)
    model_and_step = _model_and_step(models, link, ignored)
    _warn_ignored(ignored)
    return [link.text, link.chat or gr.skip(), link.decoding or gr.skip(), *options, *layer_head, chosen,
            link.scale or gr.skip(), link.hide or gr.skip(), link.step, *model_and_step]  # fmt: skip


def restored_components(i, v, choice, method, pending) -> list:
    """What opening a link fills in, in restore's order."""
    return [i.prompt, i.chat, i.decoding, i.max_new, i.temperature, i.top_p, i.seed, v.layer, v.head, method,
            v.scale, v.hide, pending, choice, v.snapshot.slider, v.snapshot.info]  # fmt: skip


def apply_step(view, layer, head, scale, hide, pending: int | None):
    """Move the step slider (and the heatmap, the top-10 and the small multiples) to the step a link asked for,
    once; nothing otherwise."""
    if pending is None or view is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip(), None
    n = len(view.steps)
    chosen = min(step_shown(pending), n)
    if chosen != step_shown(pending):  # a link made for a longer continuation, or typed by hand
        gr.Warning(f"This link's step {step_shown(pending)} is past this continuation's last step; step {n} is shown.")
    slider = gr.Slider(**{**lm.step_slider_value(view), "value": chosen})
    heatmap, top = lm.show_step(view, layer, head, chosen, scale, hide)
    return slider, heatmap, top, task_views.overview(view, layer, scale, hide), None


def wire_lm_links(demo, models, controls: ShareControls, *, i, v, choice, method, state, drawn, layers):
    """Copy link and download (by the model shown: the choice at the training step's snapshot), and opening a link
    (restore); i: the tab's inputs, v: its views (viz.next_word.tab: LMInputs, LMViews). Returns the event that moves
    the step slider to the link's step (the explanation panel explains that step after it)."""
    options = [i.decoding, i.temperature, i.top_p, i.seed, i.max_new, i.chat]
    shown = [state, i.prompt, *options, v.layer, v.head, v.step, method, v.scale, v.hide, choice, v.snapshot.slider,
             layers.read]  # fmt: skip
    _wire_buttons(
        controls,
        lambda base, *values: share_link(base, models, *values),
        shown,
        lambda *values: download(models, *values),
        [state, i.prompt, *options, choice, v.snapshot.slider, method],
    )
    pending = gr.State(None)

    def restore_link(request: gr.Request):
        link = links.from_query(dict(request.query_params)) if request else None
        return restore(models, link if link is not None and link.tab == LM.name else None, i, v, method)

    restored = restored_components(i, v, choice, method, pending)
    landing.press_for_link(demo.load(restore_link, None, restored, **PRIVATE), LM.name)
    step_outputs = [v.step, v.single, v.next_plot, v.overview, pending]
    return drawn.then(apply_step, [state, v.layer, v.head, v.scale, v.hide, pending], step_outputs, **FOLLOW_UP)
