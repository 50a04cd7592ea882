"""The head table: its columns, its cells' text and colour, its HTML, and the script that sorts it by a header and
reports the head of a clicked row (viz/page/js/head_table.js)."""

import html
from dataclasses import dataclass, field

from pipelines.kinds import CAUSAL, KINDS

from ..numbers import largest, number
from ..page.scripts import Code, call
from .effects import effect_css, effect_decimals, shade
from .names import head_value

AGREEMENT = "cross"  # the kind whose heads are ranked against the explanation (pipelines.attention.heads)
SHARES = ("previous", "itself", "end", "punctuation", "agreement", "sink", "duplicate", "induction")
ROLES = ("sink", "duplicate", "induction")  # measured on a language model's causal heads only
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
# gr.HTML's js_on_load: a header sorts the table (click, Enter or Space), a row picks its head (trigger('select')).
TABLE_JS = call("head_table.js", Code("element"), Code("trigger")) + ";"


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
    browser and a click on a row reports that row's head (TABLE_JS)."""

    columns: list[str]
    rows: list[list[tuple[str, str]]]  # per row, per column: (text, CSS)
    heads: list[str] = field(default_factory=list)  # per row, its head's id (names.head_value)

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
            f'<tr data-head="{html.escape(value)}" tabindex="0">'
            + "".join(
                f'<td style="{css}">{html.escape(text)}</td>' if css else f"<td>{html.escape(text)}</td>"
                for text, css in row
            )
            + "</tr>"
            for row, value in zip(self.rows, self.heads, strict=True)
        )
        return f'<div class="heads-table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _column_css(key: str, rows: list[dict]):
    """value -> CSS for one numeric column of the head table: the effect orange or blue (of the largest effect),
    shares teal (of 1), the other statistics grey (of their largest)."""
    if key in SHARES:
        return lambda v: shade(v, 1.0, (13, 148, 136))
    vmax = largest(r.get(key) for r in rows)
    if key == "effect":
        return lambda v: effect_css(v, vmax)
    return lambda v: shade(v, vmax, (107, 114, 128))


def head_table_view(rows: list[dict]) -> HeadTable:
    """The head table, coloured (1-based layer and head). The kind of attention is a column only where there is
    more than one (the classifier has only self-attention)."""
    kinds, agreement = {r["kind"] for r in rows}, any(r.get("agreement") is not None for r in rows)
    keys = [k for k in table_keys(kinds, agreement) if any(k in r for r in rows)]
    numeric = [k for k in keys if k not in ("kind", "layer", "head")]
    colour = {key: _column_css(key, rows) for key in numeric}  # key -> (value -> CSS)

    effect_places = effect_decimals(r.get("effect") for r in rows)  # none over a set without effects

    def cell(r: dict, key: str) -> tuple[str, str]:
        value = r.get(key)
        if key == "kind":
            return KINDS[value].title, ""
        if key in ("layer", "head"):
            return str(value + 1), ""
        value = None if value is None else float(value)
        return number(value, effect_places if key == "effect" else 3), colour[key](value)

    ids = [head_value(r["kind"], r["layer"], r["head"]) for r in rows]
    return HeadTable([COLUMNS[k] for k in keys], [[cell(r, k) for k in keys] for r in rows], ids)


def empty_table(layers: dict[str, int]) -> HeadTable:
    """The head table before anything is measured: its column headers for this model, no rows (the roles' columns
    where the heads are causal, as a measured table has them)."""
    keys = [k for k in table_keys(layers, agreement=AGREEMENT in layers) if k not in ROLES or CAUSAL.name in layers]
    return HeadTable([COLUMNS[k] for k in keys], [])
