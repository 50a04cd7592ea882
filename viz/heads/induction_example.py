"""The worked example of the Next word tab: the induction circuit, found by the page on random words written twice.
The model reads the words (one pass); the head that puts most weight, from each token of the second copy, on the
token after that token's earlier occurrence is its strongest induction head here; its K-composition lists the earlier
heads whose output its keys read, and one cell of the second copy is taken apart (viz.attention.score_parts). Every
number is the model's or the pipeline's: nothing here is assumed about which heads they are."""

import random
from dataclasses import dataclass

import numpy as np
import torch

from pipelines.language_model import PromptError
from pipelines.lens.induction_circuit import InductionCircuit

from ..attention.score_parts import parts_figure, parts_note
from .composition import composition_figure, head_note

# Common words, each one token with its leading space in most tokenizers; the measure below reads the ids, so a word
# cut in two only adds tokens to both copies.
WORDS = (
    "apple river window garden silver market yellow doctor summer pocket orange engine forest castle bottle winter "
    "camera monkey rabbit pencil button candle jacket island ladder mirror planet rocket saddle tunnel violin wallet "
    "basket blanket cookie dragon feather hammer kettle lemon magnet needle parrot pillow puzzle ribbon spider tomato"
).split()
N_WORDS = 12


def repeated_words(seed: int = 0, n: int = N_WORDS) -> str:
    """n random words (seeded), then the same n again: 'apple river … apple river …'."""
    words = random.Random(seed).sample(WORDS, n)
    return " ".join(words + words)


def repeat_cells(ids: list[int]) -> list[tuple[int, int]]:
    """(query, key) for each position whose token occurred before: the key is the token after its latest earlier
    occurrence (where an induction head looks, to predict that the sequence repeats); only keys before the query."""
    seen: dict[int, int] = {}
    cells = []
    for q, t in enumerate(ids):
        p = seen.get(t)
        if p is not None and p + 1 < q:
            cells.append((q, p + 1))
        seen[t] = q
    return cells


def induction_scores(attentions: list, cells: list[tuple[int, int]]) -> np.ndarray:
    """(L, H) each head's mean weight on the cells' keys from their queries (attentions: per layer (H, T, T))."""
    q, k = (np.array([c[i] for c in cells]) for i in (0, 1))
    return np.stack([np.asarray(torch.as_tensor(a).float()[:, q, k].mean(-1)) for a in attentions])  # (L, H)


def _read(pipe, seed: int) -> tuple:
    """(text, result): the words read by the model, as many as it reads (a small model reads fewer)."""
    for n in (N_WORDS, N_WORDS // 2, N_WORDS // 4):
        text = repeated_words(seed, n)
        try:
            return text, pipe(text, 1)
        except PromptError:  # longer than the model reads
            continue
    raise ValueError("the model reads too few tokens for words written twice")


@dataclass(frozen=True)
class Circuit:
    """What the worked example found and draws."""

    text: str  # the prompt read: random words written twice
    head: tuple[int, int]  # the strongest induction head (layer, head from 0)
    score: float  # its mean weight on the token after the earlier occurrence
    composition: object  # the figure
    head_note: str
    parts: object  # the figure of one cell taken apart
    parts_note: str
    confirmed: str  # the confirmation by switching heads off (confirmation_note), Markdown


def induction_circuit(pipe, seed: int = 0) -> Circuit:
    """Run the worked example on `pipe` (a language model's pipeline): read the words once, find the strongest
    induction head, its K-composition and copying, and take its score at the last repeated token apart; then confirm
    the circuit on random tokens written twice (pipe.induction_circuit: a few passes)."""
    text, result = _read(pipe, seed)
    ids = result.prompt_ids
    cells = repeat_cells(ids)
    if not cells:
        raise ValueError("no token of the words repeats")
    n = len(ids)
    scores = induction_scores([a[:, :n, :n] for a in result.attentions], cells)  # (L, H)
    layer, head = (int(x) for x in np.unravel_index(int(np.argmax(scores)), scores.shape))
    comp, copying = pipe.composition("k"), pipe.copying_scores()
    copied = pipe.copied_tokens(layer, head)
    q, k = cells[-1]
    row = np.array(torch.as_tensor(result.attentions[layer][head, q, : q + 1]).float(), dtype=np.float64)  # a copy
    row[k] = np.inf  # (q + 1,) the keys it may read, the clicked one left out
    least = int(np.argmin(row))
    parts = pipe.score_attribution(text, layer, head, q, k, kind="causal")
    other = pipe.score_attribution(text, layer, head, q, least, kind="causal")
    tokens = result.sequence_texts
    names = tuple(f"`{i}:{tokens[i].strip().replace('`', '')}`" for i in (q, k, least))
    return Circuit(
        text, (layer, head), float(scores[layer, head]), composition_figure(comp, copying),
        head_note(comp, copying, copied, layer, head),
        parts_figure(parts, other, (f"key {names[1].strip('`')}", f"least-weighed key {names[2].strip('`')}")),
        parts_note(parts, other, names[:2], names[2]), confirmation_note(pipe.induction_circuit()),
    )  # fmt: skip


def confirmation_note(circuit: InductionCircuit) -> str:
    """The confirmation in words: the strongest induction head on random tokens written twice, the earlier heads
    carrying its key side at the repeat, and its induction score with them switched off, beside the control."""
    if not circuit.heads:
        return ""
    h = circuit.heads[0]
    if not h.carriers:
        return f"**Switching heads off**: L{h.layer}H{h.head} is in layer 0; no earlier head to switch off."
    carriers = ", ".join(f"**L{layer}H{head}** ({value:+.2f})" for layer, head, value in h.carriers)
    first = "L{}H{}".format(*h.carriers[0][:2])
    return (
        f"**Confirmed by switching heads off**, on {circuit.sequences} sequences of {circuit.length} random tokens "
        f"written twice: the strongest induction head there, **L{h.layer}H{h.head}**, puts {h.score:.3f} of its "
        f"weight on the token after the earlier copy. The earlier heads carrying most of its key side at the repeat "
        f"(their key-side totals): {carriers}. With those {len(h.carriers)} switched off it puts **{h.without:.3f}** "
        f"there ({first} alone off: {h.without_first:.3f}); with as many earlier heads off that carry least (the "
        f"control): {h.control:.3f}."
    )
