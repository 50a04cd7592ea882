"""Drawing signed attributions: words shaded on a diverging scale with a legend, the faithfulness numbers
beside them, and the deletion curve. Everything typed by the user goes through html.escape.

Subword pieces are merged into words (pipelines.explanations.words: pieces with nothing between them that join letters,
digits or apostrophes); a word's score is the sum of its pieces' scores, since attributions add up.
"""

import html
import re

import numpy as np
import plotly.graph_objects as go

from pipelines.explanations import is_signed, label
from pipelines.explanations.words import word_scores
from pipelines.tasks import SENTIMENT

from ..attention.figures import FONT
from ..attention.token_labels import _gap, display_token
from ..numbers import decimals_for, number, shown
from ..tasks import TASKS

SUPPORT = (37, 99, 235)  # blue: pushes toward the explained label
AGAINST = (220, 38, 38)  # red: pushes away from it
RANDOM_COLOR = "#9ca3af"
TOP_WORDS = 6  # words listed under the highlight, per direction
PROBABILITY = {SENTIMENT.name: "calibrated p"}  # what the deletion curve plots, by task (else the model's own p)


def _rgba(score: float, scale: float) -> str:
    r, g, b = SUPPORT if score >= 0 else AGAINST
    alpha = 0.85 * min(abs(score) / scale, 1.0) ** 0.7 if scale > 0 else 0.0
    return f"rgba({r},{g},{b},{alpha:.3f})"


def word_spans(spans: list[tuple[int, int]], words: np.ndarray, scores: np.ndarray) -> list[tuple[int, int, float]]:
    """(start, end, summed score) per word, in text order; pieces that cover no characters are left out."""
    totals = word_scores(scores, words)
    out: dict[int, list] = {}
    for (s, e), w in zip(spans, words):
        if e > s:
            seg = out.setdefault(int(w), [s, e, float(totals[w])])
            seg[0], seg[1] = min(seg[0], s), max(seg[1], e)
    return [tuple(v) for v in out.values()]


def _render(text: str, segs, scale: float, start: int, end: int, signed: bool) -> str:
    out, pos = [], start
    for s, e, w in segs:
        out.append(_gap(text[pos:s]))
        tip = f"{w:+.3f}" if signed else f"{100 * w:.2f}%"
        out.append(
            f'<span class="tok" title="{tip}" style="background:{_rgba(w, scale)};border-radius:3px;padding:1px 0">'
            f"{html.escape(text[s:e])}</span>"
        )
        pos = max(pos, e)
    out.append(_gap(text[pos:end]))
    return "".join(out)


def legend_html(target: str, scale: float, signed: bool) -> str:
    """The colour bar: red (against) through white to blue (supports), with the value at each end."""
    t = html.escape(target)
    blue, red = "rgba({},{},{},0.85)".format(*SUPPORT), "rgba({},{},{},0.85)".format(*AGAINST)
    if signed:
        bar, left, right = (
            f"linear-gradient(to right,{red},white,{blue})",
            f"−{scale:.2g} against “{t}”",
            f"+{scale:.2g} supports “{t}”",
        )
    else:
        bar, left, right = (
            f"linear-gradient(to right,white,{blue})",
            "0",
            f"{100 * scale:.2g}% of the weight (unsigned)",
        )
    return (
        '<div class="attr-legend" style="display:flex;align-items:center;gap:8px;font-size:0.85em;margin:4px 0 8px">'
        f"<span>{left}</span>"
        '<span class="attr-legend-bar" style="display:inline-block;width:180px;height:12px;'
        f'border:1px solid #d1d5db;border-radius:3px;background:{bar}"></span>'
        f"<span>{right}</span></div>"
    )


def _listed(text: str, segs, fmt) -> str:
    return " · ".join(f"“{html.escape(display_token(text[s:e]))}” {fmt(w)}" for s, e, w in segs) or "nothing"


