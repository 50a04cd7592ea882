"""The heads panel's handlers: the head table (sortable, coloured), the compact layer x head grid, one
head's heatmap on a click, and running the model with chosen heads switched off, side by side with the
intact model. Plain functions from inputs to values; layers and heads are shown counted from 1."""

import difflib
import html
import logging
import time
from dataclasses import dataclass
from functools import partial

import gradio as gr
import numpy as np
import pandas as pd

from pipelines.kinds import BY_ROW, CAUSAL, KINDS, order

from ..attention import figures, view_handlers
from ..handlers import _status
from ..inputs import beam_width, check_text
from ..numbers import decimals_for, largest, number, points
from ..tasks import TASKS

log = logging.getLogger(__name__)
AGREEMENT = "cross"  # the kind whose heads are ranked against the explanation (pipelines.attention.heads)
SHARES = ("previous", "itself", "end", "punctuation", "agreement", "sink", "duplicate", "induction")
COLUMNS = {  # row key -> table header
    "kind": "attention",
    "layer": "layer",
    "head": "head",
    "effect": "effect",
    "entropy": "entropy",
    "distance": "distance",
    "previous": "on previous",
    "itself": "on itself",
    "end": "on end",
    "punctuation": "on punctuation",
    "agreement": "agreement",
    "sink": "sink",  # a language model's roles (pipelines.attention.head_roles)
    "duplicate": "on duplicates",
    "induction": "induction",
}


@dataclass
class HeadsView:
    """The head table of one run, kept in gr.State with what is needed to run the model again."""

    task: str  # its name in viz.tasks.TASKS
    text: str
    beam_size: int | None  # a task that decodes only
    rows: list[dict]  # pipelines' head table: 0-based layer and head
    effect_of: str  # what 'effect' measures, in words
    result: object = None  # a task that decodes: the intact result measured (switch_off reuses it)


def head_value(kind: str, layer: int, head: int) -> str:
    """A head's id in checkboxes and state: 'kind:layer:head', 0-based."""
    return f"{kind}:{layer}:{head}"


def head_label(kind: str, layer: int, head: int) -> str:
    """A head's name in the UI, 1-based: 'layer 1 · head 2' or 'cross 1 · head 2'."""
    return f"{grid_row(kind, layer)} · head {head + 1}"


def head_choices(layers: dict[str, int], n_heads: int) -> list[tuple[str, str]]:
    """(label, value) for every head, for a CheckboxGroup."""
    return [
        (head_label(kind, layer, head), head_value(kind, layer, head))
        for kind, n in layers.items()
        for layer in range(n)
        for head in range(n_heads)
    ]


def parse_heads(values: list[str] | None) -> dict[tuple[str, int, int], float]:
    """Checkbox values 'kind:layer:head' -> a head mask {(kind, layer, head): 0.0} for the pipelines."""
    mask = {}
    for value in values or []:
        kind, layer, head = str(value).split(":")
        mask[(kind, int(layer), int(head))] = 0.0
    return mask


# --- colours ---------------------------------------------------------------------------------------------


def _shade(value, vmax: float, rgb: tuple[int, int, int]) -> str:
    if value is None or not np.isfinite(value) or vmax <= 0:
        return ""
    alpha = 0.75 * min(abs(float(value)) / vmax, 1.0) ** 0.7
    return f"background-color: rgba({rgb[0]},{rgb[1]},{rgb[2]},{alpha:.2f})"


def _effect_css(value, vmax: float) -> str:
    """Orange where switching the head off lowers the output (the head helps it), blue where it raises it."""
    if value is None or not np.isfinite(value):
        return ""
    return _shade(value, vmax, (234, 88, 12) if value < 0 else (37, 99, 235))


def effect_decimals(values) -> int:
    """Decimals that show the largest effect to two significant digits: 3 from 0.01 up, up to 6 below. A 6 x 12-head
    model's heads each move a confident prediction by a thousandth or less, and at 3 decimals its grid read 0.000
    in nearly every cell, coloured as if it said more."""
    return decimals_for(values, least=3)


