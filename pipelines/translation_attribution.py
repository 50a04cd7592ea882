"""Attributions for the translation model: for each produced token, how much each source token (and each
token of the target prefix) drove its log-probability, optionally against an alternative token.

The objective of step t is log p(y_t | y_<t, x), or log p(y_t) - log p(alt) for a contrastive step (the
evidence for "this token rather than that one"). Captum computes gradient x input and integrated gradients
at the embedding output of the encoder and the decoder; all steps are one batch of Tt rows.
"""

from dataclasses import dataclass

import numpy as np
import torch

from .adapter import OurSeq2Seq as Seq2SeqAdapter  # any seq2seq adapter

TRANSLATION_METHODS = ("attention", "gradient_x_input", "integrated_gradients")
IG_STEPS = 32
IG_BATCH = 64  # rows (interpolation point x decoding step) per forward pass


@dataclass
class StepAttribution:
    source: np.ndarray  # (Tt, Ts) attribution of step t's objective to each source token
    prefix: np.ndarray  # (Tt, Tt) to each target-prefix token (column 0 = <s>, column j = output j-1); causal
    steps: int | None = None  # integrated gradients: interpolation steps
    deltas: np.ndarray | None = None  # integrated gradients: (Tt,) convergence delta of each step


def _objective(model: Seq2SeqAdapter):
    """f(src_emb, tgt_emb, src_ids, pos, tok, alt) -> (B,) log p(tok) - log p(alt) at position pos of each
    row (alt < 0: no contrast). Every row is one decoding step, so captum attributes steps independently."""

    def f(src_emb, tgt_emb, src_ids, pos, tok, alt):
        at = model.step_log_probs(src_emb, src_ids, tgt_emb, pos)  # (B, V)
        out = at.gather(1, tok[:, None])[:, 0]
        other = at.gather(1, alt.clamp(min=0)[:, None])[:, 0]
        return out - torch.where(alt >= 0, other, torch.zeros_like(other))

    return f


def _inputs(model: Seq2SeqAdapter, src: torch.Tensor, tgt_in: torch.Tensor, produced, alts):
    """Every step as one row: (src_emb (Tt, Ts, D), tgt_emb (Tt, Tt, D)), (src ids, pos, tok, alt)."""
    Tt = tgt_in.size(1)
    src_ids = src.expand(Tt, -1)
    src_emb = model.embed_source(src_ids).detach()
    tgt_emb = model.embed_target(tgt_in.expand(Tt, -1)).detach()
    pos = torch.arange(Tt)
    return (src_emb, tgt_emb), (src_ids, pos, torch.tensor(produced), torch.tensor(alts))


def step_attributions(
    model: Seq2SeqAdapter,
    src: torch.Tensor,
    tgt_in: torch.Tensor,
    produced: list[int],
    alts: list[int],
    method: str,
) -> StepAttribution:
    """src (1, Ts), tgt_in (1, Tt) = <s> + produced[:-1]; alts[t] >= 0 makes step t contrastive."""
    from captum.attr import InputXGradient, IntegratedGradients  # captum (and matplotlib) only when asked for

    inputs, extra = _inputs(model, src, tgt_in, produced, alts)
    f = _objective(model)
    if method == "gradient_x_input":
        inputs = tuple(x.requires_grad_() for x in inputs)
        src_a, tgt_a = InputXGradient(f).attribute(inputs, additional_forward_args=extra)
        steps = deltas = None
    elif method == "integrated_gradients":
        # Baseline: zero embedding vectors for every source and prefix token, the tokens kept in place
        # (same masks and positions), as for the classifier.
        (src_a, tgt_a), delta = IntegratedGradients(f).attribute(
            inputs,
            baselines=tuple(torch.zeros_like(x) for x in inputs),
            additional_forward_args=extra,
            n_steps=IG_STEPS,
            internal_batch_size=IG_BATCH,
            return_convergence_delta=True,
        )
        steps, deltas = IG_STEPS, delta.detach().numpy().astype(np.float32)
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(TRANSLATION_METHODS)}")
    as_np = lambda a: a.sum(-1).detach().numpy().astype(np.float32)  # noqa: E731
    return StepAttribution(as_np(src_a), as_np(tgt_a), steps, deltas)


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two vectors (0 when either is constant)."""
    ra, rb = np.argsort(np.argsort(a)).astype(np.float64), np.argsort(np.argsort(b)).astype(np.float64)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def head_agreement(scores: np.ndarray, cross: list[np.ndarray]) -> np.ndarray:
    """(L, H): per decoder layer and head, the mean over steps of the rank correlation between the head's
    cross-attention and the attribution's magnitude |scores| (Tt, Ts). High = the head looks where the
    evidence is; attention has no sign, so the magnitude is compared."""
    mag = np.abs(scores)
    out = np.zeros((len(cross), cross[0].shape[0]), dtype=np.float32)
    for layer, attn in enumerate(cross):  # (H, Tt, Ts)
        for head in range(attn.shape[0]):
            out[layer, head] = np.mean([rank_correlation(attn[head, t], mag[t]) for t in range(len(mag))])
    return out
