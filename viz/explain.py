"""Token labels for plots (short, visible, unique, escaped) and the escaped gaps between highlighted words.

Everything from the user's input that ends up in HTML or in a plotly label goes through html.escape.
"""

import html

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


def _gap(text: str) -> str:
    """Text between two tokens: whitespace (at most a paragraph break), or characters the tokenizer
    dropped (like <br />), shown dimmed."""
    if not text:
        return ""
    if not text.strip():
        return "\n\n" if text.count("\n") >= 2 else ("\n" if "\n" in text else " ")
    return f'<span style="color:#9ca3af">{html.escape(text)}</span>'
