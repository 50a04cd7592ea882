"""Signed token attributions for the sentiment classifier: which tokens push the prediction toward a label.

Every method scores each token toward a target label: positive = supports it, negative = speaks against it.
The target function is the label's log-odds, log p / (1 - p), so with two labels an attribution toward
one label is exactly minus the attribution toward the other. Captum computes gradient x input,
integrated gradients and occlusion; attention and rollout are read from the forward pass and are
unsigned (they say where the model looks, not which way a token pushes).
"""

from dataclasses import dataclass

import numpy as np
import torch

from .adapter import OurClassifier as ClassifierAdapter  # any classifier adapter
from .gradients import log_odds

METHODS = ("attention", "rollout", "gradient_x_input", "integrated_gradients", "occlusion")
METHOD_NAMES = {
    "attention": "Attention (pooling weights)",
    "rollout": "Attention rollout",
    "gradient_x_input": "Gradient × input",
    "integrated_gradients": "Integrated gradients",
    "occlusion": "Occlusion (leave one word out)",
}
IG_STEPS = 32  # Gauss-Legendre points: the convergence delta is reported with every result
IG_BATCH = 16  # interpolation points per forward pass (memory stays small for long reviews)


@dataclass
class TokenAttribution:
    scores: np.ndarray  # (T,) float32, signed toward the target (attention, rollout: >= 0)
    steps: int | None = None  # integrated gradients: interpolation steps
    delta: float | None = None  # integrated gradients: sum(scores) - (f(input) - f(baseline))


def attention_rollout(attentions: list[np.ndarray]) -> np.ndarray:
    """(T, T) attention rollout (Abnar & Zuidema 2020): head-averaged maps with the residual, multiplied
    through the layers. Row i says how much position i at the top draws on each input token."""
    T = attentions[0].shape[-1]
    eye = np.eye(T, dtype=np.float64)
    rollout = eye
    for attn in attentions:  # (H, T, T)
        a = 0.5 * attn.mean(axis=0, dtype=np.float64) + 0.5 * eye  # the residual stream carries half
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a @ rollout
    return rollout


def _target_fn(model: ClassifierAdapter):
    """f(emb, ids) -> (B, C) log-odds: what captum differentiates (it picks the target column)."""
    return lambda emb, ids: log_odds(model.logits_from_embeddings(emb, ids))


def _ids_fn(model: ClassifierAdapter):
    """f(ids) -> (B, C) log-odds, for occlusion, which swaps token ids for padding."""
    return lambda ids: log_odds(model.forward(ids).logits)


def gradient_x_input(model: ClassifierAdapter, ids: torch.Tensor, target: int) -> TokenAttribution:
    """ids (1, T): gradient of the target log-odds times the embedding (token + n-grams), summed over D."""
    from captum.attr import InputXGradient  # captum (and matplotlib, which it loads) only when asked for

    emb = model.embed(ids).detach().requires_grad_()
    attr = InputXGradient(_target_fn(model)).attribute(emb, target=target, additional_forward_args=(ids,))
    return TokenAttribution(attr.sum(-1)[0].detach().numpy().astype(np.float32))


def integrated_gradients(
    model: ClassifierAdapter, ids: torch.Tensor, target: int, steps: int = IG_STEPS
) -> TokenAttribution:
    """ids (1, T): integrated gradients at the embedding output (token + n-gram embeddings).

    Baseline: every embedding vector zero, with the same tokens present (same padding mask, same
    positions). It keeps the sequence's shape and removes only what each token says; an all-padding
    baseline would instead hide the tokens from attention, which is not a neutral input.
    """
    from captum.attr import IntegratedGradients

    emb = model.embed(ids).detach()
    attr, delta = IntegratedGradients(_target_fn(model)).attribute(
        emb,
        baselines=torch.zeros_like(emb),
        target=target,
        additional_forward_args=(ids,),
        n_steps=steps,
        internal_batch_size=IG_BATCH,
        return_convergence_delta=True,
    )
    return TokenAttribution(attr.sum(-1)[0].detach().numpy().astype(np.float32), steps, float(delta[0]))


def occlusion(model: ClassifierAdapter, ids: torch.Tensor, target: int, words: np.ndarray) -> TokenAttribution:
    """ids (1, T), words (T,) word index per token: the drop in target log-odds when a word's tokens are
    replaced by padding (masked out of attention and pooling), shared evenly by the word's pieces."""
    from captum.attr import FeatureAblation

    mask = torch.as_tensor(words, dtype=torch.long)[None]  # (1, T)
    attr = FeatureAblation(_ids_fn(model)).attribute(
        ids, baselines=model.pad_id, target=target, feature_mask=mask, perturbations_per_eval=32
    )
    pieces = np.bincount(words)[words]  # (T,) how many pieces each token's word has
    return TokenAttribution((attr[0].float().numpy() / pieces).astype(np.float32))


@torch.no_grad()
def attention_attribution(model: ClassifierAdapter, ids: torch.Tensor, method: str) -> TokenAttribution:
    """ids (1, T): the pooling weights (what the classifier reads), or those traced back to the input
    through every layer (rollout). Unsigned, summing to 1."""
    out = model.forward(ids, need_weights=True)
    weights = out.token_weights if out.token_weights is not None else torch.ones_like(ids, dtype=torch.float)
    w = weights[0].double().numpy()  # (T,)
    if method == "rollout":
        w = w @ attention_rollout([a[0].double().numpy() for a in out.attentions])
    return TokenAttribution((w / max(w.sum(), 1e-12)).astype(np.float32))


def attribute(
    model: ClassifierAdapter, ids: torch.Tensor, target: int, method: str, words: np.ndarray
) -> TokenAttribution:
    """Scores of the tokens ids (1, T) toward label index `target` by one of METHODS."""
    if method in ("attention", "rollout"):
        return attention_attribution(model, ids, method)
    if method == "gradient_x_input":
        return gradient_x_input(model, ids, target)
    if method == "integrated_gradients":
        return integrated_gradients(model, ids, target)
    if method == "occlusion":
        return occlusion(model, ids, target, words)
    raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
