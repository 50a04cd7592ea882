"""The Next word tab's "Every new token" matrix: from the view the tab keeps, by the model that made it, one row a
new token over what it had read, blank (not NaN) where it had not, each row's faithfulness in its label."""

import numpy as np

from pipelines.models.model_registry import ModelRegistry
from viz.explanations import step_matrix


def test_the_matrix_of_a_continuation(lm):
    from viz.next_word.handlers import generate

    view = list(generate(lm, "The film was a", "greedy", max_new_tokens=3))[-1][0]
    fig, notes = step_matrix.compute(ModelRegistry.of(lm), view, "gradient_x_input")
    z = fig.data[0].z
    n_prompt = len(view.result.tokens)
    assert len(z) == 3 and len(z[0]) == n_prompt + 2
    for s, row in enumerate(z):  # row s read the prompt and the s tokens before it
        assert all(v is not None and np.isfinite(v) for v in row[: n_prompt + s])
        assert all(v is None for v in row[n_prompt + s :])
    assert all("random" in label for label in fig.data[0].y)
    assert "3 new tokens explained" in notes and "beats random on" in notes


def test_no_continuation_is_a_message(lm):
    fig, notes = step_matrix.compute(ModelRegistry.of(lm), None, None)
    assert fig is None and "Generate a continuation first" in notes
