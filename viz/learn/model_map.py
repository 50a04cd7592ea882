"""The map of the whole model above the Learn tab's steps, drawn from a Walk's ModelMap (its real sizes) as HTML.

tokens -> embeddings (+ positions) -> N blocks (norm, attention with its heads and key/value heads, feed-forward, the
residual stream; cross-attention in a decoder that has it) -> output. The current step's part is highlighted; a part
that a step of the path explains is a button carrying that step's index (data-step), which learn_map.js sends to the
server as a select event. Everything shown is escaped: the map holds sizes and names, nothing typed is rendered.
"""

import html
from dataclasses import dataclass

from pipelines.learn.walk import ModelMap, Step

# A step's part (Step.part) -> the map's part it lights, where the two are named differently
ALIASES = {"embeddings": "embed", "embedding": "embed", "position": "positions", "multi_head": "heads",
           "qkv": "attention", "masks": "mask", "ffn": "feed_forward", "mlp": "feed_forward", "block": "residual",
           "norms": "norm", "classifier": "output", "unembed": "output", "next_token": "output",
           "cross_attention": "cross"}  # fmt: skip

# A part no step lights goes, on a click, to the step of the part beside it: the tokens to their embeddings, the
# norms to the block's step (the residual stream, the norms and how much each part adds)
NEAREST = {"tokens": "embed", "norm": "residual"}


@dataclass(frozen=True)
class Part:
    key: str  # "tokens", "embed", ...
    name: str  # shown: "Embeddings"
    size: str  # shown under it: "128 numbers a token"


def part_of(step: Step) -> str:
    """The map's part a step lights."""
    return ALIASES.get(step.part, step.part)


def _attention(m: ModelMap) -> str:
    kv = f", {m.n_kv_heads} key/value heads" if m.n_kv_heads and m.n_kv_heads != m.n_heads else ""
    return f"{m.n_heads} heads of {m.d_model // max(m.n_heads, 1)}{kv}"


def parts(m: ModelMap, n_tokens: int) -> tuple[list[Part], list[Part], list[Part]]:
    """(the parts before the blocks, those inside a block, those after), in the data's order."""
    before = [
        Part("tokens", "Tokens", f"{n_tokens} of a vocabulary of {m.vocab:,}"),
        Part("embed", "Embeddings", f"{m.d_model} numbers a token"),
        Part("positions", "Positions", m.positions),
    ]
    inside = [
        Part("norm", "Norm", m.norm),
        Part("attention", "Attention", "queries, keys, values"),
        Part("mask", "Mask", "causal" if m.family == "decoder" else "padding"),
        Part("heads", "Heads", _attention(m)),
    ]
    inside += [Part("cross", "Cross-attention", "decoder → encoder")] if m.family == "encoder-decoder" else []
    inside += [
        Part("feed_forward", "Feed-forward", f"{m.d_model} → {m.d_ff} → {m.d_model}"),
        Part("residual", "Residual stream", f"width {m.d_model}, added to by each part"),
    ]
    return before, inside, [Part("output", "Output", m.output)]


def blocks_title(m: ModelMap) -> str:
    if m.family == "encoder-decoder":
        return f"{m.n_layers} encoder blocks + {m.n_decoder_layers} decoder blocks"
    return f"{m.n_layers} blocks" + (" (causal)" if m.family == "decoder" else "")


def first_steps(steps: tuple[Step, ...]) -> dict[str, int]:
    """Each map part -> the index of the first step of the path that lights it."""
    found: dict[str, int] = {}
    for k, step in enumerate(steps):
        found.setdefault(part_of(step), k)
    return found | {part: found[near] for part, near in NEAREST.items() if near in found and part not in found}


def _part_html(part: Part, current: str, targets: dict[str, int]) -> str:
    classes = "learn-part" + (" is-current" if part.key == current else "")
    label = f"<b>{html.escape(part.name)}</b><small>{html.escape(part.size)}</small>"
    aria = ' aria-current="step"' if part.key == current else ""
    if part.key not in targets:
        return f'<span class="{classes}" data-part="{part.key}"{aria}>{label}</span>'
    step = targets[part.key]
    title = html.escape(f"Go to step {step + 1}", quote=True)
    return (f'<button type="button" class="{classes}" data-part="{part.key}" data-step="{step}" title="{title}"'
            f"{aria}>{label}</button>")  # fmt: skip


def map_html(m: ModelMap, steps: tuple[Step, ...], current: int) -> str:
    """The map of the model the current step runs on, that step's part highlighted, each part with a step a button."""
    step = steps[current]
    lit, targets = part_of(step), first_steps(steps)
    before, inside, after = parts(m, len(step.labels))
    arrow = '<span class="learn-arrow" aria-hidden="true">→</span>'
    head = f"{html.escape(step.model)}: {html.escape(m.family)}"
    flow = arrow.join(_part_html(p, lit, targets) for p in before)
    block = "".join(_part_html(p, lit, targets) for p in inside)
    blocks = (f'<div class="learn-blocks"><div class="learn-blocks-title">{html.escape(blocks_title(m))}</div>'
              f'<div class="learn-blocks-parts">{block}</div></div>')  # fmt: skip
    tail = "".join(_part_html(p, lit, targets) for p in after)
    return (f'<div class="learn-map"><div class="learn-map-title">The model: {head}</div>'
            f'<div class="learn-flow">{flow}{arrow}{blocks}{arrow}{tail}</div></div>')  # fmt: skip
