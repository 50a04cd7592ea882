"""A score taken apart: the (query-side part x key-side part) terms and the projections' biases add up to the model's
own pre-softmax score, on every family (pre- and post-norm, rotary and learned positions, grouped key/value heads,
self- and cross-attention), tiny and bundled; and on a model built by hand, an induction head finds its key through
what the previous-token head wrote there."""

from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import induction_model

from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline
from pipelines.lens import why_head
from transformer import (
    CausalLM,
    CausalLMConfig,
    ClassifierConfig,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    TransformerClassifier,
)

ASSETS = Path(__file__).resolve().parents[2] / "assets"
REVIEW = "The film was not bad at all, and the acting was fine."
GERMAN = "Ein Mann fährt mit dem Fahrrad."


def adds_up(r) -> None:
    """pairs.sum() + rest == score to 1e-4 relative (of the score, or 1 for a score near 0)."""
    assert np.isfinite(r.pairs).all() and r.pairs.shape == (len(r.parts), len(r.key_parts))
    assert abs(float(r.pairs.sum()) + r.rest - r.score) <= 1e-4 * max(1.0, abs(r.score))
    np.testing.assert_allclose(r.query_side.sum(), r.key_side.sum())
    assert r.parts[-1] == "bias" and r.key_parts[-1].endswith("bias")


def labels(r, layer: int, heads: int, pos: bool, cross: int = 0) -> list[str]:
    """The parts expected before `layer`: embed (pos_embed), each earlier block's heads (its cross heads) and mlp."""
    out = ["embed"] + ["pos_embed"] * pos
    for i in range(layer):
        out += [f"L{i}H{h}" for h in range(heads)] + [f"L{i}C{h}" for h in range(cross)] + [f"{i}_mlp_out"]
    return out + ["bias"]


def test_the_tiny_families_scores_add_up(sentiment, translation, lm):
    r = sentiment.score_attribution(REVIEW, 1, 2, 3, 1)
    adds_up(r)
    assert list(r.parts) == labels(r, 1, 4, pos=True) and r.key_parts == r.parts
    for kind, q, k in (("encoder", 2, 1), ("decoder", 2, 1), ("cross", 1, 2)):
        r = translation.score_attribution(GERMAN, 1, 3, q, k, kind=kind)
        adds_up(r)
    r = lm.score_attribution("The film was a good one", 1, 3, 4, 2)  # rotary, 4 heads over 2 key/value heads
    adds_up(r)
    assert list(r.parts) == labels(r, 1, 4, pos=False)


def test_the_cross_attentions_query_side_includes_its_own_layers_self_attention(translation):
    r = translation.score_attribution(GERMAN, 1, 0, 2, 1, kind="cross")
    expected = labels(r, 1, 4, pos=True, cross=4)[:-1] + ["L1H0", "L1H1", "L1H2", "L1H3", "bias"]
    assert list(r.parts) == expected
    assert list(r.key_parts) == [f"encoder.{n}" for n in labels(r, 2, 4, pos=True)]
    assert translation.score_attribution(GERMAN, 1, 0, 0, 1, step=2, kind="cross").score == r.score


def _classifier(**kw) -> TransformerClassifier:
    cfg = ClassifierConfig(vocab_size=50, d_model=24, n_heads=3, n_layers=3, d_ff=32, max_len=32, dropout=0.0, **kw)
    model = TransformerClassifier(cfg).eval()
    with torch.no_grad():  # norms with weights and biases away from 1 and 0: folding them matters
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    return model


