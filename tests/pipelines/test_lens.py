"""Layer by layer: the logit lens ends on the model's own answer, and the direct logit attribution's terms add up to the
model's own logit (difference), on the three families, pre- and post-norm, tiny and bundled."""

from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_models import linear_in_the_last_heads

from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline

ASSETS = Path(__file__).resolve().parents[2] / "assets"
PROMPT = "The film was a"
REVIEW = "The film was not bad at all, and the acting was fine."
GERMAN = "Ein Mann fährt mit dem Fahrrad."


def check_adds_up(a, total_by_hand: float):
    assert a.total == pytest.approx(total_by_hand, abs=1e-5)
    assert a.exact and abs(a.unexplained) < 1e-4 * max(1.0, abs(a.total))
    cross = a.cross.sum() if a.cross is not None else 0.0
    assert a.heads.sum() + cross + a.mlps.sum() + a.rest == pytest.approx(a.total, abs=1e-4)


def test_the_lm_lens_ends_on_the_models_own_distribution(lm):
    lens = lm.logit_lens(PROMPT)
    ids = list(lm.encode(PROMPT).ids)
    logits = lm.adapter.forward(torch.tensor([ids])).logits[0, -1].float()
    probs = logits.softmax(-1)
    assert lens.layers == ["embeddings"] + [f"layer {i}" for i in range(lm.n_layers)]
    assert len(lens.top_tokens) == lm.n_layers + 1 and len(lens.top_tokens[0]) == len(ids)
    assert lens.final_token == lm.adapter.token_text(int(probs.argmax()))
    assert lens.final_prob[-1] == pytest.approx(float(probs.max()), abs=1e-5)
    assert lens.top_probs[-1][-1][0] == pytest.approx(float(probs.max()), abs=1e-5)
    assert lens.kl[-1] == pytest.approx(0.0, abs=1e-6) and min(lens.kl[:-1]) >= 0
    # the last row is the model's own output at every position, not only the last
    with torch.no_grad():
        every = lm.adapter.forward(torch.tensor([ids])).logits[0].float().softmax(-1)  # (T, V)
    top5 = every.topk(5, dim=-1)
    np.testing.assert_allclose(np.array(lens.top_probs[-1]), top5.values.numpy(), atol=1e-5)
    assert lens.top_tokens[-1] == [[lm.adapter.token_text(int(i)) for i in row] for row in top5.indices]
    assert not lens.post_norm


def test_the_lm_attribution_adds_up_and_a_head_is_its_result_through_the_frozen_norm(lm):
    ids = torch.tensor([list(lm.encode(PROMPT).ids)])
    model = lm.adapter.model
    _, cache = model.run_with_cache(ids, names=["blocks.1.attn.hook_result"])
    logits = model(ids).logits[0, -1]
    top2 = logits.topk(2).indices.tolist()
    a = lm.direct_logit_attribution(PROMPT, contrast=top2[1])
    check_adds_up(a, float(logits[top2[0]] - logits[top2[1]]))
    assert a.heads.shape == (lm.n_layers, lm.n_heads) and a.mlps.shape == (lm.n_layers,)
    # by hand: head 2 of layer 1 through the final RMSNorm frozen at the last state, then W_U's difference
    _, last = model.run_with_cache(ids, names=[f"blocks.{lm.n_layers - 1}.hook_resid_post"])
    final = last[f"blocks.{lm.n_layers - 1}.hook_resid_post"][0, -1]  # (D,) what the final norm reads
    norm = model.final_norm
    scale = (final.pow(2).mean() + norm.eps).rsqrt()
    head = cache["blocks.1.attn.hook_result"][0, -1, 2]  # (D,)
    u = model.W_U[:, top2[0]] - model.W_U[:, top2[1]]
    assert a.heads[1, 2] == pytest.approx(float((norm.weight * scale * head) @ u), abs=1e-5)
    # a target by its text, as the top-10 shows it
    by_text = lm.direct_logit_attribution(PROMPT, target=lm.adapter.token_text(top2[1]))
    assert by_text.target == lm.adapter.token_text(top2[1])
    with pytest.raises(ValueError, match="not one of the 10 most likely"):
        lm.direct_logit_attribution(PROMPT, target="no such token in any vocabulary")


