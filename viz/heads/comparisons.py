"""The model with heads switched off beside the intact one, as HTML: a classifier's label, a translation, a
language model's continuation; and the switched-off heads in words."""

import difflib
import html

from pipelines.kinds import order

from ..numbers import points
from .names import grid_row


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
