"""Token labels for plots, how much a prediction leans on each token, and safe highlighted text.

Everything from the user's input that ends up in HTML or in a plotly label goes through html.escape.
"""

import html

import numpy as np

from pipelines.attribution import attention_rollout  # one rollout, computed in pipelines/

MAX_LABEL_CHARS = 16


def display_token(text: str) -> str:
    """A short, visible form of a token's text ('␣' for a token that covers only whitespace)."""
    t = " ".join(text.split())
    if not t:
        return "␣"
    return t if len(t) <= MAX_LABEL_CHARS else t[: MAX_LABEL_CHARS - 1] + "…"


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique, escaped axis labels 'i:token'. Plotly merges repeated category labels, so the index stays.

    Escaped because plotly reads a few HTML tags (<b>, <a>, <br>) in labels; it shows &lt; as '<'.
    """
    return [f"{i}:{html.escape(display_token(t), quote=False)}" for i, t in enumerate(tokens)]


def token_importance(pool_weights: np.ndarray, attentions: list[np.ndarray], mode: str) -> np.ndarray:
    """(T,) weights that sum to 1: the pooling weights the classifier reads, or those traced back
    through every layer to the input tokens ('rollout')."""
    w = pool_weights.astype(np.float64)
    if mode == "rollout":
        w = w @ attention_rollout(attentions)
    return w / max(w.sum(), 1e-12)


def _segments(spans: list[tuple[int, int]], weights: np.ndarray) -> list[list]:
    """[start, end, weight] per visible piece of text. Byte tokens of one character (an emoji) share its
    span and are merged; a token that covers no characters gives its weight to the next piece."""
    segs: list[list] = []
    carry = 0.0
    for (s, e), w in zip(spans, weights):
        w = float(w) + carry
        carry = 0.0
        if e <= s:
            carry = w
        elif segs and s < segs[-1][1]:
            segs[-1][1] = max(segs[-1][1], e)
            segs[-1][2] += w
        else:
            segs.append([s, e, w])
    if carry and segs:
        segs[-1][2] += carry
    return segs


def _words(text: str, segs: list[list]) -> list[list]:
    """Segments joined into words (pieces with nothing between them), weights summed: for the top list."""
    words: list[list] = []
    for s, e, w in segs:
        if words and s == words[-1][1] and text[s : s + 1].isalnum() and text[s - 1 : s].isalnum():
            words[-1][1], words[-1][2] = e, words[-1][2] + w
        else:
            words.append([s, e, w])
    return words


def _gap(text: str) -> str:
    """Text between two tokens: whitespace (at most a paragraph break), or characters the tokenizer
    dropped (like <br />), shown dimmed."""
    if not text:
        return ""
    if not text.strip():
        return "\n\n" if text.count("\n") >= 2 else ("\n" if "\n" in text else " ")
    return f'<span style="color:#9ca3af">{html.escape(text)}</span>'


def _render(text: str, segs: list[list], wmax: float, start: int, end: int) -> str:
    out, pos = [], start
    for s, e, w in segs:
        out.append(_gap(text[pos:s]))
        alpha = 0.85 * (w / wmax) ** 0.6 if wmax > 0 else 0.0
        out.append(
            f'<span class="tok" title="{100 * w:.2f}%" '
            f'style="background:rgba(234,88,12,{alpha:.3f});border-radius:3px;padding:1px 0">'
            f"{html.escape(text[s:e])}</span>"
        )
        pos = e
    out.append(_gap(text[pos:end]))
    return "".join(out)


def highlight_html(
    text: str,
    spans: list[tuple[int, int]],
    weights: np.ndarray,
    cut_after: int | None = None,
    n_skipped: int = 0,
    caption: str = "",
) -> str:
    """The input text with each token's background as dark as its weight, plus the top tokens.

    spans are character offsets into `text`. cut_after: the model read tokens [:cut_after] and the rest
    after a gap of n_skipped tokens it never saw (a long review cut to head + tail).
    """
    wmax = float(np.max(weights)) if len(weights) else 0.0
    cut = len(spans) if cut_after is None else cut_after
    head = _segments(spans[:cut], weights[:cut])
    tail = _segments(spans[cut:], weights[cut:])
    if cut_after is None:
        body = _render(text, head, wmax, 0, len(text))
    else:
        head_end = head[-1][1] if head else 0
        tail_start = tail[0][0] if tail else len(text)
        body = (
            _render(text, head, wmax, 0, head_end)
            + f' <span style="color:#6b7280;font-style:italic">[… {n_skipped:,} tokens in the middle are '
            "not read by the model …]</span> " + _render(text, tail, wmax, tail_start, len(text))
        )
    top = sorted(_words(text, head) + _words(text, tail), key=lambda seg: -seg[2])[:8]
    top_line = " · ".join(f"“{html.escape(display_token(text[s:e]))}” {100 * w:.1f}%" for s, e, w in top)
    return (
        '<div class="token-highlight">'
        f'<p style="margin:0 0 6px;color:#6b7280;font-size:0.9em">{html.escape(caption)}</p>'
        '<div class="token-text" style="white-space:pre-wrap;line-height:1.9;font-size:15px;max-height:26em;'
        'overflow-y:auto;padding:8px 10px;border:1px solid #e5e7eb;border-radius:8px">'
        f"{body}</div>"
        f'<p style="margin:6px 0 0;font-size:0.9em"><b>Leaned on most:</b> {top_line}</p>'
        "</div>"
    )
