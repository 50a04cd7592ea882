"""A PNG of one attention map from a real model on an example sentence, for the model card (pillow only)."""

import unicodedata
from dataclasses import dataclass

import torch
from PIL import Image, ImageDraw, ImageFont

SENTIMENT_EXAMPLE = "The acting was wonderful, but the plot made no sense at all."
TRANSLATION_EXAMPLE = "Ein Mann fährt mit dem Fahrrad über eine Brücke."
MAX_TOKENS = 40  # more rows or columns than this would make an unreadable figure

CELL = 26  # pixels per attention weight
PAD = 8
INK, GRID = (33, 37, 41), (222, 226, 230)
HOT = (8, 48, 107)  # the colour of the largest weight; zero is white


@dataclass
class AttentionFigure:
    """One attention map with its labels: rows are queries, columns are keys."""

    weights: torch.Tensor  # (Tq, Tk), each row sums to 1
    row_labels: list[str]
    col_labels: list[str]
    title: str
    caption: str  # one sentence for the model card: what the figure shows

    def image(self) -> Image.Image:
        return render_heatmap(self.weights, self.row_labels, self.col_labels, self.title)


def focused_head(attn: torch.Tensor) -> int:
    """The head whose rows have the lowest mean entropy: the one with the clearest pattern to look at."""
    # attn  # (H, Tq, Tk)
    entropy = -(attn * attn.clamp_min(1e-12).log()).sum(-1).mean(-1)  # (H,)
    return int(entropy.argmin())


def sentiment_figure(pipe, text: str = SENTIMENT_EXAMPLE) -> AttentionFigure:
    """Self-attention of the classifier's last layer, its most focused head, on `text`."""
    res = pipe(text)
    layer = len(res.attentions) - 1
    attn = res.attentions[layer][:, :MAX_TOKENS, :MAX_TOKENS]  # (H, T, T)
    head = focused_head(attn)
    labels = [_label(t, pipe.tokenizer.decode([t.id], skip_special_tokens=False)) for t in res.tokens[:MAX_TOKENS]]
    return AttentionFigure(
        weights=attn[head],
        row_labels=labels,
        col_labels=labels,
        title=f"Self-attention, layer {layer + 1} of {len(res.attentions)}, head {head + 1}  "
        f"(prediction: {res.label}, {res.confidence:.0%})",
        caption=f"Self-attention of layer {layer + 1}, head {head + 1} of this model on the review "
        f'"{text}" (predicted {res.label}). Row = the token that looks, column = the token it looks at; '
        "darker = more weight.",
    )


def translation_figure(pipe, text: str = TRANSLATION_EXAMPLE) -> AttentionFigure:
    """Cross-attention of the decoder's last layer, its most focused head, translating `text`."""
    res = pipe(text)
    layer = len(res.cross_attentions) - 1
    attn = res.cross_attentions[layer][:, :MAX_TOKENS, :MAX_TOKENS]  # (H, Tt, Ts)
    head = focused_head(attn)
    src = [_label(t, pipe.token_text(t.id)) for t in res.source_tokens[:MAX_TOKENS]]
    return AttentionFigure(
        weights=attn[head],
        row_labels=res.target_tokens[:MAX_TOKENS],
        col_labels=src,
        title=f"Cross-attention, decoder layer {layer + 1} of {len(res.cross_attentions)}, head {head + 1}",
        caption=f"Cross-attention of decoder layer {layer + 1}, head {head + 1} of this model translating "
        f'"{text}" into "{_shorten(res.translation)}". Row = the English token being produced, column = the German '
        "token it looks at; darker = more weight.",
    )


def _shorten(text: str, n: int = 100) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _label(span, decoded: str) -> str:
    """What the user typed for a token; else the token itself ('</s>'); '·' for a piece of a character."""
    if span.text:
        return span.text
    decoded = decoded.strip()
    return "·" if not decoded or "\ufffd" in decoded else decoded