def table_keys(kinds, agreement: bool) -> list[str]:
    """The head table's columns: the kind of attention only where there is more than one, agreement only where
    some head has one (cross-attention)."""
    return [k for k in COLUMNS if (k != "kind" or len(kinds) > 1) and (k != "agreement" or agreement)]


@dataclass
class HeadTable:
    """The head table as the page shows it: column headers and, for each head, its cells' text and colour (CSS).
    The page gets it as HTML (html()), not as a gr.Dataframe: gradio's page copies the value of every component an
    event has ever updated at the start and end of each later event, and a coloured Dataframe of 72 rows made that
    copy 20-50 ms, several times per click (benchmarks/RESULTS.md, "Click to drawn heatmap"). Its headers sort it in the
    browser (SORT_JS)."""

    columns: list[str]
    rows: list[list[tuple[str, str]]]  # per row, per column: (text, CSS)

    @property
    def empty(self) -> bool:
        return not self.rows

    def column(self, name: str) -> list[str]:
        """One column's texts, top to bottom."""
        index = self.columns.index(name)
        return [row[index][0] for row in self.rows]

    def html(self) -> str:
        head = "".join(f'<th scope="col" tabindex="0" aria-sort="none">{html.escape(c)}</th>' for c in self.columns)
        body = "".join(
            "<tr>"
            + "".join(
                f'<td style="{css}">{html.escape(text)}</td>' if css else f"<td>{html.escape(text)}</td>"
                for text, css in row
            )
            + "</tr>"
            for row in self.rows
        )
        return f'<div class="heads-table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


# Sorting by a header (click, Enter or Space): ascending first, then descending; numbers by value, a dash ("no
# value") last either way. A new table (a new run) comes unsorted. gr.HTML's js_on_load: `element` is the component.
SORT_JS = """
const sortBy = th => {
  const table = th.closest('table'), body = table && table.tBodies[0];
  if (!body) return;
  const col = Array.from(th.parentNode.children).indexOf(th);
  const dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
  table.querySelectorAll('thead th').forEach(h => h.setAttribute('aria-sort', 'none'));
  th.setAttribute('aria-sort', dir);
  const sign = dir === 'ascending' ? 1 : -1;
  const rows = Array.from(body.rows).map((tr, i) => {
    const t = ((tr.children[col] || {}).textContent || '').trim(), n = parseFloat(t);
    return {tr, i, t, n: Number.isFinite(n) ? n : null};
  });
  const numeric = rows.some(r => r.n !== null);
  rows.sort((a, b) => {
    if (!numeric) return sign * a.t.localeCompare(b.t) || a.i - b.i;
    if (a.n === null || b.n === null) return (a.n === null) - (b.n === null) || a.i - b.i;
    return sign * (a.n - b.n) || a.i - b.i;
  });
  rows.forEach(r => body.appendChild(r.tr));
};
element.addEventListener('click', e => { const th = e.target.closest('thead th'); if (th) sortBy(th); });
element.addEventListener('keydown', e => {
  const th = e.target.closest('thead th');
  if (th && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); sortBy(th); }
});
"""


def _column_css(key: str, rows: list[dict]):
    """value -> CSS for one numeric column of the head table: the effect orange or blue (of the largest effect),
    shares teal (of 1), the other statistics grey (of their largest)."""
    if key in SHARES:
        return lambda v: _shade(v, 1.0, (13, 148, 136))
    vmax = largest(r.get(key) for r in rows)
    if key == "effect":
        return lambda v: _effect_css(v, vmax)
    return lambda v: _shade(v, vmax, (107, 114, 128))


