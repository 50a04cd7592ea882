"""The kinds of attention, named in one place: what each is called, which tokens its rows and columns are, and how
the app titles it. Everything else (the views, the head table, the compare diff, the adapters' head layers) reads
them from KINDS. A new kind of attention (as a decoder-only model's causal self-attention was) is one entry here.

Tokens are named by side: "src" (the input: a review, a German sentence) or "tgt" (the output: the English tokens
produced, one a step). Row i of a kind's map is token q_side:i; column j is token k_side:(j - k_shift).
"""

from dataclasses import dataclass

SRC, TGT = "src", "tgt"
SIDES = (SRC, TGT)
# The translator's languages, as pipelines.tasks.TRANSLATION.languages names them: still spelled here (and as CROSS's
# axis words) for viz/attention/view_handlers.py, until it reads them from its task. A review has one side: never named.
SIDE_NAMES = {SRC: "German", TGT: "English"}


@dataclass(frozen=True)
class Kind:
    """One kind of attention: its names and the tokens of its rows and columns."""

    name: str  # the key in maps, head masks and links: "self", "encoder", "decoder", "cross"
    title: str  # "Cross-attention"
    row: str  # its layers in the head grid: "layer 2", "cross 1"
    choice: str  # in the kind picker of token focus and the model view
    plot: str  # the large plot's elem_id after the task: "translation-encoder"
    q_side: str = SRC  # row i is token q_side:i
    k_side: str = SRC
    query: str = "query"  # the axes' words
    key: str = "key"
    k_shift: int = 0  # the first k_shift columns are no token (the decoder's start token)
    heatmap: str = ""  # the large heatmap's title (format: layer, head); "" = "<title>, layer {layer}, head {head}"
    overview: str = ""  # the small multiples' title (format: layer); "" = "<title>, layer {layer}: every head"
    causal: bool = False  # row i reads keys up to its own position only: the cells above the diagonal are no weight

    @property
    def heatmap_title(self) -> str:
        return self.heatmap or f"{self.title}, layer {{layer}}, head {{head}}"

    @property
    def overview_title(self) -> str:
        return self.overview or f"{self.title}, layer {{layer}}: every head"


SELF = Kind(
    "self", "Self-attention", "layer", "self-attention", "attention",
    heatmap="Layer {layer}, head {head}", overview="Layer {layer}: every head",
)  # fmt: skip
ENCODER = Kind("encoder", "Encoder self-attention", "encoder", "encoder self-attention", "encoder")
# the decoder reads the start token, then what it produced before: column j is the output of step j - 1
DECODER = Kind(
    "decoder", "Decoder self-attention", "decoder", "decoder self-attention", "decoder", TGT, TGT, k_shift=1,
    heatmap="Decoder self-attention, layer {layer}, head {head} (causal)", causal=True,
)  # fmt: skip
CROSS = Kind("cross", "Cross-attention", "cross", "cross-attention", "attention", TGT, SRC, "English", "German")
# a decoder-only model's self-attention: rows and columns are one sequence, the prompt then what it generated (the
# last token produced is read by no row); causal, so row i sees columns 0..i only
CAUSAL = Kind(
    "causal", "Causal self-attention", "causal", "causal self-attention", "attention",
    heatmap="Layer {layer}, head {head} (causal)", overview="Layer {layer}: every head (causal)", causal=True,
)  # fmt: skip

KINDS: dict[str, Kind] = {k.name: k for k in (SELF, ENCODER, DECODER, CROSS, CAUSAL)}  # the models' order
BY_ROW = {k.row: k.name for k in KINDS.values()}  # a grid row's word -> the kind


def order(name: str) -> int:
    """A kind's place in the models' order (self, encoder, decoder, cross, causal), for sorting heads."""
    return list(KINDS).index(name)
