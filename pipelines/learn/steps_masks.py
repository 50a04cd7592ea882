"""Masks: the padding mask of a batch (the input beside a longer one: its padding keys get exactly 0 weight, and its
map equals the map of the input alone) and the causal mask of a model that reads left to right."""

import numpy as np
import torch

from pipelines.learn.code import code_span, shapes
from pipelines.learn.model_pass import Pass, keeper
from pipelines.learn.open_math import biggest, f64
from pipelines.learn.walk import Check, Step
from transformer import masks as mask_module
from transformer.masks import causal_mask

EXTRA = 6  # the longer row has this many tokens more: the input's row gets as many padding keys


def batched(p: Pass) -> tuple[torch.Tensor, list[int]]:
    """The input beside a longer row (the input and its first EXTRA tokens again), right-padded: (2, T + EXTRA)."""
    own = list(p.read.ids)
    rows = [own, own + own[:EXTRA]]
    pad = p.model.config.pad_id
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad] * (T - len(r)) for r in rows], device=p.ids.device)  # (2, T)
    return ids, [len(r) for r in rows]


def _text(p: Pass, T: int, n_pad: int) -> str:
    text = (
        f"Texts of different lengths run together in a batch: the shorter is padded, here with {n_pad} padding "
        f"tokens after your text's {T}. A mask (True = attend) keeps padding out of every softmax: its keys get "
        "exactly 0 weight, so your text's map is the same as when it ran alone."
    )
    if p.stack.causal:
        text += (
            " A model that writes text must not read ahead: its causal mask lets each token attend only to itself "
            "and the tokens before it, so the map's upper triangle is 0."
        )
    elif p.family.writes:  # beside the encoder the stack walked here
        text += " The decoder also has a causal mask: each English token reads only the ones before it."
    return text


def masks(p: Pass) -> Step:
    ids, lengths = batched(p)
    point = p.stack.point(0, "attn.hook_pattern")
    cache = {}
    p.hooked([(point, keeper(cache, stop=True))], ids, lengths)
    padded = cache[point][0]  # (H, Tb, Tb) the input's row of the batch
    T, Tb = len(p.read.ids), ids.size(1)
    alone = p.at(point)  # (H, T, T)
    difference = biggest(f64(padded[:, :T, :T]) - f64(alone))
    arrays = {"mask": np.arange(Tb)[None, :] < np.array(lengths)[:, None],  # (2, Tb) True = a token
              "weights": padded[0].float().cpu().numpy(), "difference": np.array(difference)}  # fmt: skip
    hidden = [f64(padded[:, :T, T:])]  # the padding keys, from the real queries
    if p.stack.causal:
        arrays["causal"] = causal_mask(T, T)[0, 0].numpy()
        hidden.append(np.where(arrays["causal"], 0.0, f64(alone)))  # the future keys
    elif p.family.writes:  # the decoder's mask over its own output
        Tt = len(p.read.extra["target"])
        arrays["causal"] = causal_mask(Tt, Tt)[0, 0].numpy()
    pads = tuple(f"{i}:<pad>" for i in range(T, Tb))
    return p.step(
        "masks",
        title="Masks: padding and the causal mask",
        text=_text(p, T, Tb - T),
        part="masks",
        labels=p.labels + pads,
        arrays=arrays,
        code=code_span(mask_module, "def padding_mask", "return (k_pos", shapes(batch=ids, pattern=cache[point])),
        check=Check(
            f"{point} in a padded batch: the weight on hidden keys, and the padded row vs the input alone",
            max(biggest(*hidden), difference),
        ),
    )