def top_words_lines(text: str, segs, target: str, signed: bool, k: int = TOP_WORDS) -> list[str]:
    """The words under the highlight: for a signed method those that support the target most (score > 0) and
    those that speak against it most (score < 0), to two significant digits of the largest, never one word in both
    and never a score that shows as ±0; for an unsigned one (attention) the words with the largest share, worded
    without a direction."""
    if not signed:
        ranked = sorted(segs, key=lambda seg: -seg[2])[:k]
        return [f"<b>Where the model looks most:</b> {_listed(text, ranked, lambda w: f'{100 * w:.1f}%')}"]
    places = decimals_for((w for _, _, w in segs), least=2)  # gradients of a pre-trained model are thousandths
    fmt = lambda w: f"{w:+.{places}f}"  # noqa: E731
    visible = [seg for seg in segs if shown(seg[2], places) != 0]  # what does not round to ±0
    supports = sorted((seg for seg in visible if seg[2] > 0), key=lambda seg: -seg[2])[:k]
    against = sorted((seg for seg in visible if seg[2] < 0), key=lambda seg: seg[2])[:k]
    return [
        f"<b>Supports “{html.escape(target)}” most:</b> {_listed(text, supports, fmt)}",
        f"<b>Speaks against it most:</b> {_listed(text, against, fmt)}",
    ]


# A model that averages its tokens (mean pooling) reads each alike: its pooling weights rank nothing
_ALIKE = (
    "<b>Where the model looks most:</b> nowhere in particular: it reads every token alike ({share:.1%} each), as a "
    "model that averages its tokens (mean pooling) does. Attention rollout and attention norm show where its "
    "layers look."
)


def _alike(scores) -> bool:
    """Unsigned scores that are the same on every token that has any (special tokens have none)."""
    read = np.asarray(scores, dtype=np.float64)
    read = read[read > 0]
    return len(read) > 1 and float(read.max() - read.min()) <= 1e-6 * float(read.max())


def attribution_html(
    text, spans, words, scores, target, method, cut_after=None, n_skipped=0, task="sentiment", scale=None
) -> str:
    """The text (a review, a prompt) with each word shaded by its attribution toward `target`, a legend, and the top
    words; `task` names the methods as that task's picker does; scale: the colour scale's top, at least (None: the
    largest word score here; more where other tokens are shaded on the same scale)."""
    signed = is_signed(method)
    cut = len(spans) if cut_after is None else cut_after
    head = word_spans(spans[:cut], words[:cut], scores[:cut])
    tail = word_spans(spans[cut:], words[cut:], scores[cut:])
    segs = head + tail
    scale = max(max((abs(w) for _, _, w in segs), default=0.0), scale or 0.0)
    if cut_after is None:
        body = _render(text, segs, scale, 0, len(text), signed)
    else:
        head_end, tail_start = (head[-1][1] if head else 0), (tail[0][0] if tail else len(text))
        body = (
            _render(text, head, scale, 0, head_end, signed)
            + f' <span style="color:#6b7280;font-style:italic">[… {n_skipped:,} tokens in the middle are '
            "not read by the model …]</span> " + _render(text, tail, scale, tail_start, len(text), signed)
        )
    if signed or not _alike(scores):
        lines = top_words_lines(text, segs, target, signed)
    else:
        lines = [_ALIKE.format(share=float(np.max(scores)))]
    if signed:
        name = label(task, method)
        caption = f"{name}: each word's score toward “{target}”. Hover a word for its value."
    else:
        caption = (
            f"{label(task, method)}: the share of the model's attention on each word. It has no sign: "
            "it shows where the model looks, not which way a word pushes. Hover a word for its share."
        )
    return (
        '<div class="token-highlight">'
        f'<p style="margin:0 0 2px;color:#6b7280;font-size:0.9em">{html.escape(caption)}</p>'
        f"{legend_html(target, scale, signed)}"
        '<div class="token-text" style="white-space:pre-wrap;line-height:1.9;font-size:15px;max-height:26em;'
        'overflow-y:auto;padding:8px 10px;border:1px solid #e5e7eb;border-radius:8px">'
        f"{body}</div>" + "".join(f'<p style="margin:6px 0 0;font-size:0.9em">{line}</p>' for line in lines) + "</div>"
    )


def reader_why(default: dict) -> str:
    """Why a method is the default, for the page: the benchmark's sentence without the command line that made
    it (that is for developers; the README gives it)."""
    return re.sub(r"\s*\(`[^`]*`\)", "", default["why"])