def test_the_lm_lens_follows_a_step_of_a_continuation(lm):
    result = lm(PROMPT, max_new_tokens=3)
    at_two = lm.logit_lens(PROMPT, result=result, step=1)  # the second new token's (steps count from 0)
    assert len(at_two.tokens) == len(result.tokens) + 1
    assert at_two.final_token == result.steps[1].token
    with pytest.raises(ValueError, match="not one of this continuation's steps"):
        lm.logit_lens(PROMPT, result=result, step=9)


@pytest.mark.parametrize("kind", ["logit", "tuned"])
def test_every_step_from_one_pass_is_each_step_read_alone(lm, kind, monkeypatch):
    """layer_by_layer_steps (one pass over the continuation, for the step slider) gives, at each step, what
    layer_by_layer gives for that step alone (a pass over what the model had read then)."""
    from pipelines.lens import operations

    if kind == "tuned":  # an untrained tuned lens of this tiny model: its translators still change every row
        from pipelines.lens.tuned import Translators

        translators = Translators(lm.n_layers, lm.adapter.model.config.d_model, rank=2)
        for p in translators.parameters():
            torch.nn.init.normal_(p, std=0.05)
        monkeypatch.setattr(operations, "translators_for", lambda pipe, readout, kind: (translators, ""))
    result = lm(PROMPT, max_new_tokens=4)
    steps = lm.layer_by_layer_steps(PROMPT, contrast=None, result=result, kind=kind)
    assert len(steps) == len(result.steps) == 4
    for s, read in enumerate(steps):
        lens, a = read.lens, read.attribution
        alone = lm.layer_by_layer(PROMPT, result=result, step=s, kind=kind)
        alone, a_alone = alone.lens, alone.attribution
        assert lens.tokens == alone.tokens and lens.top_tokens == alone.top_tokens
        assert lens.final_token == alone.final_token == result.steps[s].token
        np.testing.assert_allclose(lens.top_probs, alone.top_probs, atol=1e-5)
        np.testing.assert_allclose(lens.final_prob, alone.final_prob, atol=1e-5)
        np.testing.assert_allclose(lens.kl, alone.kl, atol=1e-5)
        if kind == "tuned":
            np.testing.assert_allclose(lens.logit_kl, alone.logit_kl, atol=1e-5)
        assert a.target == a_alone.target and a.total == pytest.approx(a_alone.total, abs=1e-5)
        np.testing.assert_allclose(a.heads, a_alone.heads, atol=1e-5)
        np.testing.assert_allclose(a.mlps, a_alone.mlps, atol=1e-5)
    odd = lm.layer_by_layer_steps(PROMPT, contrast="no such token in any vocabulary", result=result)
    assert all(r.attribution is None and "not one of the 10" in r.why_not for r in odd)  # step by step; lens stands


def test_every_translation_step_from_one_pass_is_each_step_read_alone(translation):
    german = "Ein Mann fährt mit dem Fahrrad."
    result = translation(german, beam_size=1)
    steps = translation.layer_by_layer_steps(german, result=result)
    assert len(steps) == len(result.target_ids)
    for step, read in enumerate(steps):
        lens, a = read.lens, read.attribution
        alone = translation.layer_by_layer(german, step=step, result=result)
        alone, a_alone = alone.lens, alone.attribution
        assert lens.top_tokens == alone.top_tokens and a.target == a_alone.target
        np.testing.assert_allclose(a.heads, a_alone.heads, atol=1e-6)
        np.testing.assert_allclose(a.cross, a_alone.cross, atol=1e-6)


def test_the_classifier_lens_and_attribution_post_norm(sentiment):
    lens = sentiment.logit_lens(REVIEW)
    result = sentiment(REVIEW)
    assert lens.post_norm and "post-norm" in lens.note
    assert lens.final_token == result.label
    assert len(lens.final_prob) == sentiment.n_layers + 1
    logits = sentiment.adapter.forward(torch.tensor([sentiment.encode(REVIEW).ids])).logits[0].float()
    label = sentiment.labels.index(result.label)
    a = sentiment.direct_logit_attribution(REVIEW, contrast=1 - label)
    check_adds_up(a, float(logits[label] - logits[1 - label]))
    assert a.target == result.label and a.contrast == sentiment.labels[1 - label]
    assert sentiment.direct_logit_attribution(REVIEW, target=result.label).target == result.label


