"""Compare two inputs in the app: both predictions side by side and the aligned attention diff.

The model runs only in compare_inputs (compare_reviews, compare_translations); the AlignedAttention it returns (one
kind's maps of both inputs in float16, from pipelines.compare, kept in gr.State) lets layer and head changes redraw the
diff without running it again. The numbers come from pipelines.compare; this module only draws.
"""

import html
import logging
import re

import numpy as np
import plotly.graph_objects as go

from pipelines.compare import AlignedAttention, AlignedToken, align_tokens, shared_share
from pipelines.kinds import KINDS
from pipelines.language_model import PromptError
from pipelines.tasks import LM, SENTIMENT, TRANSLATION

from ..attention.token_labels import display_token
from ..inputs import beam_width, check_text, plural
from ..next_word.handlers import decoding_options
from ..numbers import points
from ..tasks import TASKS

log = logging.getLogger(__name__)
MARK = {"shared": "", "deleted": "−", "inserted": "+"}
MAX_SHOWN_WORDS = 400  # the word diff line is cut after this many words (the plot keeps every token)
WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")
FAILED = "Sorry, the model failed on one of these texts. Please try others."


def _checked(text_a, text_b, max_chars: int, what: str) -> tuple[str | None, str | None, str | None]:
    """(text A, text B, error message)."""
    a = check_text(text_a, max_chars, f"first {what}")
    b = check_text(text_b, max_chars, f"second {what}")
    error = a.error or b.error
    return a.text, b.text, (f"⚠️ {html.escape(error)}" if error else None)


def aligned_labels(tokens: list[AlignedToken]) -> list[str]:
    """Unique, escaped axis labels: 'n:token', with '−' for a token only in A and '+' for one only in B."""
    return [f"{n}:{MARK[t.kind]}{html.escape(display_token(t.text), quote=False)}" for n, t in enumerate(tokens)]


def diff_figure(view: AlignedAttention | None, layer, head) -> go.Figure | None:
    """Heatmap of B minus A for one layer and head over the aligned tokens; gaps where a token is missing."""
    if view is None:
        return None
    layer, head = min(max(int(layer or 0), 0), view.n_layers - 1), min(max(int(head or 0), 0), view.n_heads - 1)
    diff = view.diff(layer, head)
    limit = float(np.nanmax(np.abs(diff))) if np.isfinite(diff).any() else 1.0
    x, y = aligned_labels(view.cols), aligned_labels(view.rows)
    fig = go.Figure(
        go.Heatmap(
            z=diff,
            x=x,
            y=y,
            zmid=0.0,
            zmin=-limit,
            zmax=limit,
            colorscale="RdBu_r",
            hoverongaps=False,
            colorbar=dict(title=dict(text="B − A"), thickness=12),
            hovertemplate="query %{y}<br>key %{x}<br>B − A %{z:+.3f}<extra></extra>",
        )  # fmt: skip
    )
    fig.update_xaxes(tickangle=-60, tickfont=dict(size=10), type="category", title_text="key (attended to)")
    fig.update_yaxes(autorange="reversed", tickfont=dict(size=10), type="category", title_text="query")
    title = (
        f"{KINDS[view.kind].title}, layer {layer + 1}, head {head + 1}: second input minus first (red = more "
        "attention in the second); −token only in the first, +token only in the second (grey: nothing to compare)"
    )
    height = int(min(820, max(480, 260 + 9 * max(len(x), len(y)))))
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left", font=dict(size=14)),
        height=height, margin=dict(l=10, r=10, t=70, b=10), plot_bgcolor="#e5e7eb",
        hoverlabel=dict(bgcolor="white", font_size=13),
    )  # fmt: skip
    return fig


def words(text: str) -> list[str]:
    """The words and punctuation marks of a text, as a reader counts them (never a tokenizer's pieces)."""
    return WORD.findall(text)


def word_diff_html(text_a: str, text_b: str, what: str) -> str:
    """The two texts' words aligned in a line: those only in the first struck through, those only in the second
    underlined (escaped), with the share of the line both have (pipelines.compare.shared_share)."""
    aligned = align_tokens(words(text_a), words(text_b))
    parts = []
    for t in aligned[:MAX_SHOWN_WORDS]:
        text = html.escape(t.text, quote=False)
        marked = {"shared": text, "deleted": f"<del>{text}</del>", "inserted": f"<ins>{text}</ins>"}[t.kind]
        glued = parts and not (t.text[0].isalnum() or t.text[0] == "_")  # punctuation follows its word
        parts.append(marked if not parts else ("" if glued else " ") + marked)
    more = f" … (+{len(aligned) - MAX_SHOWN_WORDS:,} words)" if len(aligned) > MAX_SHOWN_WORDS else ""
    caption = (
        f"{what} ({shared_share(aligned):.0%} of the words line up, in order): <del>only in the first</del>, "
        "<ins>only in the second</ins>:"
    )
    return f'<div class="compare-tokens"><span class="compare-caption">{caption}</span> {"".join(parts)}{more}</div>'


def _side(title: str, value: str, detail: str) -> str:
    return (
        f'<div class="compare-side"><div class="compare-title">{title}</div>'
        f'<div class="compare-label">{html.escape(value)}</div><div class="compare-detail">{detail}</div></div>'
    )


