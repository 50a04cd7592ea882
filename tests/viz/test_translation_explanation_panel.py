"""The translation explanation panel's handlers on the tiny model."""

import numpy as np

from viz.explanations import translation_explanation_panel as panel
from viz.translation.handlers import translate

GERMAN = "Zwei Hunde spielen im Schnee."


def test_explains_the_translation_on_screen_with_heatmaps(translation):
    view, english, _ = translate(translation, GERMAN, "greedy", 2)
    expl, heat, agree = panel.explain(translation, view, "gradient_x_input")
    assert expl.translation == english and expl.target_tokens == [s.token for s in view.steps]
    assert heat.data[0].z.shape == (len(expl.target_tokens), len(expl.source_tokens))
    assert heat.data[0].zmin == -heat.data[0].zmax and heat.data[0].colorscale  # diverging, centred on 0
    assert agree.data[0].z.shape == expl.head_agreement.shape
    text = panel.faithfulness(translation, expl)
    assert "comprehensiveness" in text and "random" in text and "agrees best" in text


def test_contrast_at_the_slider_step(translation):
    view, _, _ = translate(translation, GERMAN, "greedy", 2)
    choices = panel.alternatives(view, 2)
    alts = [c[0] if isinstance(c, tuple) else c for c in choices.choices][1:]
    assert 1 <= len(alts) <= 4 and view.steps[1].token not in alts
    expl, heat, _ = panel.explain(translation, view, "gradient_x_input", step=2, alternative=alts[0])
    assert expl.contrast == {1: alts[0]} and "(vs " in heat.data[0].y[1]
    assert "rather than" in panel.faithfulness(translation, expl)


def test_nothing_to_explain(translation):
    assert panel.explain(translation, None, "gradient_x_input") == (None, None, None)
    assert panel.faithfulness(translation, None) == ""
    assert panel.alternatives(None, 1).value == panel.NO_CONTRAST


def test_an_explanation_that_fails_says_so(translation, monkeypatch):
    """The panel showed nothing at all when the explanation failed (as it did in the served app, whose model
    process could not be sent the progress callback): now the plot says it could not be computed."""
    view, _, _ = translate(translation, GERMAN, "greedy", 2)

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(translation, "explain", fail)
    expl, heat, agree = panel.explain(translation, view, "gradient_x_input")
    assert expl is None and agree is None
    assert "could not be computed for this translation" in heat.layout.annotations[0].text


def test_integrated_gradients_report_progress_step_by_step(translation, monkeypatch):
    """Issue 25 item 11: integrated gradients for a translation took 7 s with no progress; the steps go a few at
    a time with progress between them, and the numbers are those of one call over every step."""
    from pipelines.explanations import methods
    from pipelines.explanations.methods import STEPS_PER_CALL
    from viz.page.progress import reporter

    calls = []
    report = reporter(lambda value, desc, unit: calls.append(value), "Integrated gradients", "steps")
    view, _, _ = translate(translation, GERMAN, "greedy", 4)
    expl, fig, _ = panel.explain(translation, view, "integrated_gradients", progress=report)
    n = len(expl.produced)
    assert calls[-1] == (n, n) and len(calls) == -(-n // STEPS_PER_CALL)
    monkeypatch.setattr(methods, "STEPS_PER_CALL", 1000)  # every step in one call
    whole = translation.explain(GERMAN, "integrated_gradients", result=view.result)
    np.testing.assert_allclose(expl.scores, whole.scores, atol=1e-4)


def test_mean_cross_attention_is_shown_without_a_sign(translation):
    """Issue 25 item 3, translation tab: the unsigned attention view hovered a signed 'score +0.123'."""
    view, _, _ = translate(translation, GERMAN, "greedy", 2)
    _, heat, _ = panel.explain(translation, view, "attention")
    assert "no sign" in heat.data[0].hovertemplate and "+" not in heat.data[0].hovertemplate.split("<br>")[-1]
    _, heat, _ = panel.explain(translation, view, "gradient_x_input")
    assert "score %{z:+.3f}" in heat.data[0].hovertemplate