def head_table_view(rows: list[dict]) -> HeadTable:
    """The head table, coloured (1-based layer and head). The kind of attention is a column only where there is
    more than one (the classifier has only self-attention)."""
    kinds, agreement = {r["kind"] for r in rows}, any(r.get("agreement") is not None for r in rows)
    keys = [k for k in table_keys(kinds, agreement) if any(k in r for r in rows)]
    numeric = [k for k in keys if k not in ("kind", "layer", "head")]
    colour = {key: _column_css(key, rows) for key in numeric}  # key -> (value -> CSS)

    effect_places = effect_decimals(r["effect"] for r in rows)

    def cell(r: dict, key: str) -> tuple[str, str]:
        value = r.get(key)
        if key == "kind":
            return KINDS[value].title, ""
        if key in ("layer", "head"):
            return str(value + 1), ""
        value = None if value is None else float(value)
        return number(value, effect_places if key == "effect" else 3), colour[key](value)

    return HeadTable([COLUMNS[k] for k in keys], [[cell(r, k) for k in keys] for r in rows])


def grid_row(kind: str, layer: int) -> str:
    """The grid's name of a layer: 'layer 2', 'cross 1'."""
    return f"{KINDS[kind].row} {layer + 1}"


def grid_frame(lines: dict[str, list], n_heads: int) -> pd.DataFrame:
    """{row name: a value per head} -> the grid's frame, a column per head."""
    return pd.DataFrame(
        [[name, *values] for name, values in lines.items()], columns=["", *[f"head {h + 1}" for h in range(n_heads)]]
    )


def grid_styler(rows: list[dict]):
    """The compact grid: one row per (kind, layer), one column per head, cells = effect, coloured."""
    n_heads = max(r["head"] for r in rows) + 1
    lines: dict[str, list] = {}
    for r in rows:
        lines.setdefault(grid_row(r["kind"], r["layer"]), [None] * n_heads)[r["head"]] = r["effect"]
    frame = grid_frame(lines, n_heads)
    vmax, decimals = largest(r["effect"] for r in rows), effect_decimals(r["effect"] for r in rows)
    heads = list(frame.columns[1:])
    shown = partial(number, decimals=decimals)
    return frame.style.format(shown, subset=heads).map(lambda v: _effect_css(v, vmax), subset=heads)


def empty_grid(layers: dict[str, int], n_heads: int) -> pd.DataFrame:
    """The grid before anything is measured: its rows and columns, a dash in every cell (not Gradio's '1 2 3')."""
    return grid_frame(
        {grid_row(kind, layer): ["–"] * n_heads for kind, n in layers.items() for layer in range(n)}, n_heads
    )


ROLES = ("sink", "duplicate", "induction")  # measured on a language model's causal heads only


def empty_table(layers: dict[str, int]) -> HeadTable:
    """The head table before anything is measured: its column headers for this model, no rows (the roles' columns
    where the heads are causal, as a measured table has them)."""
    keys = [k for k in table_keys(layers, agreement=AGREEMENT in layers) if k not in ROLES or CAUSAL.name in layers]
    return HeadTable([COLUMNS[k] for k in keys], [])


# --- handlers --------------------------------------------------------------------------------------------


def _unmeasured(pipe) -> tuple[pd.DataFrame, HeadTable]:
    """The grid and table of a model with nothing measured: what a failed measurement leaves on the page."""
    return empty_grid(pipe.head_layers, pipe.n_heads), empty_table(pipe.head_layers)


def _measure_label(pipe, text: str, beam: int | None, result):
    return pipe.head_table(text), None


def _measure_decoded(pipe, text: str, beam: int | None, result):
    result = _same_input(result, text, beam) or pipe(text, beam_size=beam)
    return pipe.head_table(text, beam_size=beam, result=result), result


def _measure_continued(pipe, text: str, beam: int | None, result):
    """A language model: the tab's last result of this prompt (its decoding options with it), else greedy now."""
    if result is None or getattr(result, "prompt", None) != text or not result.generated_ids:
        result = pipe(text)
    return pipe.head_table(text, result=result), result


def _measure(pipe, task, text: str, beam: int | None, result):
    """(head table rows, the result measured: kept where the task decodes or continues, for switch_off)."""
    return MEASURE[task.name](pipe, text, beam, result)


