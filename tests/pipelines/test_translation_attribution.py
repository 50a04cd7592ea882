"""Translation attributions on the tiny model: shapes, causality, completeness of integrated gradients,
per-head agreement, contrastive steps and faithfulness."""

import numpy as np
import pytest
import torch

from pipelines.attention.head_stats import spearman
from pipelines.explanations.run import head_agreement

GERMAN = "Ein Mann fährt mit dem Fahrrad."


@pytest.fixture(scope="module")
def result(translation):
    return translation(GERMAN, beam_size=1)


def test_step_log_probs_equal_the_model(translation, result):
    src = torch.tensor([[t.id for t in result.source_tokens]])
    tgt = torch.tensor([[translation.model.config.bos_id] + result.target_ids[:-1]])
    T = tgt.size(1)
    with torch.no_grad():
        full = translation.model(src, tgt).logits[0].log_softmax(-1)  # (T, V)
        a = translation.adapter
        ours = a.step_log_probs(
            a.embed_source(src.expand(T, -1)), src.expand(T, -1), a.embed_target(tgt.expand(T, -1)), torch.arange(T)
        )
    assert torch.allclose(ours, full, atol=1e-5)


@pytest.mark.parametrize("method", ["attention", "gradient_x_input", "integrated_gradients"])
def test_every_produced_token_gets_a_row_over_the_source(translation, result, method):
    expl = translation.explain(GERMAN, method, result=result)
    Tt, Ts = len(result.target_tokens), len(result.source_tokens)
    assert expl.method == method and expl.target_tokens == result.target_tokens
    assert expl.scores.shape == (Tt, Ts) and expl.prefix_scores.shape == (Tt, Tt)
    assert np.isfinite(expl.scores).all()
    assert np.allclose(np.triu(expl.prefix_scores, k=1), 0.0)  # step t reads <s> and outputs before t only
    L, H = len(result.cross_attentions), result.cross_attentions[0].shape[0]
    assert expl.head_agreement.shape == (L, H) and (np.abs(expl.head_agreement) <= 1 + 1e-6).all()


def test_integrated_gradients_are_complete_within_the_reported_delta(translation, result):
    expl = translation.explain(GERMAN, "integrated_gradients", result=result)
    src = torch.tensor([expl.src_ids])
    tgt = torch.tensor([[translation.model.config.bos_id] + expl.produced[:-1]])
    T = tgt.size(1)
    s_emb, t_emb = translation.model.src_emb(src.expand(T, -1)), translation.model.tgt_emb(tgt.expand(T, -1))
    with torch.no_grad():
        f = lambda s, t: translation.adapter.step_log_probs(s, src.expand(T, -1), t, torch.arange(T))  # noqa: E731
        rows = torch.arange(T)
        tok = torch.tensor(expl.produced)
        diff = f(s_emb, t_emb)[rows, tok] - f(torch.zeros_like(s_emb), torch.zeros_like(t_emb))[rows, tok]
    total = expl.scores.sum(1) + expl.prefix_scores.sum(1)
    np.testing.assert_allclose(total - diff.numpy(), expl.deltas, atol=1e-3)
    assert expl.steps == 32 and np.abs(expl.deltas).max() < 0.05 * np.abs(diff.numpy()).max() + 0.01


def test_one_rank_correlation_for_head_agreement():
    """Head agreement uses head_stats.spearman (average ranks for ties, None on a constant input). It used its
    own rank_correlation, which ranked ties by position (0.40 here; average ranks 1.5, 1.5, 3, 4 give
    3 / sqrt(22.5) = 0.632) and said 0.0 on constants."""
    a, b = np.array([1.0, 1.0, 2.0, 3.0]), np.array([3.0, 1.0, 2.0, 4.0])
    assert spearman(a, b) == pytest.approx(3 / np.sqrt(22.5))
    cross = np.stack([a / a.sum(), np.full(4, 0.25)])[:, None, :]  # (H=2, Tt=1, Ts=4); head 2 is constant
    got = head_agreement(b[None, :], [cross])  # (L=1, H=2)
    assert got[0, 0] == pytest.approx(spearman(a, b)) and np.isnan(got[0, 1])


