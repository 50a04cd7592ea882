"""Every tensor the serving pipelines build follows the model's device (what a GPU Space needs), checked on a CPU.

As tests/training/test_device.py does for training: the model lives on the `meta` device and FollowsDevice fails any
torch call whose tensors sit on two devices, naming the call. The app's two models are loaded as the app loads them,
with MODEL_DEVICE=meta, and each path it serves runs in full under the mode: the answer (with heads switched off too),
predictions, decoding (greedy and beam), every registered explanation method and its faithfulness, the head table and
scoring. What a pipeline hands back (attention maps, pooling weights, logits) must be on the CPU, where the views read
it (a meta tensor, like a CUDA one, refuses `.numpy()`). The `transformers` adapter runs the same paths, all but
transformers' own generate (it checks token ids' values, which meta tensors do not have).
"""

import pickle

import numpy as np
import pytest
import torch
from devices import DEVICE, FollowsDevice

from pipelines import SentimentPipeline, TranslationPipeline, explanations
from pipelines.models.folders import serving_device
from viz.models.loading import load_models

REVIEW = "A wonderful film, but the ending was far too long."
SENTENCE = "Ein Mann fährt mit dem Fahrrad."
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def app_models(sentiment_dir, translation_dir):
    """(sentiment, translation) pipelines as app.py loads them (viz.models.loading.load_models), with
    MODEL_DEVICE=meta."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MODEL_DEVICE", "meta")
        env.setenv("SENTIMENT_MODEL", str(sentiment_dir))
        env.setenv("TRANSLATION_MODEL", str(translation_dir))
        sentiment, translation = load_models()
    assert sentiment.error is None and translation.error is None
    return sentiment.pipeline, translation.pipeline


@pytest.fixture(scope="module")
def sentiment_on_meta(app_models):
    return app_models[0]


@pytest.fixture(scope="module")
def translation_on_meta(app_models):
    return app_models[1]


def on_cpu(tensors) -> bool:
    return all(t.device == CPU for t in tensors)


def test_model_device_chooses_where_models_run(monkeypatch):
    monkeypatch.delenv("MODEL_DEVICE", raising=False)
    assert serving_device() == CPU  # unset: the CPU, as before
    monkeypatch.setenv("MODEL_DEVICE", "meta")
    assert serving_device() == DEVICE and serving_device("cpu") == CPU  # an explicit choice wins
    for available, expected in ((True, "cuda"), (False, "cpu")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda available=available: available)
        assert serving_device("auto") == torch.device(expected)


def test_the_app_loads_its_models_on_model_device(app_models, sentiment_dir):
    for pipe in app_models:
        assert pipe.adapter.device == DEVICE and all(p.is_meta for p in pipe.model.parameters())
    assert SentimentPipeline.from_pretrained(str(sentiment_dir), device="cpu").adapter.device == CPU


def test_sentiment_answers_and_predicts_on_the_models_device(sentiment_on_meta):
    pipe = sentiment_on_meta
    with FollowsDevice() as mode:
        result = pipe(REVIEW)
        head_off = pipe(REVIEW, head_mask={("self", 0, 1): 0.0})
        probs = pipe.predict([REVIEW, "Dull.", ""], batch_size=2, head_mask={("self", 1, 0): 0.0})
        logits, lengths = pipe.raw_logits([REVIEW, "Dull."])
    assert mode.calls > 100  # the mode saw the work (it is not bypassed)
    assert result.label in pipe.labels and head_off.label in pipe.labels
    assert len(result.attentions) == pipe.n_layers and on_cpu([*result.attentions, result.pool_weights])
    assert len(probs) == 3 and all(set(p) == set(pipe.labels) for p in probs)
    assert logits.device == CPU and logits.shape == (2, len(pipe.labels)) and len(lengths) == 2


@pytest.mark.parametrize("method", explanations.names("sentiment"))
def test_each_review_explanation_and_its_faithfulness_run_on_the_models_device(sentiment_on_meta, method):
    with FollowsDevice():
        expl = sentiment_on_meta.explain(REVIEW, method=method)
        report = sentiment_on_meta.faithfulness(expl)
    assert expl.method == method and expl.scores.shape == (len(expl.tokens),)
    assert np.isfinite(report.method.comprehensiveness) and np.isfinite(report.random.sufficiency)


def test_the_sentiment_head_table_runs_on_the_models_device(sentiment_on_meta):
    pipe = sentiment_on_meta
    with FollowsDevice():
        rows = pipe.head_table(REVIEW)
    assert len(rows) == pipe.n_layers * pipe.n_heads and all(isinstance(r["effect"], float) for r in rows)


@pytest.mark.parametrize("beam_size", [1, 2])
def test_translation_decodes_on_the_models_device(translation_on_meta, beam_size):
    pipe = translation_on_meta
    with FollowsDevice() as mode:
        result = pipe(SENTENCE, beam_size=beam_size)
        head_off = pipe(SENTENCE, beam_size=beam_size, head_mask={("cross", 0, 1): 0.0})
        texts = pipe.translate([SENTENCE, "Zwei Hunde spielen.", ""], beam_size=beam_size, batch_size=2)
        score = pipe.score(SENTENCE, result.target_ids, head_mask={("encoder", 1, 0): 0.0})
    assert mode.calls > 100
    assert result.target_ids and head_off.target_ids and len(texts) == 3 and isinstance(score, float)
    maps = [*result.encoder_attentions, *result.decoder_attentions, *result.cross_attentions]
    assert len(maps) == sum(pipe.head_layers.values()) and on_cpu(maps)


def explain_and_measure(pipe, result, method: str):
    """pipe.explain of `result` by `method` and its faithfulness on every step, under the mode."""
    with FollowsDevice():
        expl = pipe.explain(SENTENCE, method=method, result=result)
        report = pipe.faithfulness(expl, max_steps=None)
    assert expl.scores.shape == (len(result.target_ids), len(result.source_tokens))
    assert report.per_step.shape == (len(result.target_ids),)


@pytest.mark.parametrize("method", explanations.names("translation"))
def test_each_translation_explanation_and_its_faithfulness_run_on_the_models_device(translation_on_meta, method):
    with FollowsDevice():
        result = translation_on_meta(SENTENCE, beam_size=1)
    explain_and_measure(translation_on_meta, result, method)


def test_the_translation_head_table_runs_on_the_models_device(translation_on_meta):
    pipe = translation_on_meta
    with FollowsDevice():
        rows = pipe.head_table(SENTENCE, beam_size=1)
    assert len(rows) == sum(pipe.head_layers.values()) * pipe.n_heads
    assert all(isinstance(r["effect"], float) for r in rows)


# --- the transformers adapter ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    from tiny_hf_models import make_bert_dir

    with pytest.MonkeyPatch.context() as env:
        env.setenv("MODEL_DEVICE", "meta")
        return SentimentPipeline.from_pretrained(str(make_bert_dir(tmp_path_factory.mktemp("hf") / "bert")))


def test_a_transformers_classifier_serves_every_path_on_the_models_device(hf_classifier):
    pipe = hf_classifier
    assert pipe.adapter.device == DEVICE
    with FollowsDevice():
        result = pipe(REVIEW, head_mask={("self", 0, 1): 0.0})
        probs = pipe.predict([REVIEW, "Dull."])
        rows = pipe.head_table(REVIEW)
    assert on_cpu([*result.attentions, result.pool_weights]) and len(probs) == 2
    assert len(rows) == pipe.n_layers * pipe.n_heads
    for method in pipe.explanation_methods:
        with FollowsDevice():
            report = pipe.faithfulness(pipe.explain(REVIEW, method=method))
        assert np.isfinite(report.method.score)


def test_a_transformers_adapter_keeps_its_device_through_a_model_process(hf_classifier):
    """A model process loads a transformers adapter again from where it came from: on the same device."""
    assert pickle.loads(pickle.dumps(hf_classifier.adapter)).device == DEVICE


def test_a_transformers_translator_explains_and_measures_on_the_models_device(tmp_path):
    """Everything after transformers' generate (which reads token ids' values): explanations, faithfulness, the
    head table and scoring of a translation decoded on the CPU, with the model then moved to meta."""
    from tiny_hf_models import make_marian_dir

    pipe = TranslationPipeline.from_pretrained(str(make_marian_dir(tmp_path / "marian")))
    result = pipe(SENTENCE, beam_size=1)
    pipe.model.to(DEVICE)
    assert pipe.adapter.device == DEVICE
    for method in pipe.explanation_methods:
        explain_and_measure(pipe, result, method)
    with FollowsDevice():
        rows = pipe.head_table(SENTENCE, result=result)
        score = pipe.score(SENTENCE, result.target_ids, head_mask={("cross", 0, 0): 0.0})
    assert len(rows) == sum(pipe.head_layers.values()) * pipe.n_heads and isinstance(score, float)


def test_a_device_that_is_not_there_is_named_in_the_tabs_message(monkeypatch):
    from viz.models.loading import load_models

    for value, words in [("gpu", "is not a device"), ("cuda:0", "sees no CUDA GPU")]:
        if words == "sees no CUDA GPU" and torch.cuda.is_available():
            continue
        monkeypatch.setenv("MODEL_DEVICE", value)
        for loaded in load_models():  # the app still starts: each tab says why it has no model
            assert loaded.pipeline is None and words in loaded.error
            assert loaded.error.startswith(f"MODEL_DEVICE={value!r}")
