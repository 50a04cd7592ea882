"""The core's hook-point names (transformer/hooks.py) for each kind of attention (pipelines.kinds): where a kind's
blocks sit in a model and which of their attentions it is. Our adapters read these points from the model itself; the
`transformers` adapters give the same names to what their own modules compute (pipelines/models/hf_adapter.py)."""

from pipelines.kinds import CAUSAL, CROSS, DECODER, ENCODER, SELF

# kind -> (the prefix of its blocks, the block's attention module)
KIND_POINTS = {
    SELF.name: ("", "attn"),
    CAUSAL.name: ("", "attn"),
    ENCODER.name: ("encoder.", "attn"),
    DECODER.name: ("decoder.", "attn"),
    CROSS.name: ("decoder.", "cross_attn"),
}


def attn_point(kind: str, layer: int, point: str) -> str:
    """The name of attention point `point` ("hook_q", "hook_k", "hook_v", "hook_z", "hook_pattern", "hook_result") of
    layer `layer` of kind `kind`: attn_point("cross", 1, "hook_v") == "decoder.blocks.1.cross_attn.hook_v"."""
    prefix, attn = KIND_POINTS[kind]
    return stack_point(prefix, layer, f"{attn}.{point}")


def stack_point(prefix: str, layer: int, point: str = "") -> str:
    """The name of point `point` of block `layer` of the stack whose points start with `prefix` ("", "encoder.",
    "decoder."); point "": the block's own prefix, "decoder.blocks.1."."""
    return f"{prefix}blocks.{layer}.{point}"


def block_point(kind: str, layer: int, point: str) -> str:
    """The name of block point `point` ("hook_resid_pre", ...) of layer `layer` of kind `kind`'s stack."""
    return stack_point(KIND_POINTS[kind][0], layer, point)


def attn_points(kinds: dict[str, int], points: tuple[str, ...]) -> list[str]:
    """Every name of `points` in every layer of each kind ({kind: number of layers})."""
    return [attn_point(kind, i, p) for kind, n in kinds.items() for i in range(n) for p in points]
