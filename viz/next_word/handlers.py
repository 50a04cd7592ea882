"""The next-word tab's handlers: a prompt continued token by token (streamed), the view kept in gr.State, the step
slider's redraw and the /generate endpoint's answer.

The model runs only in `generate` (and again in the panels that measure it). A step s shows what the model had read
when it chose its s-th new token: the top-left block of the one pass's causal maps (LMView.maps), so every shared
view (heatmap, small multiples, token focus, model view) follows the step slider without running the model again.
"""

import dataclasses
import html
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from pipelines.attention.attention_maps import AttentionMaps
from pipelines.language_model import MAX_NEW_TOKENS, Decoding, PromptError
from pipelines.tasks import LM, Task

from ..attention import figures
from ..attention.task_views import heatmap
from ..inputs import (
    LM_DECODINGS,
    MAX_PROMPT_CHARS,
    MAX_SEED,
    MAX_TEMPERATURE,
    check_text,
    clamp,
    kind_of,
    layer_head,
    plural,
    step_chosen,
    step_shown,
    whole_number,
)
from ..notices import status as status_line
from ..server.failures import failure_message

DEFAULT_TEMPERATURE, DEFAULT_TOP_P, DEFAULT_NEW_TOKENS = 0.8, 0.95, 20


@dataclass
class LMView:
    """One continuation, kept in gr.State: the result, its maps over the whole sequence, and the step shown."""

    result: object  # the pipeline's complete LanguageModelResult (the head table and the download reuse it)
    full: AttentionMaps  # the one pass's causal maps, float16: rows and columns the prompt then the new tokens
    text: str  # the prompt, as the model read it
    step: int = 1  # the step the views show (1-based): the maps are cut to what the model had read then
    model: str | None = None  # which of the tab's models made it (its name in the tab's ModelRegistry)
    drawn_at: tuple[int, int] | None = None  # (layer, head) of the large heatmap the run drew (views_panel)
    cut_after: ClassVar[None] = None
    n_skipped: ClassVar[int] = 0
    task: ClassVar[Task] = LM

    @property
    def steps(self) -> list:
        return self.result.steps

    @property
    def maps(self) -> AttentionMaps:
        """The maps of the step shown: the prompt's tokens and the new ones before this step (causal: the top-left
        block of the final pass's maps is exactly what that step computed)."""
        return self.maps_at(self.step)

    @property
    def internals_input(self) -> tuple[list[int]]:
        """What the inside-one-head recording reads (LanguageModelPipeline.internals): the ids of the one pass."""
        return (list(self.result.sequence_ids),)

    def maps_at(self, step) -> AttentionMaps:
        """The maps at `step` (1-based, clamped to the continuation's steps), as `maps` is at the step shown."""
        n = len(self.result.tokens) + clamp(step, 1, len(self.steps), self.step) - 1
        kind = LM.main
        tokens = self.full.queries[kind][:n]
        carried = {k: c[:, :, :n] for k, c in self.full.carried.items()}  # (L, H, n): what each value carries
        return AttentionMaps({kind: self.full.maps[kind][:, :, :n, :n]}, {kind: tokens}, {kind: tokens}, carried)


def decoding_words(decoding: Decoding) -> str:
    """How a continuation was decoded, in words (a sampled one's seed shown, so it can be reused)."""
    if decoding.temperature <= 0:
        return "greedy decoding"
    how = f"sampled: temperature {decoding.temperature:g}, top-p {decoding.top_p:g}"
    return f"{how}, seed {decoding.seed} (the same seed gives the same text)"


def _number(value, name: str, low: float, high: float, default: float, low_open: bool) -> tuple[float | None, str]:
    """A finite number in range from what a client sent (None: default), or (None, the message)."""
    if value is None:
        return default, ""
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    ok = number is not None and np.isfinite(number) and (number > low if low_open else number >= low) and number <= high
    if ok:
        return number, ""
    what = "a number out of range" if number is not None else kind_of(value)
    side = "above" if low_open else "from"
    return None, f"The {name} must be a number {side} {low:g} to {high:g}; this request sent {what}."


