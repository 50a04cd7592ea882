"""The logit lens (nostalgebraist 2020): each layer's residual stream read out as if the model stopped there, through
the final norm and the unembedding (the classifier: its pooling and head). For a post-norm stack (BERT, the
Vaswani translator) every block already ends in a norm, so its output is read through the unembedding directly."""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from pipelines.lens.readout import Readout

TOP_K = 5


@dataclass(frozen=True)
class Lens:
    """What each layer predicts. Rows are layers (embeddings, then after each block), columns the positions."""

    layers: list[str]  # L + 1 names
    tokens: list[str]  # the positions' tokens
    top_tokens: list[list[list[str]]]  # [l][t]: the TOP_K most likely outputs read out at layer l, position t
    top_probs: list[list[list[float]]]  # [l][t]: their probabilities
    final_token: str  # what the model finally puts first (at the last position; the classifier: its label)
    final_prob: list[float]  # [l]: the probability layer l gives final_token
    kl: list[float]  # [l]: KL(final || layer l) of the last position's distributions, in nats
    post_norm: bool  # the stack normalises after each block: what the readout means differs (note)
    note: str
    kind: str = "logit"  # "tuned": each state went through its layer's translator first (tuned.py)
    logit_kl: list[float] | None = None  # [l]: the logit lens's kl, beside a tuned lens's, to compare


POST_NORM_NOTE = (
    "This model is post-norm: each block ends in a LayerNorm, so a block's output is read out through the output "
    "layer directly (no final norm to borrow); the early rows are what the output layer makes of a normalised state "
    "it was never trained to read there."
)
PRE_NORM_NOTE = "Each row is that layer's residual stream through the model's final norm and output layer."
TUNED_NOTE = (
    "Tuned lens: each row is that layer's residual stream through an affine translator trained for that layer (to "
    "match the final distribution on IMDB reviews), then the final norm and output layer. It reads what a layer "
    "holds in a basis the output layer does not yet read; the dashed line is the plain logit lens's KL."
)


def top(
    logits: torch.Tensor, k: int, text: Callable[[int], str]
) -> tuple[list[list[str]], list[list[float]], torch.Tensor]:
    """logits (T, V) -> per position the k most likely outputs' texts and probabilities, and the last position's
    log-probabilities (V,). The softmax is taken of the k only (over logsumexp): a (T, V) exp costs SmolLM2 as much
    as a third of its unembedding."""
    lse = logits.logsumexp(-1, keepdim=True)  # (T, 1)
    values, ids = logits.topk(min(k, logits.size(-1)), dim=-1)  # (T, k)
    return [[text(int(i)) for i in row] for row in ids], (values - lse).exp().tolist(), logits[-1] - lse[-1]


ROWS_PER_MATMUL = 256  # layers x positions unembedded at once: one (256, D) @ (D, V) runs at twice the FLOP/s of
# eight (32, D) ones on one thread (SmolLM2: 0.63 s for its 31 x 32 rows against 1.24 s), 50 MB of logits at most


