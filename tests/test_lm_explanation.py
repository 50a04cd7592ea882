"""The Next word tab's explanation panel (viz.explanations.explanation_panel, task "lm") on the tiny language model:
the prompt shaded by what drives the first new token, every registered method, the faithfulness beside random."""

import html
import re

import pytest

from pipelines import LanguageModelPipeline
from pipelines.explanations import is_signed, label, names
from viz import language_model as lm
from viz.explanations import explanation_panel

PROMPT = "This movie was <b>great</b> & fun"


@pytest.fixture(scope="module")
def pipe(lm_dir):
    return LanguageModelPipeline.from_pretrained(str(lm_dir))


@pytest.fixture(scope="module")
def view(pipe):
    return list(lm.generate(pipe, PROMPT, max_new_tokens=4))[-1][0]


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
def test_the_prompt_is_shaded_toward_the_first_new_token(pipe, view, method):
    expl, out = explanation_panel.explain(pipe, view, method)
    first = view.steps[0]
    assert expl.task == "lm" and expl.method == method and expl.at_step == 0
    assert expl.output_ids == [first.token_id]  # the token on screen, not decoded again
    assert expl.probability == pytest.approx(first.probability, abs=1e-4)
    assert "attr-legend" in out and "<b>great" not in out and "&lt;" in out
    assert " ".join(visible_text(out).split()) == " ".join(PROMPT.split())  # the prompt, every character
    assert ("against" in out) == is_signed(method)
    assert label("lm", method) in html.unescape(out)


def test_a_sampled_continuation_explains_its_own_first_token(pipe):
    view = list(lm.generate(pipe, "This movie was", "sampled", 1.5, 1.0, 3, 3))[-1][0]
    expl, _ = explanation_panel.explain(pipe, view, "gradient_x_input")
    assert expl.output_ids == [view.steps[0].token_id]


def test_faithfulness_is_shown_beside_random_with_a_deletion_curve(pipe, view):
    expl, _ = explanation_panel.explain(pipe, view, "integrated_gradients")
    text, fig = explanation_panel.faithfulness(pipe, expl)
    assert "on your prompt?" in text and "comprehensiveness" in text and "random" in text
    assert "convergence delta" in text and "Default method: **Gradient × input**" in text
    assert [t.name for t in fig.data] == ["this method", "random"] and list(fig.data[0].x) == [0, 1, 5, 10, 20, 50]
    assert "calibrated" not in fig.layout.title.subtitle.text  # the model's own probability of the token


def test_no_view_and_a_failing_method_give_a_message(pipe, view):
    assert explanation_panel.explain(pipe, None, "occlusion") == (None, "")
    expl, out = explanation_panel.explain(pipe, view, "no-such-method")
    assert expl is None and "could not be computed for this prompt" in out


def test_the_panel_has_its_own_ids_and_the_tabs_default(pipe):
    import gradio as gr

    with gr.Blocks():
        panel = explanation_panel.build(pipe, "lm")
    assert panel.task == "lm" and panel.method.value == "gradient_x_input"
    ids = [panel.method.elem_id, panel.highlight.elem_id, panel.faithfulness.elem_id, panel.curve.elem_id]
    assert ids == ["lm-explanation-method", "lm-explanation", "lm-explanation-faithfulness", "lm-explanation-curve"]
    assert {value for _, value in panel.method.choices} == set(names("lm"))
