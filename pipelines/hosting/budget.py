"""The app's memory budget, and the limits it implies for the models loaded: one number set by hand
(MEMORY_BUDGET_MB), shared between what the app holds beside the models' weights; every limit is that share over
what one item costs for these models, from their layers x heads x tokens. A 2 x 4 model at 512 tokens makes about
4 MB of attention maps a run, a 6 x 12 one about 38 MB: the bigger model gets smaller batches of long reviews and
fewer rows a head-effect pass, and the app stays within the same memory. The sessions' kept results share theirs by
the bytes they hold (viz.server.sessions).
"""

from dataclasses import dataclass

MEMORY_BUDGET_MB = 1024  # the app's memory beside the models' weights (a free Space has 16 GB for everything)


@dataclass(frozen=True)
class Budget:
    """The budget and its shares (fractions of total_mb)."""

    total_mb: int = MEMORY_BUDGET_MB
    sessions: float = 0.4375  # every session's kept results, for redraws, by their bytes (viz.server.sessions)
    cache: float = 0.0625  # results identical calls are answered from (cache.ResultCache: 64 MB of the 1 GB)
    batch: float = 0.125  # one batch of long reviews run with their maps (serving)
    heads: float = 0.125  # the batched passes measuring each head's effect, all running at once (heads)
    exports: float = 0.25  # downloads written and waiting to be fetched (on disk: downloads)

    def bytes(self, share: float) -> int:
        return int(share * self.total_mb * 2**20)


BUDGET = Budget()
# A language model's maps: a prompt the app takes (2,000 characters: a few hundred tokens) and 64 new tokens; its
# context (SmolLM2's 8,192) would size every session for maps no prompt reaches
LM_TOKENS = 640


@dataclass(frozen=True)
class ModelSize:
    """What sizes a model's attention: every layer of every kind, its heads, and the most tokens it reads."""

    layers: int  # attention layers of every kind together (a translator: encoder + decoder + cross)
    heads: int
    tokens: int

    @classmethod
    def of(cls, pipe) -> "ModelSize":
        """A pipeline's size (a classifier reads max_len tokens; a translator max_src on either side; a language
        model its context, at most LM_TOKENS)."""
        tokens = getattr(pipe, "max_len", None) or getattr(pipe, "max_src", None)
        tokens = tokens or min(pipe.adapter.max_len, LM_TOKENS)
        return cls(sum(pipe.head_layers.values()), pipe.n_heads, int(tokens))

    def maps_bytes(self, itemsize: int = 2, tokens: int | None = None) -> int:
        """Bytes of one run's attention maps, (L, H, T, T), at `tokens` (None: the most the model reads)."""
        t = self.tokens if tokens is None else tokens
        return self.layers * self.heads * t * t * itemsize

    def pass_bytes(self, tokens: int | None = None) -> int:
        """Bytes one row of a pass that keeps no maps holds at most in attention: one layer's float32 scores and
        weights, (2, H, T, T), at a time (layers run one after another and free theirs)."""
        t = self.tokens if tokens is None else tokens
        return 2 * self.heads * t * t * 4


def review_batch(size: ModelSize, budget: Budget = BUDGET) -> int:
    """How many long reviews run together with their maps: each holds its float32 maps and about as much again
    in activations while it runs (a batch of 8 reviews of 361 tokens on a 2 x 4 model: 81-87 MB above rest)."""
    return max(1, budget.bytes(budget.batch) // (2 * size.maps_bytes(4)))


def head_rows(size: ModelSize, tokens: int, budget: Budget = BUDGET, at_once: int = 1) -> int:
    """Rows of one batched head-effect pass on an input of `tokens` (row n: the input with head n off), with
    `at_once` such passes running together (pipelines.attention.passes): no head-effect pass keeps its maps
    (pass_bytes)."""
    return max(1, budget.bytes(budget.heads) // at_once // size.pass_bytes(tokens))


def export_bytes(sizes: list[ModelSize], budget: Budget = BUDGET) -> int:
    """Bytes of downloads kept on disk at once: the exports' share, and at least two of the largest export (every
    weight written as about ten characters of JSON)."""
    largest = max((size.maps_bytes(10) for size in sizes), default=0)
    return max(budget.bytes(budget.exports), 2 * largest)