def decoding_options(decoding=None, temperature=None, top_p=None, seed=None, max_new_tokens=None, chat=False):
    """(Decoding, None) from what the page or an API client sent, or (None, the message). None: the default (greedy,
    20 new tokens; sampled: temperature 0.8, top-p 0.95, a seed drawn now); chat: the chat template applied. A sampled
    Decoding always has a seed (drawn when none was given), shown so it can be reused."""
    decoding = decoding.strip().lower() if isinstance(decoding, str) else decoding
    if decoding is not None and decoding not in LM_DECODINGS:
        return None, f"Decoding must be “greedy” or “sampled”; this request sent {kind_of(decoding)} that is neither."
    n = DEFAULT_NEW_TOKENS if max_new_tokens is None else whole_number(max_new_tokens)
    if n is None or not 1 <= n <= MAX_NEW_TOKENS:
        what = kind_of(max_new_tokens) if n is None else "a number out of range"
        return None, f"max_new_tokens must be a whole number from 1 to {MAX_NEW_TOKENS}; this request sent {what}."
    if decoding != "sampled":
        return Decoding(n, 0.0, 1.0, None, bool(chat)), None
    temp, error = _number(temperature, "temperature", 0, MAX_TEMPERATURE, DEFAULT_TEMPERATURE, True)
    p, error = (None, error) if error else _number(top_p, "top-p", 0, 1, DEFAULT_TOP_P, True)
    if error:
        return None, error
    if seed is None or seed == "":
        seed = random.randint(0, MAX_SEED)
    chosen = whole_number(seed)
    if chosen is None or not 0 <= chosen <= MAX_SEED:
        return None, f"The seed must be a whole number from 0 to {MAX_SEED:,}; this request sent {kind_of(seed)}."
    return Decoding(n, temp, p, chosen, bool(chat)), None


def summary(result, decoding: Decoding, stopped: bool) -> str:
    """The status line of a finished continuation."""
    n = len(result.steps)
    why = (
        "stopped by you"
        if stopped
        else "the model wrote its end-of-text token"
        if result.finished
        else f"the limit of {plural(decoding.max_new_tokens, 'new token')}"
    )
    lines = [f"{plural(n, 'new token')} ({why}); {decoding_words(decoding)}."]
    if result.chat:
        lines.append(
            f"The chat template is applied: the prompt went in as a user message, wrapped in "
            f"{plural(len(result.template_positions), 'template token')} (shown in the maps)."
        )
    first = result.steps[0] if result.steps else None
    if first is not None:
        lines.append(f"First new token {first.token!r} at {first.probability:.1%}; the step slider shows each step.")
    return status_line(lines)


def _partial(result) -> tuple:
    """What the page shows while decoding: the text so far and the last step's top-10 (no maps yet)."""
    last = result.steps[-1]
    bar = figures.topk_bar(last.top_k, last.token, f"Step {len(result.steps)}: the {len(last.top_k)} most likely")
    return None, result.continuation, f"Generating… {plural(len(result.steps), 'token')} so far.", bar


def generate(
    pipe, prompt, decoding=None, temperature=None, top_p=None, seed=None, max_new_tokens=None, chat=False,
    model: str | None = None, stopped: Callable[[], bool] = lambda: False,
) -> Iterator[tuple]:  # fmt: skip
    """Continue the prompt, yielding (state, continuation, status, top-10 figure) after each new token (state None)
    and once at the end with the LMView (None and a message for bad input or a failure). stopped(): the visitor
    pressed Stop; the tokens so far are kept and read once more for the maps (same options: the same tokens)."""
    checked, chosen, error = _checked(prompt, decoding, temperature, top_p, seed, max_new_tokens, chat)
    if error:
        yield None, "", error, None
        return
    try:
        result, halted = yield from _decode(pipe, checked.text, chosen, stopped)
    except Exception as e:
        yield None, "", _failed(checked, e), None
        return
    view = LMView(result, result.attention_maps().astype(np.float16), checked.text, len(result.steps), model)
    status = summary(result, chosen, halted)
    yield view, result.continuation, status + "".join(f"\n- {n}" for n in checked.notices), next_tokens(view)


