"""The "Layer by layer" section: from the view a tab keeps, by the model that made it, the lens grid, the by-layer
lines, the attribution grid and notes whose numbers add up; a failure or no result is a message, not a traceback."""

import numpy as np
import pytest

from pipelines.models.model_registry import ModelRegistry
from pipelines.tasks import TRANSLATION
from viz.attention import layer_by_layer as lbl

TRANSLATION_NAME = TRANSLATION.name

REVIEW = "The film was not bad at all, and the acting was fine."
GERMAN = "Ein Mann fährt mit dem Fahrrad."


def check_drawn(out, n_layers: int, n_heads: int, columns: int):
    lens, by_layer, attribution, notes = out[:4]  # then the Read they came from
    assert len(lens.data[0].y) == n_layers + 1 and lens.data[0].z.shape[0] == n_layers + 1
    assert len(by_layer.data) == 2 and len(by_layer.data[0].y) == n_layers + 1
    assert attribution.data[0].z.shape == (n_layers, columns)
    assert "Attributed:" in notes and "Left over:" in notes
    # the notes' sum of the terms is the model's own number
    total = float(notes.split("= **")[1].split("**")[0])
    summed = float(notes.split(" = ")[-1].split(".\n")[0].rstrip("."))
    assert summed == pytest.approx(total, abs=2e-3)


def test_the_sentiment_section(sentiment):
    from viz.sentiment.handlers import analyze_review

    view = analyze_review(sentiment, REVIEW)[0]
    out = lbl.compute(ModelRegistry.of(sentiment), "sentiment", view, None, None)
    check_drawn(out, sentiment.n_layers, sentiment.n_heads, sentiment.n_heads + 1)
    other = [label for label in sentiment.labels if label != sentiment(REVIEW).label][0]
    against = lbl.compute(ModelRegistry.of(sentiment), "sentiment", view, None, other)
    assert f"minus that of **{other}**" in against[3]


def test_the_translation_section_at_a_step(translation):
    from viz.translation.handlers import translate

    view = translate(translation, GERMAN, "greedy")[0]
    out = lbl.compute(ModelRegistry.of(translation), "translation", view, 2, None)
    L = translation.head_layers["decoder"]
    check_drawn(out, L, translation.n_heads, 2 * translation.n_heads + 1)  # self heads, cross heads, MLP
    assert f"**{view.result.target_tokens[1]}**" in out[3]


def test_the_next_word_section_follows_the_step(lm):
    from viz.next_word.handlers import generate

    view = list(generate(lm, "The film was a", "greedy", max_new_tokens=3))[-1][0]
    out = lbl.compute(ModelRegistry.of(lm), "lm", view, 2, None)
    check_drawn(out, lm.n_layers, lm.n_heads, lm.n_heads + 1)
    assert f"**{view.result.steps[1].token}**" in out[3]
    assert len(out[0].data[0].x) == len(view.result.tokens) + 1  # what it had read at step 2


def test_moving_the_step_redraws_from_what_was_read_without_running_the_model(lm, monkeypatch):
    from viz.next_word.handlers import generate

    view = list(generate(lm, "The film was a", "greedy", max_new_tokens=3))[-1][0]
    runs = []
    every_step = lm.layer_by_layer_steps
    monkeypatch.setattr(lm, "layer_by_layer_steps", lambda *a, **k: runs.append(1) or every_step(*a, **k))
    models = ModelRegistry.of(lm)
    first = lbl.compute(models, "lm", view, 1, None)
    read = first[4]
    assert len(runs) == 1 and len(read.steps) == 3
    for step in (3, 2, 1):  # the slider moves: no model runs, the same figures as reading that step afresh
        moved = lbl.compute(models, "lm", view, step, None, "logit lens", read)
        assert len(runs) == 1 and moved[4] is read
        fresh = lm.layer_by_layer(view.result.prompt, result=view.result, step=step - 1)  # the slider counts from 1
        assert moved[0].data[0].x == tuple(f"{i}: {t}" for i, t in enumerate(fresh.lens.tokens))
        np.testing.assert_allclose(moved[2].data[0].z[:, :-1], fresh.attribution.heads, atol=1e-5)
    lbl.compute(models, "lm", view, 2, "the", "logit lens", read)  # another contrast: read again
    assert len(runs) == 2


