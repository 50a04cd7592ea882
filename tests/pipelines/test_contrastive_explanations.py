"""Why A rather than B on the Next word task: a contrastive explanation explains log p(A) - log p(B). For the
gradient methods and occlusion that is exactly the plain explanation of A minus that of B (all three are linear in
the objective), so it differs from the plain one; attention reads the same whatever the alternative and says so;
the faithfulness of a contrastive explanation is measured on p(A) - p(B)."""

import numpy as np
import pytest

PROMPT = "The film was a"


@pytest.fixture(scope="module")
def result(lm):
    return lm(PROMPT, max_new_tokens=2)


def runner_up(result, step: int = 0) -> int:
    return result.steps[step].top_ids[1]


@pytest.mark.parametrize("method", ["gradient_x_input", "integrated_gradients", "occlusion"])
def test_a_contrast_is_the_difference_of_the_two_explanations(lm, result, method):
    b = runner_up(result)
    plain = lm.explain(PROMPT, method=method, result=result)
    against = lm.explain(PROMPT, method=method, result=result, contrast=b)
    other = lm.explain(PROMPT, method=method, result=result, token=b)
    tol = 1e-2 if method == "integrated_gradients" else 1e-5  # IG: each path integral to its own quadrature error
    np.testing.assert_allclose(against.scores, plain.scores - other.scores, atol=tol)
    assert not np.allclose(against.scores, plain.scores)
    assert against.contrast == {0: lm.adapter.token_text(b)} and against.contrast_id == b
    assert not against.contrast_not_applied


def test_a_contrast_by_its_text_and_the_token_itself_refused(lm, result):
    text = result.steps[0].top_k[1][0]
    e = lm.explain(PROMPT, method="gradient_x_input", result=result, contrast=text)
    assert e.contrast_id == runner_up(result)
    with pytest.raises(ValueError, match="the contrast is the token explained"):
        lm.explain(PROMPT, result=result, contrast=result.steps[0].token_id)


def test_attention_says_it_cannot_contrast(lm, result):
    e = lm.explain(PROMPT, method="attention", result=result, contrast=runner_up(result))
    np.testing.assert_allclose(e.scores, lm.explain(PROMPT, method="attention", result=result).scores)
    assert e.contrast_id is None and e.contrast_not_applied == {0: lm.adapter.token_text(runner_up(result))}


def test_faithfulness_of_a_contrast_is_measured_on_the_difference(lm, result):
    from pipelines.explanations.methods import next_token_log_probs

    b = runner_up(result)
    e = lm.explain(PROMPT, method="occlusion", result=result, contrast=b)
    report = lm.faithfulness(e)
    ids = list(e.ids)
    intact = np.exp(next_token_log_probs(lm.adapter, [ids], e.output_ids[0])) - np.exp(
        next_token_log_probs(lm.adapter, [ids], b)
    )
    assert report.method.curve[0] == pytest.approx(float(intact[0]), abs=1e-6)  # the curve starts at p(A) - p(B)
    plain = lm.faithfulness(lm.explain(PROMPT, method="occlusion", result=result))
    assert report.method.curve[0] != pytest.approx(plain.method.curve[0])


def test_a_review_against_the_other_label_is_its_log_odds_and_says_so(sentiment):
    """Two labels: log p(t) / (1 - p(t)) is log p(t) - log p(other), so the contrast changes no score and is named;
    attention says it cannot contrast; the label itself or an unknown one is refused."""
    review = "Not bad at all, I actually enjoyed it."
    plain = sentiment.explain(review, "gradient_x_input")
    other = [label for label in sentiment.labels if label != plain.outputs[0]][0]
    against = sentiment.explain(review, "gradient_x_input", contrast=other)
    np.testing.assert_allclose(against.scores, plain.scores, atol=1e-6)
    assert against.contrast == {0: other} and against.contrast_id == sentiment.labels.index(other)
    looked = sentiment.explain(review, "attention", contrast=other)
    assert looked.contrast == {} and looked.contrast_not_applied == {0: other}
    with pytest.raises(ValueError, match="the label explained"):
        sentiment.explain(review, "gradient_x_input", contrast=plain.outputs[0])
    with pytest.raises(ValueError, match="not one of the labels"):
        sentiment.explain(review, "gradient_x_input", contrast="neutral")
