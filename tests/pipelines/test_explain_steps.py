"""Every generated token attributed: row s of explain_steps is the explanation of step s on the same continuation
(the prompt and the s tokens before it), for every registered method, with its faithfulness where asked."""

import numpy as np
import pytest

PROMPT = "The film was a"


@pytest.fixture(scope="module")
def result(lm):
    return lm(PROMPT, max_new_tokens=4)


@pytest.mark.parametrize("budget", [1, 2**30])  # gradient x input's batches: one row each, every row in one
def test_row_s_is_the_explanation_of_step_s(lm, result, budget, monkeypatch):
    from pipelines.explanations import methods

    monkeypatch.setattr(methods, "STEP_LOGITS_BYTES", budget)
    steps = lm.explain_steps(result)
    n = len(result.generated_ids)
    assert len(steps.scores) == len(steps.outputs) == n and steps.n_prompt == len(result.tokens)
    assert len(steps.tokens) == len(result.tokens) + n - 1
    for s in range(n):
        e = lm.explain(PROMPT, step=s, result=result)
        np.testing.assert_allclose(steps.scores[s], np.concatenate([e.scores, e.prefix_scores]), atol=1e-6)
        assert steps.outputs[s] == e.outputs[0] and steps.probabilities[s] == pytest.approx(e.probability)
    assert steps.faithfulness is None
    m, read = steps.matrix(), steps.read()
    assert m.shape == read.shape == (n, len(steps.tokens)) and not m[~read].any()
    assert read.sum(1).tolist() == [len(result.tokens) + s for s in range(n)]


@pytest.mark.parametrize("method", ["attention", "occlusion"])
def test_any_registered_method_and_its_faithfulness_by_row(lm, result, method):
    done = []
    steps = lm.explain_steps(result, method=method, faithfulness=True, progress=lambda d, t: done.append((d, t)))
    n = len(result.generated_ids)
    assert steps.method == method and done == [(s + 1, n) for s in range(n)]
    assert len(steps.faithfulness) == n and np.isfinite(np.array(steps.faithfulness)).all()
    e = lm.explain(PROMPT, method=method, step=n - 1, result=result)
    assert steps.faithfulness[-1][0] == pytest.approx(lm.faithfulness(e).method.comprehensiveness)


def test_a_continuation_without_new_tokens_is_refused(lm):
    r = lm(PROMPT, max_new_tokens=1)
    r.generated_ids = []
    with pytest.raises(ValueError, match="no new tokens"):
        lm.explain_steps(r)