def head_table(pipe, task: str, text: str, decoding: str | None = None, beam_size=None, result=None):
    """Measure every head on the text: (HeadsView, grid, table, status Markdown). The model runs here;
    result: a translation's TranslationResult of this text and decoding, to measure without decoding again."""
    spec = TASKS[task]
    checked = check_text(text, spec.max_chars, spec.unit)
    if checked.text is None:
        return None, *_unmeasured(pipe), _status([], checked.error)
    beam = beam_width(decoding, beam_size, getattr(pipe, "beam_size", 4)) if spec.task.decodes else None
    start = time.perf_counter()
    try:
        rows, result = _measure(pipe, spec.task, checked.text, beam, result)
    except ValueError:
        return None, *_unmeasured(pipe), _status([], "The model found no words to read in this text.")
    except Exception:
        log.exception("head table failed")
        return None, *_unmeasured(pipe), _status([], "Sorry, the heads could not be measured on this text.")
    seconds = time.perf_counter() - start
    effect_of = spec.task.effect_of
    view = HeadsView(task, checked.text, beam, rows, effect_of, result)
    top = min(rows, key=lambda r: r["effect"])
    lines = [
        f"{len(rows)} heads measured in {seconds:.2f} s. **Effect** = change of {effect_of} when that head "
        f"alone is switched off (orange: the output falls without it, blue: it rises). Largest drop: "
        f"**{head_label(top['kind'], top['layer'], top['head'])}** "
        f"({top['effect']:+.{effect_decimals(r['effect'] for r in rows)}f}).{_no_head_decides(rows)}",
        "Click a cell of the grid for that head's attention map; sort the table by clicking a column header.",
    ]
    return view, grid_styler(rows), head_table_view(rows), "\n\n".join(lines)


def _no_head_decides(rows: list[dict]) -> str:
    """A sentence where no head alone moves the output by 0.01 (a point of probability; for a translation's
    log-probability, 1% of its probability): the decision is spread over the heads."""
    if largest(r["effect"] for r in rows) >= 0.01:
        return ""
    return " No head alone moves it by 0.01: the output does not rest on one head; switch several off to see more."


def _same_input(result, text: str, beam: int | None):
    """The result when it is a decoding of this very text with this beam width (the tab's last run), else None."""
    if result is None or getattr(result, "beam_size", None) != beam:
        return None
    return result if getattr(result, "text", None) == text else None


def selected_head(heads: HeadsView | None, evt: gr.SelectData) -> str | None:
    """The head a click in the grid points at ('kind:layer:head'), or None (the name column, no table)."""
    if heads is None or evt is None:
        return None
    row_value, col = evt.row_value, evt.index[1] if isinstance(evt.index, list | tuple) else None
    if not row_value or not col:
        return None
    name, layer = str(row_value[0]).rsplit(" ", 1)
    kind = BY_ROW[name]
    return head_value(kind, int(layer) - 1, int(col) - 1)


def _row(heads: HeadsView, value: str) -> dict | None:
    kind, layer, head = value.split(":")
    return next((r for r in heads.rows if (r["kind"], r["layer"], r["head"]) == (kind, int(layer), int(head))), None)


def head_heatmap(view, heads: HeadsView | None, value: str | None):
    """One head's attention map from the last result (sentiment or translation view); None without one."""
    if view is None or heads is None or not value:
        return None
    kind, layer, head = value.split(":")
    layer, head = int(layer), int(head)
    row = _row(heads, value)
    km = view_handlers.kinds_of(view.maps)[kind]  # one source of attention for every view
    decimals = effect_decimals(r["effect"] for r in heads.rows)
    stats = f"effect {row['effect']:+.{decimals}f} · entropy {row['entropy']:.2f}" if row else ""
    title = f"{KINDS[kind].title}, layer {layer + 1}, head {head + 1}: {stats}"
    return figures.attention_heatmap(km.maps[layer][head], km.q_labels, km.k_labels, title, (km.query, km.key))


def add_head(selected: list[str] | None, value: str | None) -> list[str]:
    """The switched-off set with the clicked head added (a click in the grid, then 'switch it off')."""
    selected = list(selected or [])
    if value and value not in selected:
        selected.append(value)
    return selected