def _checked(prompt, decoding, temperature, top_p, seed, max_new_tokens, chat=False):
    """(the checked prompt, its Decoding, None) from what the page or a client sent, or (.., .., the status saying
    what is wrong)."""
    checked = check_text(prompt, MAX_PROMPT_CHARS, "prompt")
    if checked.text is None:
        return checked, None, status_line([], checked.error)
    chosen, error = decoding_options(decoding, temperature, top_p, seed, max_new_tokens, chat)
    return checked, chosen, status_line([], error) if error else None


def _failed(checked, e: Exception) -> str:
    """The status of a generation that raised `e` (a PromptError says what to change)."""
    if isinstance(e, PromptError):
        return status_line(checked.notices, f"{str(e)[:1].upper()}{str(e)[1:]}.")
    return status_line(checked.notices, failure_message(e, "lm"))


def _decode(pipe, text: str, chosen: Decoding, stopped: Callable[[], bool]):
    """Yield the page's partial values while the stream decodes; return (the complete result, stopped early)."""
    stream = pipe.stream(text, chosen)
    for result in stream:
        if result.complete:
            return result, False
        yield _partial(result)
        if stopped():
            stream.close()
            n = len(result.steps)
            return pipe.generate(text, dataclasses.replace(chosen, max_new_tokens=n)), n < chosen.max_new_tokens
    raise PromptError("the model generated nothing")


def api_generate(pipe, prompt, max_new_tokens=None, decoding=None, temperature=None, top_p=None, seed=None):
    """/generate: (continuation, {token: probability} of the first step's top tokens (a gr.Label: the first token
    chosen is named in the status, sampled it may not be the likeliest), status Markdown). It computes only that:
    the continuation, without the maps a page draws (need_weights=False)."""
    checked, chosen, error = _checked(prompt, decoding, temperature, top_p, seed, max_new_tokens)
    if error:
        return "", None, error
    try:
        result = pipe.generate(checked.text, chosen, need_weights=False)
    except Exception as e:
        return "", None, _failed(checked, e)
    status = summary(result, chosen, False) + "".join(f"\n- {n}" for n in checked.notices)
    top = {}
    for token, p in result.steps[0].top_k if result.steps else ():  # two tokens that read alike: the likelier one's
        top.setdefault(token, float(p))
    return result.continuation, top, status


def step_slider_value(view: LMView | None) -> dict:
    """The step slider's settings for a new continuation: steps 1..n, at the last (the whole sequence)."""
    n = len(view.steps) if view is not None else 1
    return dict(minimum=1, maximum=max(n, 2), value=n, step=1, interactive=n > 1)


def next_tokens(view: LMView | None):
    """The top-10 next tokens of the step shown, the chosen one marked."""
    if view is None:
        return None
    t = step_chosen(view.step, len(view.steps))
    step = view.steps[t]
    tok = html.escape(step.token, quote=False)
    chose = f"chose “{tok}” ({step.probability:.1%}); the {len(step.top_k)} most likely"
    title = f"Step {step_shown(t)} of {len(view.steps)}: {chose}"
    return figures.topk_bar(step.top_k, step.token, title)


def show_step(view: LMView | None, layer, head, step, scale="linear", hide=False):
    """The step slider: (the large heatmap, the top-10) at that step. The view keeps the step, so the other views
    (small multiples, token focus, model view) draw it too."""
    if view is None:
        return None, None
    view.step = clamp(step, 1, len(view.steps), len(view.steps))
    layer, head = layer_head(view.full.n_layers(LM.main), view.full.n_heads, layer, head)
    return heatmap(view, layer, head, scale, hide), next_tokens(view)