def _chunks(states: list[torch.Tensor]) -> list[torch.Tensor]:
    """The L + 1 states (1, T, D) stacked a few layers at a time: (layers, T, D) each."""
    per = max(1, ROWS_PER_MATMUL // states[0].size(1))
    return [torch.cat(states[i : i + per]) for i in range(0, len(states), per)]


def _tops(readout: Readout, chunk: torch.Tensor, text) -> list:
    """top() of each layer of a chunk (layers, T, D), read out in one matmul."""
    return [top(logits.float(), TOP_K, text) for logits in readout.logits(chunk)]


def kl(final: torch.Tensor, other: torch.Tensor) -> float:
    """KL(final || other) of two log-probability vectors (V,)."""
    return float((final.exp() * (final - other)).sum())


def _note(readout: Readout, translators, said: str) -> str:
    """What the lens's rows mean, after `said` (why it is not the lens asked for, where it is not)."""
    note = TUNED_NOTE if translators is not None else PRE_NORM_NOTE if readout.norm_first else POST_NORM_NOTE
    return f"{said} {note}" if said else note


def _rows(readout: Readout, cache: dict, text, translators) -> tuple[list, list, list]:
    """(the L + 1 states as read, those states through the translators where given, the lens's rows of them)."""
    plain = [s.float() for s in readout.states(cache)]  # L + 1 (1, T, D)
    states = plain if translators is None else [translators(i, s) for i, s in enumerate(plain)]
    return plain, states, [row for chunk in _chunks(states) for row in _tops(readout, chunk, text)]


@torch.no_grad()
def logit_lens(
    readout: Readout,
    cache: dict,
    tokens: list[str],
    text: Callable[[int], str],
    real: torch.Tensor | None = None,
    translators=None,
    said: str = "",
) -> Lens:
    """The lens of one cached pass (a batch of one holding readout.names()); text(i): output i's text; real (1, T):
    the classifier's real tokens; translators: a tuned lens's (tuned.Translators), None for the logit lens; said:
    what the note says first."""
    plain, states, rows = _rows(readout, cache, text, translators)
    last = readout.predictions(rows, states, real)
    final = last[-1]
    best = int(final.argmax())
    logit_kl = None
    if translators is not None:  # the logit lens at the last position only: (L + 1) rows, not (L + 1) x T
        logit_kl = [kl(final, readout.logits(s[:, -1:])[0, -1].float().log_softmax(-1)) for s in plain]
    return Lens(
        readout.layer_names,
        tokens,
        [r[0] for r in rows],
        [r[1] for r in rows],
        text(best),
        [float(lp[best].exp()) for lp in last],
        [kl(final, lp) for lp in last],
        not readout.norm_first,
        _note(readout, translators, said),
        "tuned" if translators is not None else "logit",
        logit_kl,
    )


@torch.no_grad()
def logit_lens_at(
    readout: Readout,
    cache: dict,
    tokens: list[str],
    text: Callable[[int], str],
    positions: list[int],
    translators=None,
    said: str = "",
) -> list[Lens]:
    """The lens of each prefix tokens[: p + 1] (p in positions) of one cached pass of a causal model: what it had
    read when it chose the token after p. Causal, a prefix's states are the whole pass's: the grid is unembedded
    once, and each prefix's by-layer lines (the final answer's probability, the KL) are read at its own last
    position. Equal to logit_lens of a pass over the prefix alone (tests/pipelines/test_lens.py)."""
    plain, states, rows = _rows(readout, cache, text, translators)
    at = torch.tensor(positions, device=plain[0].device)

    def by_layer(layer_states) -> torch.Tensor:  # (L + 1, S, V) log-probabilities at the prefixes' last positions
        return torch.stack([readout.logits(s[:, at])[0].float().log_softmax(-1) for s in layer_states])

    lp = by_layer(states)
    final = lp[-1]  # (S, V)
    best = final.argmax(-1)  # (S,)
    final_prob = lp.gather(-1, best[None, :, None].expand(len(lp), -1, 1))[..., 0].exp()  # (L + 1, S)
    kls = (final.exp() * (final - lp)).sum(-1)  # (L + 1, S)
    logit_kls = None if translators is None else (final.exp() * (final - by_layer(plain))).sum(-1)
    note, kind = _note(readout, translators, said), "tuned" if translators is not None else "logit"
    return [
        Lens(readout.layer_names, tokens[: p + 1], [r[0][: p + 1] for r in rows], [r[1][: p + 1] for r in rows],
             text(int(best[s])), final_prob[:, s].tolist(), kls[:, s].tolist(), not readout.norm_first, note, kind,
             None if logit_kls is None else logit_kls[:, s].tolist())
        for s, p in enumerate(positions)
    ]  # fmt: skip