def test_contrast_explains_one_step_against_an_alternative(translation, result):
    step = 1
    alternatives = [tok for tok, _ in result.steps[step].top_k if tok != result.steps[step].token]
    plain = translation.explain(GERMAN, "gradient_x_input", result=result)
    expl = translation.explain(GERMAN, "gradient_x_input", contrast={step: alternatives[0]}, result=result)
    assert expl.contrast == {step: alternatives[0]}
    assert not np.allclose(expl.scores[step], plain.scores[step])
    others = [t for t in range(len(expl.produced)) if t != step]
    np.testing.assert_allclose(expl.scores[others], plain.scores[others], atol=1e-5)
    with pytest.raises(ValueError, match="top-5"):
        translation.explain(GERMAN, "gradient_x_input", contrast={step: "zzzz-not-a-token"}, result=result)
    with pytest.raises(ValueError, match="outside"):
        translation.explain(GERMAN, "gradient_x_input", contrast={99: alternatives[0]}, result=result)


def test_attention_methods_say_they_are_not_contrastive(translation, result):
    """Cross-attention is the same whatever the alternative: asked for a contrast, the attention methods labelled
    the step "(vs ...)" and called themselves contrastive while their scores stayed the plain ones."""
    from viz.explanations.translation_attributions import faithfulness_markdown

    step = 1
    alternative = next(tok for tok, _ in result.steps[step].top_k if tok != result.steps[step].token)
    for method in ("attention", "attention_norm"):
        plain = translation.explain(GERMAN, method, result=result)
        expl = translation.explain(GERMAN, method, contrast={step: alternative}, result=result)
        assert expl.contrast == {} and expl.contrast_not_applied == {step: alternative}
        np.testing.assert_array_equal(expl.scores, plain.scores)
        text = faithfulness_markdown(translation.faithfulness(expl, max_steps=None), expl)
        assert "Contrastive:" not in text and "Not contrastive" in text and f"“{alternative}” at step 2" in text
    assert (
        translation.explain(
            GERMAN, "gradient_x_input", contrast={step: alternative}, result=result
        ).contrast_not_applied
        == {}
    )


def test_faithfulness_per_step_and_against_random(translation, result):
    expl = translation.explain(GERMAN, "gradient_x_input", result=result)
    report = translation.faithfulness(expl, max_steps=None)
    assert report.per_step.shape == (len(expl.produced),) and np.isfinite(report.per_step).all()
    assert report.steps == list(range(len(expl.produced))) and not report.sampled
    for f in (report.method, report.random):
        assert -1 <= f.comprehensiveness <= 1 and -1 <= f.sufficiency <= 1 and f.curve.shape == (6,)


def test_a_long_translation_is_measured_on_a_sample_of_steps_and_says_so(translation, result):
    """Issue 25 item 11: translation faithfulness ran every step (34 s on a 936-character input); by default
    it measures QUICK_STEPS evenly spaced steps and the view says so."""
    from pipelines.explanations.faithfulness import QUICK_STEPS, sampled_steps
    from viz.explanations.translation_attributions import faithfulness_markdown

    expl = translation.explain(GERMAN, "gradient_x_input", result=result)
    n = len(expl.produced)
    assert n > 4
    report = translation.faithfulness(expl, max_steps=4)
    assert report.steps == sampled_steps(n, 4) and len(report.steps) == 4 and report.sampled
    assert report.steps[0] == 0 and report.steps[-1] == n - 1
    assert np.isfinite(report.per_step[report.steps]).all() and np.isnan(np.delete(report.per_step, report.steps)).all()
    assert f"On 4 of the {n} steps" in faithfulness_markdown(report, expl)
    full = translation.faithfulness(expl, max_steps=None)
    assert full.per_step[report.steps] == pytest.approx(report.per_step[report.steps], abs=1e-5)  # the same steps
    assert len(translation.faithfulness(expl).steps) == min(n, QUICK_STEPS)


def test_one_teacher_forced_pass_gives_every_steps_probability(translation, result):
    """The random rankings' variants are scored for all steps at once; that equals scoring each step alone."""
    from pipelines.explanations.faithfulness import every_step_probs, step_probs

    src = [t.id for t in result.source_tokens]
    produced = result.target_ids
    tgt_in = [translation.model.config.bos_id] + produced[:-1]
    sources = [src, src[1:], []]
    together = every_step_probs(translation, sources, produced)
    alone = step_probs(translation, [(s, t, produced[t]) for s in sources for t in range(len(produced))], tgt_in)
    np.testing.assert_allclose(together.ravel(), alone, atol=1e-5)


def test_unknown_method_is_refused(translation, result):
    assert set(translation.explanation_methods) == {
        "attention",
        "attention_norm",
        "gradient_x_input",
        "integrated_gradients",
    }
    with pytest.raises(ValueError, match="unknown method"):
        translation.explain(GERMAN, "occlusion", result=result)