FAMILIES = {
    "classifier, post-norm, sinusoidal": lambda: _classifier(),
    "classifier, pre-norm, learned": lambda: _classifier(norm_first=True, positions="learned"),
    "classifier, BERT (embedding norm, post-norm)": lambda: _classifier(
        positions="learned", embedding_norm=True, scale_embeddings=False, activation="gelu"
    ),
    "classifier, pre-norm RMSNorm": lambda: _classifier(norm_first=True, norm="rmsnorm"),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_hand_built_classifiers_scores_add_up(family):
    model = FAMILIES[family]()
    ids = torch.randint(3, 50, (9,)).tolist()
    for layer, head, q, k in ((0, 0, 2, 5), (2, 1, 7, 0), (1, 2, 4, 4)):
        r = why_head.classifier_cell(model, ids, [str(i) for i in ids], layer, head, q, k)
        adds_up(r)
        assert list(r.parts) == labels(r, layer, 3, pos=True)


@pytest.mark.parametrize("positions,norm", [("rotary", "rmsnorm"), ("learned", "layernorm"), ("sinusoidal", "rmsnorm")])
def test_hand_built_language_models_scores_add_up(positions, norm):
    cfg = CausalLMConfig(
        vocab_size=40, d_model=24, n_heads=4, n_kv_heads=2, n_layers=3, d_ff=32, max_len=32, positions=positions,
        norm=norm, bias=True, activation="gelu" if norm == "layernorm" else "swiglu",
    )  # fmt: skip
    model = CausalLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.3)
    ids = torch.randint(3, 40, (10,)).tolist()
    for layer, head, q, k in ((0, 3, 5, 5), (2, 1, 9, 2), (1, 2, 6, 0)):
        r = why_head.causal_cell(model, ids, [str(i) for i in ids], layer, head, q, k)
        adds_up(r)
        assert ("pos_embed" in r.parts) == (positions != "rotary")
    with pytest.raises(ValueError, match="after query"):
        why_head.causal_cell(model, ids, [str(i) for i in ids], 0, 0, 2, 5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_hand_built_translators_scores_add_up(norm_first):
    cfg = Seq2SeqConfig(
        vocab_size=40, d_model=24, n_heads=4, n_encoder_layers=2, n_decoder_layers=3, d_ff=32, max_len=32,
        dropout=0.0, norm_first=norm_first, positions="learned",
    )  # fmt: skip
    model = Seq2SeqTransformer(cfg).eval()
    src, tgt = torch.randint(3, 40, (7,)).tolist(), [1] + torch.randint(3, 40, (5,)).tolist()
    tokens = ([str(i) for i in src], [str(i) for i in tgt])
    for kind, layer, q, k in (("encoder", 1, 3, 6), ("decoder", 2, 4, 1), ("cross", 0, 2, 3), ("cross", 2, 5, 6)):
        adds_up(why_head.seq2seq_cell(model, src, tgt, tokens, kind, layer, 1, q, k))


def test_a_cell_out_of_range_is_a_clear_error(sentiment):
    with pytest.raises(ValueError, match="layer 7 is out of range"):
        sentiment.score_attribution(REVIEW, 7, 0, 0, 0)
    with pytest.raises(ValueError, match="query 99 is out of range"):
        sentiment.score_attribution(REVIEW, 0, 0, 99, 0)


# --- an induction circuit built by hand -----------------------------------------------------------------------------


def test_the_induction_heads_key_is_found_through_the_previous_token_head():
    model = induction_model()
    r = [5, 9, 3, 12, 7, 4]
    ids = [1] + r + r  # <s>, r, r: 13 positions
    n = len(r)
    attn = model(torch.tensor([ids]), need_weights=True).attentions
    for q in range(n + 2, 2 * n + 1):  # the second copy: the token after the first occurrence
        key = q - n + 1
        assert attn[1][0, 0, q].argmax() == key
        cell = why_head.causal_cell(model, ids, [str(i) for i in ids], 1, 0, q, key)
        adds_up(cell)
        assert cell.top_side("key", 1)[0][0] == "L0H0"
        assert cell.top_side("query", 1)[0][0] == "embed"
        assert cell.top(1)[0][:2] == ("embed", "L0H0")


# --- the bundled models ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bundled", ["lm", "sentiment", "sentiment-scratch", "translation"])
def test_the_bundled_models_scores_add_up(bundled):
    folder = ASSETS / bundled
    if not folder.is_dir():
        pytest.skip(f"assets/{bundled} is not here")
    if bundled == "lm":
        adds_up(LanguageModelPipeline.from_pretrained(str(folder)).score_attribution("The film was a", 5, 1, 4, 1))
    elif bundled == "translation":
        t = TranslationPipeline.from_pretrained(str(folder))
        for kind in ("encoder", "decoder", "cross"):
            adds_up(t.score_attribution(GERMAN, 2, 1, 3, 2, kind=kind))
    else:
        adds_up(SentimentPipeline.from_pretrained(str(folder)).score_attribution(REVIEW, 1, 3, 4, 2))


def test_smollm2s_scores_add_up():
    """SmolLM2 (rotary, grouped key/value heads, residual values over 2e4 at the first position) where installed."""
    from pipelines.models.gguf import installed_smollm2

    path = installed_smollm2()
    if path is None:
        pytest.skip("SmolLM2's GGUF file is not installed")
    pipe = LanguageModelPipeline.from_pretrained(str(path))
    for layer, head, q, k in ((29, 4, 6, 0), (29, 4, 6, 3), (3, 8, 5, 4)):
        adds_up(pipe.score_attribution("The film was a good one, and", layer, head, q, k))