def against_random(*margins: float) -> str:
    """How a method fares against random, from its margins over random on each measure (> 0: better) between the
    numbers as shown, to three decimals: it said "beats random on both" beside 0.000 and 0.000. A margin that is
    not a number (a dash) is neither better nor a tie."""
    margins = [shown(v) for v in margins]  # the difference of two shown numbers, without float noise (NaN: a dash)
    beats, ties = sum(v > 0 for v in margins), sum(v == 0 for v in margins)
    if beats == len(margins):
        return "beats random on both"
    if beats:
        return "beats random on one of the two" + (" and ties on the other" if ties else "")
    if ties == len(margins):
        return "ties with random on both"
    return "does not beat random" + (" (it ties on one)" if ties else "")


def faithfulness_markdown(report, explanation, default: dict | None = None) -> str:
    """The faithfulness numbers on this input beside the random baseline, in Markdown."""
    m, r = report.method, report.random
    verdict = against_random(  # the numbers as the table below writes them
        shown(m.comprehensiveness) - shown(r.comprehensiveness), shown(r.sufficiency) - shown(m.sufficiency)
    )
    lines = [
        f"**How faithful is this view on your {TASKS[explanation.task].unit}?** "
        f"{label(explanation.task, explanation.method)} {verdict}.",
        "",
        "| ranking | comprehensiveness ↑ | sufficiency ↓ |",
        "| --- | --- | --- |",
        f"| this method | {number(m.comprehensiveness)} | {number(m.sufficiency)} |",
        f"| random (mean of 3) | {number(r.comprehensiveness)} | {number(r.sufficiency)} |",
        "",
        f"Comprehensiveness: how much p(“{html.escape(explanation.target)}”) drops when the top 1, 5, 10, 20, "
        "50% of tokens are deleted "
        "(mean); sufficiency: how much it drops when only those are kept (ERASER, DeYoung et al. 2020).",
    ]
    if explanation.delta is not None:
        lines.append(f"Integrated gradients: {explanation.steps} steps, convergence delta {explanation.delta:+.4f}.")
    lines.append(f"Computed in {explanation.seconds:.2f} s; faithfulness in {report.seconds:.2f} s.")
    if default:
        lines.append(f"Default method: **{label(explanation.task, default['method'])}**. {reader_why(default)}")
    return "\n".join(lines)


def deletion_curve(report, target: str, method: str, task: str = "sentiment") -> go.Figure:
    """p(target) as the top 0, 1, 5, 10, 20, 50% of tokens are deleted: this ranking and random ones."""
    x = [0, *report.method.levels]
    fig = go.Figure()
    # "this method", as the table above names it: a method's full name ran past a phone's screen in the legend
    fig.add_scatter(
        x=x, y=report.method.curve, mode="lines+markers", name="this method", line=dict(color="rgb(37,99,235)")
    )
    fig.add_scatter(
        x=x, y=report.random.curve, mode="lines+markers", name="random", line=dict(color=RANDOM_COLOR, dash="dash")
    )
    fig.update_layout(
        # a short title and a subtitle: one line of both ran past the plot's width in the panel's column
        title=dict(
            text="Deletion curve",
            x=0,
            font=dict(size=14),
            subtitle=dict(
                text=f"{PROBABILITY.get(task, 'p')}(“{html.escape(target)}”) as the top tokens are deleted",
                font=dict(size=12, color="#6b7280"),
            ),
        ),
        xaxis=dict(title="% of tokens deleted (highest scores first)", type="category"),
        # short: a vertical title longer than the plot runs into the figure's title
        yaxis=dict(title=f"p(“{html.escape(target)}”)", range=[0, 1.02]),
        height=320,
        margin=dict(l=10, r=10, t=70, b=10),
        font=FONT,
        plot_bgcolor="white",
        legend=dict(orientation="h", y=-0.3),
    )
    name = html.escape(label(task, method))
    fig.update_traces(hovertemplate=f"%{{x}}% deleted: p = %{{y:.3f}}<extra>{name}</extra>", selector=0)
    fig.update_traces(hovertemplate="%{x}% deleted: p = %{y:.3f}<extra>random</extra>", selector=1)
    return fig