def test_the_translation_step_slider_redraws_without_running_the_model(translation, monkeypatch):
    from viz.translation.handlers import translate

    view = translate(translation, GERMAN, "greedy")[0]
    runs, every_step = [], translation.layer_by_layer_steps
    monkeypatch.setattr(translation, "layer_by_layer_steps", lambda *a, **k: runs.append(1) or every_step(*a, **k))
    models = ModelRegistry.of(translation)
    read = lbl.compute(models, TRANSLATION_NAME, view, 1, None)[4]
    moved = lbl.compute(models, TRANSLATION_NAME, view, 2, None, "logit lens", read)
    assert len(runs) == 1 and f"**{view.result.target_tokens[1]}**" in moved[3]


def test_no_result_and_a_bad_contrast_are_messages(lm):
    assert "Run the model first" in lbl.compute(ModelRegistry.of(lm), "lm", None, None, None)[3]
    from viz.next_word.handlers import generate

    view = list(generate(lm, "The film was a", "greedy", max_new_tokens=2))[-1][0]
    odd = lbl.compute(ModelRegistry.of(lm), "lm", view, 1, "no such token anywhere")
    assert odd[2] is None and "not one of the 10 most likely" in odd[3] and odd[0] is not None  # the lens stands
    assert np.isfinite(lbl.compute(ModelRegistry.of(lm), "lm", view, 1, None)[2].data[0].z).all()


def test_the_bundled_next_word_model_reads_out_through_its_tuned_lens():
    from pathlib import Path

    from pipelines import LanguageModelPipeline
    from viz.next_word.handlers import generate

    lm = LanguageModelPipeline.from_pretrained(str(Path(__file__).resolve().parents[2] / "assets" / "lm"))
    view = list(generate(lm, "The film was a", "greedy", max_new_tokens=2))[-1][0]
    plain = lbl.compute(ModelRegistry.of(lm), "lm", view, 2, None, "logit lens")
    tuned = lbl.compute(ModelRegistry.of(lm), "lm", view, 2, None, "tuned lens")
    assert "(tuned lens)" in tuned[0].layout.title.text and "(logit lens)" in plain[0].layout.title.text
    assert [t.name for t in tuned[1].data][-1] == "KL, logit lens" and len(plain[1].data) == 2
    np.testing.assert_allclose(tuned[1].data[2].y, plain[1].data[1].y, atol=1e-5)  # the dashed line is the logit lens
    assert "Tuned lens" in tuned[3]
    # trained to match the final distribution, it is nearer to it than the logit lens at every layer before the last
    assert all(t < p for t, p in zip(tuned[1].data[1].y[:-1], plain[1].data[1].y[:-1]))


def test_each_head_switched_off_beside_its_direct_part(lm, sentiment):
    from viz.next_word.handlers import generate
    from viz.sentiment.handlers import analyze_review

    view = list(generate(lm, "The film was a", "greedy", max_new_tokens=3))[-1][0]
    fig, notes = lbl.compute_switch(ModelRegistry.of(lm), "lm", view, 2, None)
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), lm.switch_off(
        view.result.prompt, result=view.result, step=1).heads, atol=1e-6)  # fmt: skip
    assert "Pearson" in notes and "what the later heads and layers do" in notes
    review = analyze_review(sentiment, REVIEW)[0]
    stopped, said = lbl.compute_switch(ModelRegistry.of(sentiment), "sentiment", review, None, None, stop=lambda: True)
    assert all(v is None for row in stopped.data[0].z for v in row) and "Stopped before" in said
    assert "Run the model first" in lbl.compute_switch(ModelRegistry.of(lm), "lm", None, None, None)[1]


def test_the_translators_heads_and_cross_heads_switched_off(translation):
    from viz.translation.handlers import translate

    view = translate(translation, GERMAN, "greedy")[0]
    fig, notes = lbl.compute_switch(ModelRegistry.of(translation), TRANSLATION_NAME, view, 2, None)
    L, H = translation.head_layers["decoder"], translation.n_heads
    assert np.array(fig.data[0].z, dtype=float).shape == (L, 2 * H) and list(fig.data[0].x[H:]) == [
        f"x{h}" for h in range(H)
    ]
    off = translation.switch_off(GERMAN, step=1, result=view.result)
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float)[:, H:], off.cross, atol=1e-6)
    assert "Pearson" in notes