def render_heatmap(weights: torch.Tensor, row_labels: list[str], col_labels: list[str], title: str) -> Image.Image:
    """A white-to-blue grid of `weights` (Tq, Tk) with query labels on the left and key labels on top."""
    Tq, Tk = weights.shape
    assert len(row_labels) == Tq and len(col_labels) == Tk, (weights.shape, len(row_labels), len(col_labels))
    font = _font(13)
    rows, cols, title = (
        [_printable(s, font) for s in row_labels],
        [_printable(s, font) for s in col_labels],
        _printable(title, font),
    )
    row_w = max(_text_size(font, s)[0] for s in rows) + PAD
    col_h = max(_text_size(font, s)[0] for s in cols) + PAD
    title_w, title_h = _text_size(font, title)
    left, top = PAD + row_w, PAD + title_h + PAD + col_h
    width = max(left + Tk * CELL + PAD, title_w + 2 * PAD)
    img = Image.new("RGB", (width, top + Tq * CELL + PAD), "white")
    draw = ImageDraw.Draw(img)
    draw.text((PAD, PAD), title, font=font, fill=INK)

    # Colour by weight relative to the largest one, so a diffuse map is still readable.
    scale = float(weights.max()) or 1.0
    for i in range(Tq):
        for j in range(Tk):
            x, y = left + j * CELL, top + i * CELL
            draw.rectangle([x, y, x + CELL - 1, y + CELL - 1], fill=heat(float(weights[i, j]) / scale), outline=GRID)
    for i, s in enumerate(rows):
        w, h = _text_size(font, s)
        draw.text((left - PAD // 2 - w, top + i * CELL + (CELL - h) // 2), s, font=font, fill=INK)
    for j, s in enumerate(cols):
        w, h = _text_size(font, s)
        label = Image.new("RGBA", (w + 2, h + 4), (255, 255, 255, 0))
        ImageDraw.Draw(label).text((0, 0), s, font=font, fill=INK)
        label = label.rotate(90, expand=True)  # reads bottom to top, ends just above its column
        img.paste(label, (left + j * CELL + (CELL - label.width) // 2, top - PAD // 2 - label.height), label)
    return img


def heat(x: float) -> tuple[int, int, int]:
    """White at 0, HOT at 1."""
    x = min(max(x, 0.0), 1.0)
    return tuple(round(255 + (c - 255) * x) for c in HOT)


def _font(size: int):
    """A TrueType font if one is installed (full Unicode), else pillow's own (Latin letters only)."""
    for name in ("DejaVuSans.ttf", "Arial.ttf", "LiberationSans-Regular.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)


def _printable(text: str, font) -> str:
    """`text` with characters the font has no glyph for spelled without accents (ä -> a), or '?'."""
    missing = bytes(font.getmask("\U0010fffd"))  # what the font draws for a character it lacks

    def ok(ch: str) -> bool:
        return ch == " " or bytes(font.getmask(ch)) != missing

    out = []
    for ch in text:
        if ok(ch):
            out.append(ch)
            continue
        plain = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
        plain = {"ß": "ss", "␣": "_", "▁": "_"}.get(ch, plain)
        out.append(plain if plain and all(ok(c) for c in plain) else "?")
    return "".join(out)


def _text_size(font, text: str) -> tuple[int, int]:
    box = font.getbbox(text or " ")
    return box[2] - box[0], box[3]


LM_EXAMPLE = "This movie was not bad at all, I actually"


def lm_figure(pipe, text: str = LM_EXAMPLE) -> AttentionFigure:
    """Causal self-attention of the last layer, its most focused head, over `text` and the tokens it wrote."""
    res = pipe(text, max_new_tokens=8)
    layer = len(res.attentions) - 1
    attn = res.attentions[layer][:, :MAX_TOKENS, :MAX_TOKENS]  # (H, T, T)
    head = focused_head(attn)
    labels = res.sequence_texts[:MAX_TOKENS]
    return AttentionFigure(
        weights=attn[head],
        row_labels=labels,
        col_labels=labels,
        title=f"Causal self-attention, layer {layer + 1} of {len(res.attentions)}, head {head + 1}",
        caption=f"Causal self-attention of layer {layer + 1}, head {head + 1} of this model reading "
        f'"{text}" and writing "{_shorten(res.continuation)}". Row = the token that looks, column = the token it '
        "looks at (only earlier ones); darker = more weight.",
    )