STYLE = (
    "<style>.compare-sides{display:flex;gap:1rem;flex-wrap:wrap}.compare-side{flex:1;min-width:14rem;"
    "border:1px solid #d1d5db;border-radius:8px;padding:.6rem}.compare-label{font-size:1.3rem;font-weight:600}"
    ".compare-tokens{margin-top:.6rem;line-height:1.8}.compare-tokens del{color:#b91c1c}"
    ".compare-tokens ins{color:#15803d}.compare-caption{color:#6b7280}</style>"
)


def _sentiment_html(cmp, text_a: str, text_b: str) -> str:
    a, b = cmp.a, cmp.b
    label = a.label  # how the first review's label moved
    change = cmp.change()[label]
    summary = (
        f"<p class='compare-change'>P({html.escape(label)}): {a.probabilities[label]:.1%} → "
        f"{b.probabilities[label]:.1%} ({points(change)})"
        f"{'; the label flips' if a.label != b.label else ''}.</p>"
    )
    sides = "".join(
        _side(name, r.label, f"{r.confidence:.1%} · {len(r.tokens):,} tokens read")
        for name, r in (("First", a), ("Second", b))
    )
    return f'{STYLE}<div class="compare-sides">{sides}</div>{summary}{word_diff_html(text_a, text_b, "Words")}'


def _outputs_html(cmp, text_a: str, text_b: str, output, detail, titles: tuple[str, str]) -> str:
    """The two results side by side (output(r): the words made, detail(r): a line about them), then the word
    differences of the two inputs and of the two outputs, under titles (inputs', outputs')."""
    sides = "".join(
        _side(name, output(r) or "(no words)", detail(r)) for name, r in (("First", cmp.a), ("Second", cmp.b))
    )
    inputs = word_diff_html(text_a, text_b, titles[0])
    outputs = word_diff_html(output(cmp.a), output(cmp.b), titles[1])
    return f'{STYLE}<div class="compare-sides">{sides}</div>{inputs}{outputs}'


def _translation_html(cmp, text_a: str, text_b: str) -> str:
    def detail(r) -> str:
        return f"log-probability {r.score:.2f} · {len(r.steps)} steps"

    return _outputs_html(cmp, text_a, text_b, lambda r: r.translation, detail, ("German", "English"))


def _first_token(result) -> str:
    """The first new token of a continuation and its probability, in words."""
    if not result.steps:
        return "no new token"
    first = result.steps[0]
    return f"first new token “{html.escape(display_token(first.token))}” at {first.probability:.1%}"


def _lm_html(cmp, text_a: str, text_b: str) -> str:
    def detail(r) -> str:
        return f"{_first_token(r)} · {plural(len(r.tokens), 'token')} read"

    return _outputs_html(cmp, text_a, text_b, lambda r: r.continuation, detail, ("Prompts", "Continuations"))


# task -> its side-by-side HTML
SIDES = {SENTIMENT.name: _sentiment_html, TRANSLATION.name: _translation_html, LM.name: _lm_html}


def compare_inputs(task: str, pipe, text_a: str, text_b: str, layer=0, head=0, **options):
    """Run the task's model on two inputs: (state, side-by-side HTML, diff of its main kind of attention for the
    layer and head). options: the task's comparison's (a translation's beam_size)."""
    spec = TASKS[task]
    a, b, error = _checked(text_a, text_b, spec.max_chars, spec.unit)
    if error:
        return None, error, None
    try:
        cmp = spec.task.compare(pipe, a, b, **options)
    except PromptError as e:  # the language model's own words: an empty prompt, one too long for the new tokens
        return None, f"⚠️ {html.escape(str(e)[:1].upper() + str(e)[1:])}.", None
    except ValueError:
        return None, f"⚠️ The model found no words to read in one of the {spec.units}.", None
    except Exception:
        log.exception("comparison failed")
        return None, f"⚠️ {FAILED}", None
    view = cmp.attention(spec.task.main).astype(np.float16)
    return view, SIDES[task](cmp, a, b), diff_figure(view, layer, head)


def compare_reviews(pipe, text_a: str, text_b: str, layer=0, head=0):
    """Run the classifier on two reviews: (state, side-by-side HTML, diff figure for the layer and head)."""
    return compare_inputs(SENTIMENT.name, pipe, text_a, text_b, layer, head)


def compare_translations(pipe, text_a: str, text_b: str, decoding="beam search", beam_size=4, layer=0, head=0):
    """Translate two German sentences with the same decoding: (state, side-by-side HTML, cross-attention diff)."""
    return compare_inputs(
        TRANSLATION.name, pipe, text_a, text_b, layer, head, beam_size=beam_width(decoding, beam_size)
    )


def compare_prompts(pipe, text_a: str, text_b: str, decoding=None, temperature=None, top_p=None, seed=None,
                    max_new_tokens=None, chat=False, layer=0, head=0):  # fmt: skip
    """Continue two prompts with the same decoding options (as the tab's: viz.next_word.handlers.decoding_options;
    sampled without a seed, one seed drawn for both): (state, side-by-side HTML, causal self-attention diff over the
    aligned sequences, prompt and new tokens)."""
    chosen, error = decoding_options(decoding, temperature, top_p, seed, max_new_tokens, chat)
    if error:
        return None, f"⚠️ {html.escape(error)}", None
    return compare_inputs(LM.name, pipe, text_a, text_b, layer, head, decoding=chosen)
