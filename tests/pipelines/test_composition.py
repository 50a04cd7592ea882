"""Heads composing: the Q-, K- and V-composition scores equal the Frobenius norms of the products computed by hand
(norms' weights folded in, grouped key/value heads as the model reads them); the random baseline sits below them; an
identity OV circuit has copying score 1."""

import numpy as np
import pytest
import torch

from pipelines.lens import composition, why_head
from transformer import CausalLM, CausalLMConfig


def folded(norm, w: torch.Tensor) -> torch.Tensor:
    """By hand: the input norm's linear map x -> (x - mean(x)) * weight (LayerNorm) or x * weight (RMSNorm) as a
    D x D matrix, times w (D, k)."""
    D = w.shape[0]
    if norm is None:
        return w
    m = torch.diag(norm.weight.double())
    if isinstance(norm, torch.nn.LayerNorm):
        m = (torch.eye(D, dtype=torch.float64) - 1.0 / D) @ m
    return m @ w


@torch.no_grad()
def by_hand(stack, kind: str, a: tuple[int, int], b: tuple[int, int]) -> float:
    """The score of head a into head b with every D x D matrix formed."""
    (l1, h1), (l2, h2) = a, b
    blocks = stack.blocks

    def mats(layer, head):
        block, attn = blocks[layer], blocks[layer].attn
        before = block.attn_norm if block.norm_first else None
        q, k, v = (folded(before, getattr(attn, f"W_{n}")[head].double()) for n in "QKV")
        o = attn.W_O[head].double()  # (hs, D)
        if not block.norm_first:  # post-norm: the output goes through the block's norm after it
            o = folded(block.attn_norm, o.T).T
        return q @ k.T, v @ o  # W_QK, W_OV (D, D)

    ov_a = mats(l1, h1)[1]
    qk_b, ov_b = mats(l2, h2)
    x = {"q": qk_b, "k": qk_b.T, "v": ov_b}[kind]
    return float(torch.linalg.norm(ov_a @ x) / (torch.linalg.norm(ov_a) * torch.linalg.norm(x)))


@pytest.mark.parametrize("kind", ["q", "k", "v"])
def test_composition_scores_are_the_frobenius_norms_by_hand(lm, sentiment, kind):
    for pipe in (lm, sentiment):  # pre-norm RMSNorm with 4 heads over 2 key/value heads; post-norm LayerNorm
        c = pipe.composition(kind)
        stack = why_head.stack_of(pipe)
        L, H = c.scores.shape[:2]
        assert c.scores.shape == c.baseline.shape == (L, H, L, H)
        for a, b in (((0, 0), (1, 3)), ((0, 2), (1, 1)), ((0, 3), (1, 2))):
            assert c.scores[a + b] == pytest.approx(by_hand(stack, kind, a, b), rel=1e-4)
        assert (c.scores[1, :, 0] == 0).all() and (c.scores[1, :, 1] == 0).all()  # no later head composes back
        assert 0 < c.baseline_mean < 1 and (c.baseline[0, :, 1] == c.baseline_mean).all()
        assert c.into(1, 3, 1)[0][2] == pytest.approx(c.scores[0, :, 1, 3].max())


def test_a_composition_kind_is_checked(lm):
    with pytest.raises(ValueError, match="'q', 'k' or 'v'"):
        lm.composition("x")


def identity_ov_model(norm: str) -> CausalLM:
    cfg = CausalLMConfig(
        vocab_size=30, d_model=8, n_heads=1, n_kv_heads=1, head_dim=8, n_layers=2, d_ff=8, max_len=16, norm=norm,
        positions="learned", activation="gelu", bias=False,
    )  # fmt: skip
    model = CausalLM(cfg).eval()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.v_proj.weight.copy_(torch.eye(8))
            block.attn.o_proj.weight.copy_(torch.eye(8))
    return model


@pytest.mark.parametrize("norm", ["rmsnorm", "layernorm"])
def test_an_identity_ov_circuit_has_copying_score_one(norm):
    model = identity_ov_model(norm)  # tied embeddings: the full OV circuit is W_E N W_E^T, N the norms: PSD
    stack = composition.Stack("causal", model.blocks, model.tok_emb.weight, model.W_U, model.final_norm)
    scores = composition.copying_scores(stack).scores
    np.testing.assert_allclose(scores, 1.0, atol=1e-5)
    with torch.no_grad():
        model.blocks[1].attn.o_proj.weight.copy_(-torch.eye(8))  # a head that writes the opposite: -1
    assert composition.copying_scores(stack).scores[1, 0] == pytest.approx(-1.0, abs=1e-5)


@torch.no_grad()
def test_copying_scores_are_the_full_circuits_eigenvalues(lm):
    """(L, H) in [-1, 1], equal to the eigenvalues of the full V x V circuit computed by hand; copied tokens come from
    its diagonal."""
    stack = why_head.stack_of(lm)
    scores = lm.copying_scores().scores
    assert scores.shape == (2, 4) and (np.abs(scores) <= 1 + 1e-9).all()
    block, attn = stack.blocks[1], stack.blocks[1].attn
    e = stack.embed.double() * block.attn_norm.weight.double()  # (V, D) through the input norm (RMSNorm)
    u = stack.final_norm.weight.double()[:, None] * stack.unembed.double()  # (D, V)
    full = e @ attn.W_V[2].double() @ attn.W_O[2].double() @ u  # (V, V)
    ev = torch.linalg.eigvals(full)
    assert scores[1, 2] == pytest.approx(float(ev.real.sum() / ev.abs().sum()), abs=1e-4)
    top = lm.copied_tokens(1, 2, n=3)
    best = int(full.diagonal().argmax())
    assert top[0][0] == lm.adapter.token_text(best) and top[0][1] == pytest.approx(float(full.diagonal().max()), 1e-4)


@pytest.mark.parametrize("family", ["sentiment", "translation", "lm"])
def test_copied_tokens_on_every_family(request, family):
    """The tokens a head copies most, as text, on every bundled family: the diagonal of its full OV circuit, largest
    first, each labelled as the family's tokenizer names that id."""
    pipe = request.getfixturevalue(family)
    stack = why_head.stack_of(pipe)
    top = pipe.copied_tokens(0, 1, n=4)
    expected = composition.copied(stack, 0, 1, 4)
    assert len(top) == 4 and [v for _, v in top] == [v for _, v in expected]
    assert [t for t, _ in top] == [pipe.lens_family.vocabulary_text(pipe)(i) for i, _ in expected]
    assert all(isinstance(t, str) and t for t, _ in top) and top[0][1] >= top[-1][1]
    if family == "sentiment":
        assert [t for t, _ in top] == [pipe.tokenizer.id_to_token(i) for i, _ in expected]
