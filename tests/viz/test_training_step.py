"""The training-step slider (#sentiment-training-step, #translation-training-step) on the tab's model registry: a
model's snapshots are registry entries "<model>@step-<N>", loaded on first use and bounded in memory; the slider's
position chooses the one the tab runs, and every panel follows the model the view records."""

import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_models import add_snapshots

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.models.model_registry import ModelEntry, ModelRegistry
from pipelines.models.snapshots import Snapshot
from transformer import CheckpointError, Seq2SeqTransformer, TransformerClassifier
from viz.attention import inside_head_panel, task_views
from viz.examples import GERMAN, REVIEWS
from viz.heads.measure import head_table
from viz.models import training_step
from viz.models.loading import sentiment_registry, translation_registry
from viz.sentiment.handlers import analyze_review
from viz.translation.handlers import translate

ROOT = Path(__file__).resolve().parents[2]

STEPS = [0, 10, 100]


@pytest.fixture(scope="module")
def translator_dir(translation_dir, tmp_path_factory):
    """The tiny translator with three snapshots (BLEU 0.50, 0.51, 0.52)."""
    folder = shutil.copytree(translation_dir, tmp_path_factory.mktemp("models") / "translator")
    return add_snapshots(folder, Seq2SeqTransformer, STEPS, metric="bleu")


@pytest.fixture(scope="module")
def classifier_dir(sentiment_dir, tmp_path_factory):
    folder = shutil.copytree(sentiment_dir, tmp_path_factory.mktemp("models") / "classifier")
    return add_snapshots(folder, TransformerClassifier, STEPS)


@pytest.fixture()
def translators(translator_dir):
    return translation_registry(TranslationPipeline.from_pretrained(str(translator_dir)), lambda p: p)


def snap(step: int) -> Snapshot:
    return Snapshot(f"step-{step}", step, None, None, "accuracy", 0.5)


def test_snapshots_are_entries_of_their_model_not_choices():
    listed = {"src-a": [snap(100), snap(0)], "src-b": []}
    models = ModelRegistry([ModelEntry("a", "src-a"), ModelEntry("b", "src-b")], load=lambda e: e).add_snapshots(
        listed.get
    )
    assert models.names == ["a", "b"]  # the model choice offers the models only
    assert [e.name for e in models.snapshots("a")] == ["a@step-0", "a@step-100"]  # by step
    assert models.snapshots("a@step-100") == models.snapshots("a") and models.snapshots("b") == []
    assert models.model_of("a@step-0") == "a" and models.model_of("b") == "b"
    loaded = models.get("a@step-100")
    assert loaded.source == "src-a" and loaded.revision == "step-100" and models.entries["a"].revision is None


def test_the_model_notes_name_the_models_and_borrow_nothing_for_their_snapshots():
    from viz.models import model_choice

    listed = {"src-a": [snap(0), snap(100)], "src-b": []}
    entries = [ModelEntry("a", "src-a", note="9 of its 72 heads read [CLS]."), ModelEntry("b", "src-b", note="small")]
    models = ModelRegistry(entries, load=lambda e: e).add_snapshots(listed.get)
    shown = model_choice.notes(models)
    assert "**a**: 9 of its 72 heads" in shown and "**b**: small" in shown
    assert "@step" not in shown  # a snapshot is no choice of its own (an earlier page listed "a@step-0" with a's note)
    assert all(e.note == "" for e in models.snapshots("a"))


def test_a_model_whose_snapshots_cannot_be_listed_gets_none():
    def unreachable(source):
        raise CheckpointError(f"{source}: cannot reach the Hugging Face Hub")

    models = ModelRegistry([ModelEntry("a", "user/repo")], load=lambda e: e).add_snapshots(unreachable)
    assert models.snapshots("a") == [] and list(models.entries) == ["a"]


def test_slider_positions_choose_the_snapshot_or_the_model(translators):
    name = translators.default
    assert training_step.positions(translators, None) == [f"{name}@step-{s}" for s in STEPS] + [name]
    assert training_step.chosen(translators, None, 1) == f"{name}@step-10"
    # the right end, a missing position and one out of this model's range: the model itself
    assert {training_step.chosen(translators, name, p) for p in (3, None, 7, -1, "x")} == {name}


def test_the_score_beside_the_slider(translators):
    assert training_step.describe(translators, None, 0) == "**Step 0** (before any training): validation BLEU 0.50."
    assert "after 100 training steps, epoch 10.00): validation BLEU 0.52" in training_step.describe(
        translators, None, 2
    )
    # the right end names the points the slider holds, not "3 steps of its training" (they are snapshots)
    assert training_step.describe(translators, None, 3) == (
        "**The trained model**: move the slider left to see it at 3 points of its training, steps 0 to 100."
    )
    accuracy = Snapshot("step-5", 5, 0.5, 1.0, "accuracy", 0.8125)
    assert training_step.score_text(accuracy) == "validation accuracy 81.2%"
    assert training_step.score_text(Snapshot("step-5", 5, None, None, None, None)) == "no validation score recorded"


