"""walk(pipe, text): one cached pass of the model over the text, then every step of its family from that pass."""

from collections.abc import Callable
from pathlib import Path

import torch

from pipelines.learn import (
    steps_attention,
    steps_block,
    steps_input,
    steps_masks,
    steps_output,
    steps_positions,
    steps_training,
)
from pipelines.learn.families import family_of
from pipelines.learn.model_pass import Pass, cached_points, keeper, labels
from pipelines.learn.walk import Step, Walk

# Every step a walk can have, in the tutorial order; a family's own steps (families.py) are among them.
BUILDERS: dict[str, Callable[[Pass], Step]] = {
    "tokens": steps_input.tokens,
    "plain_attention": steps_input.plain_attention,
    "qkv": steps_attention.qkv,
    "scaling": steps_attention.scaling,
    "masks": steps_masks.masks,
    "multi_head": steps_attention.multi_head,
    "positions": steps_positions.positions,
    "block": steps_block.block,
    "feed_forward": steps_block.feed_forward,
    "classifier": steps_output.classifier,
    "cross_attention": steps_output.cross_attention,
    "next_token": steps_output.next_token,
    "training": steps_training.training,
    "next": steps_training.next_steps,
}
OWN: tuple[str, ...] = ("classifier", "cross_attention", "next_token")  # the steps only some families have
ORDER: tuple[str, ...] = tuple(BUILDERS)  # the tutorial's order


def model_name(pipe) -> str:
    """The model as a walk names it when the caller gives no name: its folder or file."""
    source = getattr(pipe, "source", None) or getattr(pipe.adapter, "source", None)
    return Path(str(source)).name if source else type(pipe.adapter.model).__name__


@torch.no_grad()
def model_pass(pipe, text: str, name: str | None = None) -> Pass:
    """The one cached pass every step reads; ValueError for a text without tokens or a transformers model."""
    family = family_of(pipe)
    read = family.read(pipe, text)
    if not read.ids:
        raise ValueError("the text has no tokens: type a few words")
    model = pipe.adapter.model
    ids = torch.tensor([read.ids], device=pipe.adapter.device)  # (1, T)
    cache: dict[str, torch.Tensor] = {}
    registry, keep = model.hook_registry, keeper(cache)
    with registry.hooks((point, keep) for point in registry.select(cached_points)):
        output = family.forward(model, read, ids)
    tok = family.token_vectors(model, ids)
    return Pass(family, pipe, model, family.stack(model), ids, labels(read.tokens), tok, cache, output,
                name or model_name(pipe), read)  # fmt: skip


def walk(pipe, text: str, name: str | None = None) -> Walk:
    """Every step of the model's family on `text`, from one cached pass (name: the model as the app names it)."""
    p = model_pass(pipe, text, name)
    steps = tuple(BUILDERS[key](p) for key in ORDER if key not in OWN or key in p.family.own)
    return Walk(p.name, text, p.family.map(p.model), steps)
