"""Token labels for plots (short, visible, unique, escaped) and the escaped gaps between highlighted words.

Everything from the user's input that ends up in HTML or in a plotly label goes through html.escape. A map's tokens
travel as a TokenAxis: the tokens themselves beside the labels built from them once, so no view reads a token back
out of its label.
"""

import html
from collections.abc import Sequence
from dataclasses import dataclass

MAX_LABEL_CHARS = 16


def display_token(text: str) -> str:
    """A short, visible form of a token's text ('␣' for a token that covers only whitespace)."""
    t = " ".join(text.split())
    if not t:
        return "␣"
    return t if len(t) <= MAX_LABEL_CHARS else t[: MAX_LABEL_CHARS - 1] + "…"


def token_label(text: str) -> str:
    """A token as a plot shows it: display_token, escaped (plotly reads a few HTML tags (<b>, <a>, <br>) in labels;
    it shows &lt; as '<')."""
    return html.escape(display_token(text), quote=False)


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique, escaped axis labels 'i:token'. Plotly merges repeated category labels, so the index stays."""
    return [f"{i}:{token_label(t)}" for i, t in enumerate(tokens)]


@dataclass(frozen=True)
class TokenAxis:
    """The tokens along one side of a map, and their axis labels built once from them: the figures draw the labels,
    the views read the tokens."""

    tokens: list[str]  # the token texts (AttentionMaps.queries or keys), in the axis's order
    labels: list[str]  # unique escaped 'i:token' labels (axis_labels), i the token's position in the whole input

    @classmethod
    def of(cls, tokens: Sequence[str]) -> "TokenAxis":
        return cls(list(tokens), axis_labels(list(tokens)))

    def __len__(self) -> int:
        return len(self.tokens)

    def kept(self, positions: Sequence[int]) -> "TokenAxis":
        """The tokens at these positions (the others hidden), each with its own label."""
        return TokenAxis([self.tokens[i] for i in positions], [self.labels[i] for i in positions])

    def blocks(self, starts: Sequence[int]) -> list[str]:
        """Labels of token blocks starting at `starts` (small multiples of a long input): 'a–b:token…', the first
        token's, positions counted along this axis."""
        ends = [*starts[1:], len(self.tokens)]
        return [f"{a}–{b - 1}:{token_label(self.tokens[a])}…" for a, b in zip(starts, ends)]


def _gap(text: str) -> str:
    """Text between two tokens: whitespace (at most a paragraph break), or characters the tokenizer
    dropped (like <br />), shown dimmed."""
    if not text:
        return ""
    if not text.strip():
        return "\n\n" if text.count("\n") >= 2 else ("\n" if "\n" in text else " ")
    return f'<span style="color:#9ca3af">{html.escape(text)}</span>'