# --- switching heads off -----------------------------------------------------------------------------------


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def switched_off_names(mask: dict, layers: dict[str, int], n_heads: int) -> str:
    """The heads of a mask in words, a layer's heads together: 'layer 1 · head 1 and layer 2 · head 4', 'layer 1 ·
    heads 2, 5 and layer 3 · all 12 heads', 'all 72 heads' (it listed each of 72 heads by name)."""
    if len(mask) == n_heads * sum(layers.values()):
        return f"all {len(mask)} heads"
    rows: dict[tuple[str, int], list[int]] = {}
    for kind, layer, head in sorted(mask, key=lambda k: (order(k[0]), k[1], k[2])):
        rows.setdefault((kind, layer), []).append(head + 1)
    return _and([_row_heads(grid_row(*row), heads, n_heads) for row, heads in rows.items()])


def _row_heads(row: str, heads: list[int], n_heads: int) -> str:
    if len(heads) == n_heads > 1:
        return f"{row} · all {n_heads} heads"
    return f"{row} · head{'s' if len(heads) > 1 else ''} {', '.join(map(str, heads))}"


def _cell(text: str) -> str:
    return f'<td style="padding:4px 10px">{text}</td>'


def _header(*names: str) -> str:
    return "".join(f'<th style="padding:4px 10px;text-align:left">{n}</th>' for n in names)


def sentiment_comparison(intact, off, names: str) -> str:
    """HTML: the intact prediction and the one with the heads `names` (switched_off_names) off, side by side, the
    change spelled out."""
    head = _header("", "intact", "heads off", "change")
    body = "".join(
        "<tr>"
        + _cell(html.escape(label))
        + _cell(f"{p:.1%}")
        + _cell(f"{off.probabilities[label]:.1%}")
        + _cell(points(off.probabilities[label] - p))
        + "</tr>"
        for label, p in intact.probabilities.items()
    )
    before, after = intact.confidence, off.probabilities[intact.label]
    if off.label != intact.label:
        verdict = (
            f"the prediction flips from <b>{intact.label}</b> ({before:.1%}) to <b>{off.label}</b> "
            f"({off.confidence:.1%})"
        )
    else:
        verdict = (
            f"the prediction stays <b>{intact.label}</b>; its probability goes from {before:.1%} to "
            f"{after:.1%} ({points(after - before)})"
        )
    return (
        f'<div class="heads-compare"><p>Switching off {html.escape(names)}: {verdict}.</p>'
        f'<table style="border-collapse:collapse"><tr>{head}</tr>{body}</table></div>'
    )


def _word_diff(old: str, new: str) -> str:
    """The new translation with words that changed marked: removed struck through, added underlined."""
    a, b = old.split(), new.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html.escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f'<del style="color:#b91c1c">{html.escape(" ".join(a[i1:i2]))}</del>')
        if j2 > j1:
            out.append(f'<ins style="color:#15803d;font-weight:600">{html.escape(" ".join(b[j1:j2]))}</ins>')
    return " ".join(out)


def translation_comparison(intact, off, old_logp_off: float, names: str) -> str:
    """HTML: the intact translation and the one decoded again with the heads `names` off, the change spelled out."""
    same = off.translation == intact.translation
    verdict = (
        "the translation is unchanged"
        if same
        else f"the translation changes ({_word_diff(intact.translation, off.translation)})"
    )
    rows = [
        ("intact", html.escape(intact.translation) or "<i>(empty)</i>", f"{intact.score:.2f}"),
        ("heads off", html.escape(off.translation) or "<i>(empty)</i>", f"{off.score:.2f}"),
    ]
    body = "".join(f"<tr>{_cell(a)}{_cell(b)}{_cell(c)}</tr>" for a, b, c in rows)
    head = _header("", "English", "its log-prob")  # each row its own English; the sentence above: the intact one
    return (
        f'<div class="heads-compare"><p>Switching off {html.escape(names)}: {verdict}. With these heads '
        f"off, the intact translation's log-probability goes from {intact.score:.2f} to {old_logp_off:.2f} "
        f"({old_logp_off - intact.score:+.2f}).</p>"
        f'<table style="border-collapse:collapse"><tr>{head}</tr>{body}</table></div>'
    )


