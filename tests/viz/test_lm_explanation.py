"""The Next word tab's explanation panel (viz.explanations.explanation_panel, task "lm") on the tiny language model:
the prompt shaded by what drives the token of the step shown (the first, or a later one read from the prompt and the
tokens before it), every registered method, the faithfulness beside random, and the step slider and the "Explain this
step" button wired to explain the step they show."""

import html
import re

import numpy as np
import pytest

from pipelines.explanations import is_signed, label, names
from viz.explanations import explanation_panel
from viz.next_word import handlers as next_word

PROMPT = "This movie was <b>great</b> & fun"


@pytest.fixture(scope="module")
def view(lm):
    return list(next_word.generate(lm, PROMPT, max_new_tokens=4))[-1][0]


def visible_text(out: str) -> str:
    body = re.search(r'<div class="token-text"[^>]*>(.*?)</div>', out, re.S).group(1)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_the_registry_offers_every_method_for_the_next_token():
    assert set(names("lm")) == {
        "gradient_x_input", "integrated_gradients", "occlusion", "attention_norm", "attention", "rollout"
    }  # fmt: skip
    assert explanation_panel.model_default(None, "lm")["method"] == "gradient_x_input"
    assert "pooling" not in label("lm", "attention")  # a language model has no pooling weights


@pytest.mark.parametrize("method", names("lm"))
def test_the_prompt_is_shaded_toward_the_first_new_token(lm, view, method):
    expl, out = explanation_panel.explain(lm, view, method, step=1)
    first = view.steps[0]
    assert expl.task == "lm" and expl.method == method and expl.at_step == 0
    assert expl.output_ids == [first.token_id]  # the token on screen, not decoded again
    assert expl.probability == pytest.approx(first.probability, abs=1e-4)
    assert "attr-legend" in out and "<b>great" not in out and "&lt;" in out
    assert " ".join(visible_text(out).split()) == " ".join(PROMPT.split())  # the prompt, every character
    assert ("against" in out) == is_signed(method)
    assert label("lm", method) in html.unescape(out)


def test_a_sampled_continuation_explains_its_own_first_token(lm):
    view = list(next_word.generate(lm, "This movie was", "sampled", 1.5, 1.0, 3, 3))[-1][0]
    for step in range(1, len(view.steps) + 1):
        expl, _ = explanation_panel.explain(lm, view, "gradient_x_input", step=step)
        assert expl.output_ids == [view.steps[step - 1].token_id]


def test_faithfulness_is_shown_beside_random_with_a_deletion_curve(lm, view):
    expl, _ = explanation_panel.explain(lm, view, "integrated_gradients")
    text, fig = explanation_panel.faithfulness(lm, expl)
    assert "on your prompt?" in text and "comprehensiveness" in text and "random" in text
    assert "convergence delta" in text and "Default method: **Gradient × input**" in text
    assert [t.name for t in fig.data] == ["this method", "random"] and list(fig.data[0].x) == [0, 1, 5, 10, 20, 50]
    assert "calibrated" not in fig.layout.title.subtitle.text  # the model's own probability of the token


def test_no_view_and_a_failing_method_give_a_message(lm, view):
    assert explanation_panel.explain(lm, None, "occlusion") == (None, "")
    expl, out = explanation_panel.explain(lm, view, "no-such-method")
    assert expl is None and "could not be computed for this prompt" in out


def test_the_panel_has_its_own_ids_and_the_tabs_default(lm):
    import gradio as gr

    with gr.Blocks():
        panel = explanation_panel.build(lm, "lm")
    assert panel.task == "lm" and panel.method.value == "gradient_x_input"
    ids = [panel.method.elem_id, panel.highlight.elem_id, panel.faithfulness.elem_id, panel.curve.elem_id]
    assert ids == ["lm-explanation-method", "lm-explanation", "lm-explanation-faithfulness", "lm-explanation-curve"]
    assert {value for _, value in panel.method.choices} == set(names("lm"))