def test_step_0_of_a_model_started_from_public_weights_says_so():
    """Step 0 of the shipped sentiment model is MiniLM before fine-tuning, not an untrained model; the registry
    entry reads that from the folder's metrics.json (source_weights), and its snapshots carry it."""
    from pipelines.models.snapshots import starting_point
    from viz.models import loading

    shipped = loading.entry(str(ROOT / "assets" / "sentiment"))
    assert (
        shipped.started == "sentence-transformers/all-MiniLM-L6-v2's pre-trained weights, with an untrained classifier"
    )
    continued = {"source_weights": {"name": "org/bert", "continued_from": {"command": "..."}}}
    assert starting_point(continued) == "the model of an earlier fine-tuning run from org/bert's weights"
    assert starting_point({}) == starting_point({"source_weights": "odd"}) == ""

    models = ModelRegistry([ModelEntry("a", "src-a", started=shipped.started)], load=lambda e: e)
    models.add_snapshots({"src-a": [snap(0), snap(100)]}.get)
    assert training_step.describe(models, "a", 0) == (
        f"**Step 0** (before fine-tuning: {shipped.started}): validation accuracy 50.0%."
    )
    assert "(after 100 training steps" in training_step.describe(models, "a", 1)


def test_each_step_translates_with_its_snapshot_and_the_view_records_it(translators):
    """Moving the slider runs the same sentence by that snapshot: another translation, other cross-attention; the
    view records the snapshot's name, so the panels (head table, inside one head) use the same model."""
    views = {}
    for position in (0, 3):
        name = training_step.chosen(translators, None, position)
        views[position], _, _ = translate(translators.get(name), GERMAN[0], "greedy", None, name)
    early, final = views[0], views[3]
    assert early.model == f"{translators.default}@step-0" and final.model == translators.default
    assert early.result.translation != final.result.translation
    early_cross, final_cross = (task_views.kinds(v)["cross"].maps[0] for v in (early, final))
    assert early_cross.shape[-1] == final_cross.shape[-1] and not np.allclose(
        early_cross[..., :1], final_cross[..., :1]
    )
    pipe = translators.get(early.model)  # what every panel resolves
    table = head_table(pipe, "translation", GERMAN[0], "greedy", 2, result=early.result)[0]
    assert table is not None
    recorded = inside_head_panel.record(translators, early)
    assert np.allclose(recorded.kinds["cross"].weights[0].numpy(), early.result.cross_attentions[0].numpy(), atol=1e-5)


def test_snapshots_load_on_first_use_and_at_most_two_stay_besides_the_default(translators):
    assert translators.loaded() == [translators.default]
    for position in (0, 1, 2, 0):
        translators.get(training_step.chosen(translators, None, position))
    names = translators.loaded()
    assert translators.default in names and len(names) == 3 and names[-1].endswith("@step-0")


def test_sentiment_steps_classify_with_their_snapshot(classifier_dir):
    models = sentiment_registry(SentimentPipeline.from_pretrained(str(classifier_dir)), lambda p: p)
    review = REVIEWS[0][1]
    runs = [analyze_review(models.get(n), review, True, n) for n in training_step.positions(models, None)]
    assert [view.model for view, _, _ in runs] == training_step.positions(models, None)
    assert len({round(probs["positive"], 4) for _, probs, _ in runs}) > 1  # the snapshots read it differently
    slider, info = training_step.reset(models, models.default)
    assert slider.visible and slider.maximum == 3 and slider.value == 3 and "trained model" in info.value
    # its number box shows a position, not a training step: the label says which is which
    assert slider.label.startswith("Training snapshot (0: where training started; 3: the trained model")


def test_a_snapshots_status_says_which_step_it_is(classifier_dir):
    """At step 0 the label at the top of the page read "negative (54.0%)" for "Not bad at all..." with nothing near
    it saying that this was not the trained model, and the out-of-domain line told a visitor to run
    `python -m training.calibrate`: a snapshot's status now starts with its step, and that line is left out."""
    from viz import notices

    models = sentiment_registry(SentimentPipeline.from_pretrained(str(classifier_dir)), lambda p: p)
    for name in training_step.positions(models, None):
        status = training_step.noted(models, name, analyze_review(models.get(name), REVIEWS[0][1])[2])
        entry = models.entries[name]
        if entry.snapshot is None:
            assert "Training step" not in status
        else:
            assert status.startswith(f"**Training step {entry.snapshot.step:,}**") and "not the trained" in status
            assert notices.DOMAIN_OFF not in status and "training.calibrate" not in status


def test_a_model_without_snapshots_shows_no_slider(sentiment, translator_dir):
    from app import build_demo

    demo = build_demo(sentiment, TranslationPipeline.from_pretrained(str(translator_dir)))
    blocks = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    assert blocks["sentiment-training-step"].visible is False
    assert blocks["translation-training-step"].visible is True and blocks["translation-training-step"].maximum == 3
    assert "Step" not in blocks["sentiment-training-step-info"].value
    submit = [
        f for f in demo.fns.values() if any(demo.blocks.get(t[0]) is blocks["translation-submit"] for t in f.targets)
    ]
    assert any(blocks["translation-training-step"] in f.inputs for f in submit)  # the button runs the step chosen
