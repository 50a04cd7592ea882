"""How a head is named: its id in the panel's state and in the heads-off choice ('kind:layer:head', 0-based) and
its name on the page ('layer 2 · head 3', counted from 1)."""

from pipelines.kinds import KINDS


def head_value(kind: str, layer: int, head: int) -> str:
    """A head's id in the heads-off choice and in state: 'kind:layer:head', 0-based."""
    return f"{kind}:{layer}:{head}"


def grid_row(kind: str, layer: int) -> str:
    """The grid's name of a layer: 'layer 2', 'cross 1'."""
    return f"{KINDS[kind].row} {layer + 1}"


def head_label(kind: str, layer: int, head: int) -> str:
    """A head's name in the UI, 1-based: 'layer 1 · head 2' or 'cross 1 · head 2'."""
    return f"{grid_row(kind, layer)} · head {head + 1}"


def head_choices(layers: dict[str, int], n_heads: int) -> list[tuple[str, str]]:
    """(label, value) for every head, for the heads-off multi-select."""
    return [
        (head_label(kind, layer, head), head_value(kind, layer, head))
        for kind, n in layers.items()
        for layer in range(n)
        for head in range(n_heads)
    ]


def parse_heads(values: list[str] | None) -> dict[tuple[str, int, int], float]:
    """Chosen values 'kind:layer:head' -> a head mask {(kind, layer, head): 0.0} for the pipelines."""
    mask = {}
    for value in values or []:
        kind, layer, head = str(value).split(":")
        mask[(kind, int(layer), int(head))] = 0.0
    return mask