@pytest.mark.parametrize("method", ["gradient_x_input", "attention"])
def test_a_later_step_is_explained_and_the_page_says_which(lm, view, method):
    n = len(view.steps)
    assert n >= 3
    for step in (1, 3, n):
        expl, out = explanation_panel.explain(lm, view, method, step=step)
        direct = lm.explain(view.text, method, step=step - 1, result=view.result)  # the pipeline's own
        assert expl.at_step == step - 1 and expl.output_ids == [view.steps[step - 1].token_id]
        np.testing.assert_allclose(expl.scores, direct.scores, atol=1e-6)
        np.testing.assert_allclose(expl.prefix_scores, direct.prefix_scores, atol=1e-6)
        assert expl.probability == pytest.approx(view.steps[step - 1].probability, abs=1e-4)
        assert f'data-step="{step}"' in out and f"Step {step} of {n} explained" in out
        assert " ".join(visible_text(out).split()) == " ".join(PROMPT.split())  # the prompt, as at step 1
        written = re.findall(r'<div class="explained-prefix".*?</div>', out, re.S)
        shown = [html.unescape(t) for t in re.findall(r'<span class="tok"[^>]*>(.*?)</span>', "".join(written))]
        assert shown == [s.token for s in view.steps[: step - 1]]  # the tokens written before it, in order
    assert explanation_panel.explain(lm, view, method)[0].at_step == view.step - 1  # none asked: the step shown


def test_a_later_steps_faithfulness_keeps_the_tokens_before_it(lm, view):
    expl, _ = explanation_panel.explain(lm, view, "gradient_x_input", step=3)
    text, fig = explanation_panel.faithfulness(lm, expl)
    assert "Step 3: the 2 tokens written before it stay in place" in text
    assert fig.data[0].y[0] == pytest.approx(view.steps[2].probability, abs=1e-4)  # the curve starts at p(token 3)
    first, _ = explanation_panel.explain(lm, view, "gradient_x_input", step=1)
    assert "stay in place" not in explanation_panel.faithfulness(lm, first)[0]


def handlers_of(demo, block, event: str) -> list:
    return [fn.fn for fn in demo.fns.values() if (block._id, event) in [tuple(t) for t in fn.targets]]


def test_the_button_explains_the_step_the_slider_shows(lm, view):
    import gradio as gr

    from pipelines.models.model_registry import ModelRegistry

    with gr.Blocks() as demo:
        state, step, go = gr.State(None), gr.Slider(1, 8, value=1), gr.Button()
        panel = explanation_panel.build(lm, "lm")
        explanation_panel.wire(panel, ModelRegistry.of(lm), state, go.click(lambda: None), step=step)
    assert panel.button is not None and panel.button.elem_id == "lm-explain-step"
    (pressed,) = handlers_of(demo, panel.button, "click")
    # moving the slider only redraws (the model does not run again), nor does a new continuation setting it
    assert handlers_of(demo, step, "change") == [] and handlers_of(demo, step, "input") == []
    (model, expl), out = pressed(view, "gradient_x_input", 2, "", progress=lambda *a, **k: None)
    assert expl.at_step == 1 and "Step 2 of" in out and model is None


def test_a_tab_without_steps_has_no_step_button():
    import gradio as gr

    with gr.Blocks():
        panel = explanation_panel.build(None, "sentiment")
    assert panel.button is None


def test_a_step_explained_against_another_of_its_top_tokens(lm, view):
    step = view.result.steps[0]
    other = step.top_k[1][0]
    expl, out = explanation_panel.explain(lm, view, "gradient_x_input", step=1, contrast=f"  {other.strip()} ")
    assert expl.contrast == {0: other} and "rather than" in out
    plain, _ = explanation_panel.explain(lm, view, "gradient_x_input", step=1)
    assert not np.allclose(expl.scores, plain.scores)
    _, said = explanation_panel.explain(lm, view, "attention", step=1, contrast=other)
    assert "reads attention, the same whatever the alternative" in said
    none, message = explanation_panel.explain(lm, view, "gradient_x_input", step=1, contrast="no such token here")
    assert none is None and "is not one of the top" in message
