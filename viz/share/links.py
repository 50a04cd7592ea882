"""Links that restore a view: the tab, the input text and the controls, as URL query parameters.

    ?tab=sentiment&text=A+warm+film.&layer=2&head=3&method=rollout&scale=norm&hide=1
    ?tab=sentiment&text=A+warm+film.&model=from+scratch+%282+%C3%97+4+heads%29
    ?tab=translation&text=Zwei+Hunde.&decoding=greedy&beam=4&layer=1&head=2&step=3&training_step=653
    ?tab=lm&text=This+movie+was&decoding=sampled&temperature=0.8&top_p=0.95&seed=7&max_new=20&step=2&chat=1

    ?learn=5  (the Learn tab at its step 5; with any other link's values too: ?tab=lm&text=...&learn=5)

Layer, head and step are 1-based, as the app shows them. `model` is the model choice's name (left out for the tab's
default model), `training_step` the step of a training snapshot (left out for the trained model) and `hide=1` ticks
*Hide special tokens and punctuation* (left out when it is not ticked). The Next word tab's decoding options
(`temperature`, `top_p` and `seed` only when sampled, `max_new`: the number of new tokens) and `chat=1` (the prompt
through the chat template) travel too; its `step` is the step slider's. `layers=1` opens the "Layer by layer" section
and reads the result layer by layer once it is shown (on any tab). Text is UTF-8
percent-encoded, so any Unicode and any markup survive the round trip; it is only ever put back into a text box,
never rendered as HTML.
A link whose query would pass MAX_QUERY_CHARS is refused with a message: many servers and proxies reject
request lines over 8 KB (nginx's default), and a link that breaks is worse than none.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

from pipelines.attention.attention_views import COLOR_SCALES
from pipelines.tasks import LM

from ..inputs import LM_DECODINGS, MAX_SEED, MAX_TEMPERATURE, TRANSLATION_DECODINGS, whole_number

TABS = ("sentiment", "translation", "lm")  # the task tabs
LEARN = "learn"  # the Learn tab's id: the page's first tab (viz.learn.tab)
TAB_DECODINGS = {LM.name: LM_DECODINGS}  # a tab whose decodings are other than the translator's
MAX_QUERY_CHARS = 6_000  # leaves room for the address itself under an 8 KB request line
DEFAULT_SCALE = "linear"  # left out of links
MAX_INDEX = 64  # layers, heads and steps beyond this are not real choices: ignore them
MAX_MODEL_CHARS = 120  # a model choice's name is short ("from scratch (2 × 4 heads)")


@dataclass
class ViewLink:
    """What a link restores. Indices are 0-based here (as the app's controls use them), None = default."""

    tab: str = "sentiment"
    text: str = ""
    layer: int | None = None
    head: int | None = None
    step: int | None = None  # translation: 0-based decoding step; lm: 0-based step of the step slider
    decoding: str | None = None  # translation: 'beam search' or 'greedy'; lm: 'greedy' or 'sampled'
    beam: int | None = None  # translation: beam size
    method: str | None = None  # sentiment: how tokens are highlighted / explained
    scale: str | None = (
        None  # the attention views' colour scale (pipelines.attention.attention_views.COLOR_SCALES), None = linear
    )
    hide: bool = False  # the attention views without special tokens and punctuation (rows renormalised)
    model: str | None = None  # the model choice's name, None = the tab's default model
    training_step: int | None = None  # the training snapshot's step, None = the trained model
    temperature: float | None = None  # lm, sampled: the temperature (None = the tab's default)
    top_p: float | None = None  # lm, sampled: nucleus top-p
    seed: int | None = None  # lm, sampled: the seed that makes the continuation repeatable
    max_new_tokens: int | None = None  # lm: new tokens asked for
    chat: bool = False  # lm: the prompt goes through the chat template
    layers: bool = False  # the "Layer by layer" section read (opened and drawn for the result the link runs)
    learn: int | None = None  # the Learn tab's step (0-based here, 1-based in the link), None: its first
    ignored: list[str] = field(default_factory=list, compare=False)  # values in the link that were not usable


def ignored_notice(names: list[str]) -> str | None:
    """What to tell the visitor when a link held values that were replaced by defaults (None: nothing was)."""
    if not names:
        return None
    return f"This link's {', '.join(dict.fromkeys(names))} could not be used here; the default is shown instead."


def to_query(link: ViewLink) -> str:
    """The query string (without '?') for a view; default controls are left out to keep links short."""
    params: list[tuple[str, str]] = [("tab", link.tab), ("text", link.text)]
    for name in ("layer", "head", "step"):
        value = getattr(link, name)
        if value is not None:
            params.append((name, str(int(value) + 1)))
    if link.decoding:
        params.append(("decoding", link.decoding))
    if link.beam is not None:
        params.append(("beam", str(int(link.beam))))
    if link.method:
        params.append(("method", link.method))
    if link.scale and link.scale != DEFAULT_SCALE:
        params.append(("scale", link.scale))
    if link.hide:
        params.append(("hide", "1"))
    if link.model:
        params.append(("model", link.model))
    if link.training_step is not None:
        params.append(("training_step", str(int(link.training_step))))
    params += [(name, f"{value:g}") for name, value in (("temperature", link.temperature), ("top_p", link.top_p))
               if value is not None]  # fmt: skip
    params += [
        (name, str(int(v))) for name, v in (("seed", link.seed), ("max_new", link.max_new_tokens)) if v is not None
    ]
    if link.chat:
        params.append(("chat", "1"))
    if link.layers:
        params.append(("layers", "1"))
    if link.learn is not None:
        params.append(("learn", str(int(link.learn) + 1)))
    return urlencode(params, errors="replace")  # UTF-8 percent-encoding, spaces as '+'; a lone surrogate -> '?'


def _index(raw: str | None) -> int | None:
    """A 1-based index from a link as 0-based, or None when it is missing or not a sensible number."""
    value = whole_number(raw)
    return value - 1 if value is not None and 1 <= value <= MAX_INDEX else None


def _step(raw: str | None) -> int | None:
    """A training step from a link (0 or more), or None when it is missing or not a whole number."""
    value = whole_number(raw)
    return value if value is not None and 0 <= value < 10**9 else None


def _flag(raw: str | None) -> bool:
    return (raw or "").strip().lower() in ("1", "true", "yes", "on")


def _number(raw: str | None, low: float, high: float) -> float | None:
    """A finite number above `low` and at most `high` from a link, or None."""
    try:
        value = float((raw or "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and low < value <= high else None


def _whole(raw: str | None, low: int, high: int) -> int | None:
    value = whole_number(raw)
    return value if value is not None and low <= value <= high else None


# The Next word tab's decoding options: the link's name -> (the ViewLink field, how it is read, what a visitor is told
# when it is broken)
_OPTIONS = {
    "temperature": ("temperature", lambda raw: _number(raw, 0, MAX_TEMPERATURE), "temperature"),
    "top_p": ("top_p", lambda raw: _number(raw, 0, 1), "top-p"),
    "seed": ("seed", lambda raw: _whole(raw, 0, MAX_SEED), "seed"),
    "max_new": ("max_new_tokens", lambda raw: _whole(raw, 1, MAX_INDEX), "number of new tokens"),
}


def _options(params: Mapping[str, str], ignored: list[str]) -> dict:
    """The decoding options a link holds, as ViewLink fields; the names of broken ones go into `ignored`."""
    out = {}
    for name, (field_name, read, words) in _OPTIONS.items():
        raw = (params.get(name) or "").strip()
        out[field_name] = read(raw) if raw else None
        ignored += [words] if raw and out[field_name] is None else []
    return out


def from_query(params: Mapping[str, str] | str) -> ViewLink | None:
    """The view a link asks for, or None when it names no input text. Unknown or broken values fall back
    to the defaults rather than failing: a link typed by hand must still open something sensible."""
    if isinstance(params, str):
        params = dict(parse_qsl(params.lstrip("?"), keep_blank_values=True))
    text = params.get("text") or ""
    if not text.strip():
        return None
    tab = (params.get("tab") or "sentiment").strip().lower()
    tab = tab if tab in TABS else "sentiment"
    decoding = (params.get("decoding") or "").strip().lower()
    indices = {name: _index(params.get(name)) for name in ("layer", "head", "step", "beam")}
    method = (params.get("method") or "").strip()
    scale = (params.get("scale") or "").strip().lower()
    given = {name: (params.get(name) or "").strip() for name in ("tab", "decoding", "scale", "training_step", *indices)}
    broken = [name for name, value in indices.items() if given[name] and value is None]
    options = _options(params, broken)
    link = ViewLink(
        tab=tab,
        text=text,
        layer=indices["layer"],
        head=indices["head"],
        step=indices["step"],
        decoding=decoding if decoding in TAB_DECODINGS.get(tab, TRANSLATION_DECODINGS) else None,
        beam=None if indices["beam"] is None else indices["beam"] + 1,
        method=method[:40] or None,
        scale=scale if scale in COLOR_SCALES else None,
        hide=_flag(params.get("hide")),
        model=(params.get("model") or "").strip()[:MAX_MODEL_CHARS] or None,
        training_step=_step(params.get("training_step")),
        chat=_flag(params.get("chat")),
        layers=_flag(params.get("layers")),
        learn=learn_step(params),
        **options,
    )
    broken += ["tab"] if given["tab"] and given["tab"].lower() not in (*TABS, LEARN) else []
    broken += ["decoding"] if given["decoding"] and not link.decoding else []
    broken += ["colour scale"] if given["scale"] and not link.scale else []
    broken += ["training step"] if given["training_step"] and link.training_step is None else []
    link.ignored = broken
    return link


def learn_step(params: Mapping[str, str]) -> int | None:
    """The Learn tab's step an address asks for, 0-based (?learn=5 is the fifth: links count from 1), None when it
    names none or no sensible number."""
    return _index(params.get("learn"))


def opens_learn(params: Mapping[str, str]) -> bool:
    """Whether an address opens the page on the Learn tab, as the page decides it (viz/page/js/page_tools.js): it
    does unless it names a task tab, or holds a text without naming a tab or a Learn step (a link made before the
    Learn tab: its text is the first task tab's)."""
    named = (params.get("tab") or "").strip().lower()
    if named in TABS or named == LEARN:
        return named == LEARN
    return not (params.get("text") or "").strip() or "learn" in params


def share_url(base: str, link: ViewLink) -> tuple[str | None, str]:
    """(the full link, a message for the user); the link is None when there is nothing to share or the
    text is too long for a link. base is the page's address without query (from the browser)."""
    if not link.text.strip():
        return None, "Type or pick an input first: the link carries the text and the view."
    query = to_query(link)
    if len(query) > MAX_QUERY_CHARS:
        return None, (
            f"This text is too long for a link: it needs {len(query):,} characters of address, and links are kept "
            f"under {MAX_QUERY_CHARS:,} so that every server accepts them. Shorten the text, or use “Download data”."
        )
    base = (base or "").split("?", 1)[0].split("#", 1)[0]
    return f"{base}?{query}", (
        "Also on the clipboard where the browser allows it. Opening the link runs the model once and shows this view."
    )