def _label_off(pipe, heads: HeadsView, mask: dict) -> str:
    """A classifier: the prediction with and without the heads."""
    names = switched_off_names(mask, pipe.head_layers, pipe.n_heads)
    return sentiment_comparison(pipe(heads.text), pipe(heads.text, head_mask=mask), names)


def _decoded_off(pipe, heads: HeadsView, mask: dict) -> str:
    """A decoder: decoded again without the heads, and the intact output scored without them."""
    intact = heads.result or pipe(heads.text, beam_size=heads.beam_size)
    off = pipe(heads.text, beam_size=heads.beam_size, head_mask=mask)
    old_logp_off = pipe.score(heads.text, intact.target_ids, head_mask=mask)
    names = switched_off_names(mask, pipe.head_layers, pipe.n_heads)
    return translation_comparison(intact, off, old_logp_off, names)


def lm_comparison(intact, off, names: str) -> str:
    """HTML: the continuation and its first token's probability, intact and with the heads `names` off."""
    first = intact.steps[0]
    was = f"{first.probability:.1%}"
    off_first = off.steps[0]
    if first.token_id in off_first.top_ids:
        now = f"{off_first.top_k[off_first.top_ids.index(first.token_id)][1]:.1%}"
        change = f"goes from {was} to {now}"
    else:
        change = f"was {was}; without these heads it is not among the top {len(off_first.top_k)}"
    token = html.escape(repr(first.token))
    verdict = f"the first new token {token}: its probability {change}"
    rows = [
        ("intact", html.escape(intact.continuation) or "<i>(empty)</i>", f"{first.token!r} {first.probability:.1%}"),
        ("heads off", html.escape(off.continuation) or "<i>(empty)</i>",
         f"{off_first.token!r} {off_first.probability:.1%}"),
    ]  # fmt: skip
    body = "".join(f"<tr>{_cell(a)}{_cell(b)}{_cell(html.escape(c))}</tr>" for a, b, c in rows)
    same = "unchanged" if off.continuation == intact.continuation else "changed"
    return (
        f'<div class="heads-compare"><p>Switching off {html.escape(names)}: {verdict}; the continuation is '
        f"{same}.</p>"
        f'<table style="border-collapse:collapse"><tr>{_header("", "continuation", "first token")}</tr>{body}'
        "</table></div>"
    )


def _continued_off(pipe, heads: HeadsView, mask: dict) -> str:
    """A language model: the prompt continued again without the heads, with the intact run's options."""
    intact = heads.result or pipe(heads.text)
    options = dict(temperature=intact.temperature, top_p=intact.top_p, seed=intact.seed, chat=intact.chat)
    off = pipe(heads.text, max(1, len(intact.steps)), head_mask=mask, **options)
    names = switched_off_names(mask, pipe.head_layers, pipe.n_heads)
    return lm_comparison(intact, off, names)


MEASURE = {"sentiment": _measure_label, "translation": _measure_decoded, "lm": _measure_continued}  # by task
SWITCH_OFF = {"sentiment": _label_off, "translation": _decoded_off, "lm": _continued_off}


def switch_off(pipe, heads: HeadsView | None, selected: list[str] | None) -> str:
    """Run the model again with the chosen heads off: HTML comparing it with the intact model."""
    if heads is None:
        return "<p>Run the model first: the heads are measured on its last input.</p>"
    mask = parse_heads(selected)
    if not mask:
        return "<p>Choose at least one head to switch off (tick it, or click it in the grid).</p>"
    try:
        return SWITCH_OFF[heads.task](pipe, heads, mask)
    except Exception:
        log.exception("switching heads off failed")
        return "<p>Sorry, the model failed with these heads off. Please try another set.</p>"