def test_the_translator_lens_and_attribution_with_cross_attention(translation):
    result = translation(GERMAN, beam_size=1)
    lens = translation.logit_lens(GERMAN, result=result)
    assert lens.tokens[0] == "<s>" and len(lens.tokens) == len(result.target_ids)
    # each step's top token at the last layer is what greedy decoding produced there
    assert [row[0] for row in lens.top_tokens[-1]] == [translation.adapter.token_text(i) for i in result.target_ids]
    a = translation.direct_logit_attribution(GERMAN, step=1, result=result)
    assert a.cross is not None and a.cross.shape == a.heads.shape
    src = torch.tensor([translation.encode_source([GERMAN])[0][0]])
    tgt = torch.tensor([[translation.adapter.bos_id] + list(result.target_ids)[:-1]])
    logits = translation.adapter.forward(src, tgt).logits[0, 1].float()
    check_adds_up(a, float(logits[result.target_ids[1]]))


@pytest.mark.parametrize("bundled", ["lm", "sentiment", "sentiment-scratch", "translation"])
def test_the_bundled_models_attributions_add_up(bundled):
    folder = str(ASSETS / bundled)
    if bundled == "lm":
        a = LanguageModelPipeline.from_pretrained(folder).direct_logit_attribution(PROMPT)
    elif bundled == "translation":
        a = TranslationPipeline.from_pretrained(folder).direct_logit_attribution(GERMAN, step=1)
    else:
        a = SentimentPipeline.from_pretrained(folder).direct_logit_attribution(REVIEW, contrast=0)
    assert np.isfinite(a.heads).all() and abs(a.unexplained) < 1e-3
    assert a.terms_sum == pytest.approx(a.total, abs=1e-3)


def test_a_transformers_model_says_layer_by_layer_is_for_ours(tmp_path):
    from tiny_hf_models import CLASSIFIERS

    pipe = SentimentPipeline.from_pretrained(str(CLASSIFIERS["bert"](tmp_path / "bert")))
    with pytest.raises(ValueError, match="models of this project"):
        pipe.logit_lens(REVIEW)


def test_a_last_layer_head_switched_off_lowers_the_logit_by_exactly_its_attribution(lm):
    """With the final norm taken out (and the last feed-forward layer writing nothing), what a last-layer head writes
    reaches the logit directly and only so: switching it off removes exactly its attribution."""
    pipe = linear_in_the_last_heads(lm)
    model = pipe.adapter.model
    last = pipe.n_layers - 1
    a = pipe.direct_logit_attribution(PROMPT)
    ids = torch.tensor([list(pipe.encode(PROMPT).ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, -1]
        t = int(logits.argmax())
        for head in range(pipe.n_heads):
            mask = torch.ones(pipe.n_layers, pipe.n_heads)
            mask[last, head] = 0.0
            off = model(ids, head_mask=mask).logits[0, -1, t]
            assert float(logits[t] - off) == pytest.approx(a.heads[last, head], abs=1e-5)


def test_a_contrastive_attribution_differs_from_the_plain_one(lm):
    plain = lm.direct_logit_attribution(PROMPT)
    lens = lm.logit_lens(PROMPT)
    against = lm.direct_logit_attribution(PROMPT, contrast=lens.top_tokens[-1][-1][1])
    assert against.contrast == lens.top_tokens[-1][-1][1]
    assert not np.allclose(plain.heads, against.heads) and against.total < plain.total


def test_one_pass_gives_the_lens_and_the_attribution_the_two_calls_give(lm, sentiment):
    both = lm.layer_by_layer(PROMPT)
    lens, a = both.lens, both.attribution
    # (the same to float error: the attribution asks for hook_result, whose heads are summed in another order)
    np.testing.assert_allclose(np.array(lens.top_probs), np.array(lm.logit_lens(PROMPT).top_probs), atol=1e-5)
    np.testing.assert_allclose(a.heads, lm.direct_logit_attribution(PROMPT).heads, atol=1e-6)
    both = sentiment.layer_by_layer(REVIEW, contrast=0)
    lens, a = both.lens, both.attribution
    assert lens.final_prob == pytest.approx(sentiment.logit_lens(REVIEW).final_prob, abs=1e-5)
    assert a.total == pytest.approx(sentiment.direct_logit_attribution(REVIEW, contrast=0).total, abs=1e-6)
