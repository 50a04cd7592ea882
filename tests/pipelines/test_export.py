"""The "download data" JSON: written, loaded back, and checked against the pipeline's own result."""

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pipelines.export import SCHEMA_VERSION, model_info, to_jsonable
from viz.share import downloads


def load(path) -> dict:
    assert path is not None and Path(path).suffix == ".json"
    return json.loads(Path(path).read_text(encoding="utf-8"))


def assert_maps(exported, maps, tol=1e-5):
    assert len(exported) == len(maps)
    for got, want in zip(exported, maps):
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want.double().numpy(), atol=tol)


def test_sentiment_export_matches_the_pipeline(sentiment):
    text = "A warm, <b>funny</b> film – über alles! 🎬"
    path, message = downloads.sentiment_download(sentiment, text)
    data, result = load(path), sentiment(text)
    assert message == "" and data["schema"] == "attention-demo/sentiment" and data["schema_version"] == SCHEMA_VERSION
    assert data["input"]["text"] == text
    assert data["prediction"]["label"] == result.label
    assert data["prediction"]["probabilities"] == pytest.approx(result.probabilities, abs=1e-6)
    assert [(t["text"], t["start"], t["end"]) for t in data["tokens"]] == [
        (t.text, t.start, t.end) for t in result.tokens
    ]
    assert all(text[t["start"] : t["end"]] == t["text"] for t in data["tokens"])  # offsets point into the input
    assert_maps(data["attentions"]["self"], result.attentions)
    cfg = sentiment.model.config
    assert np.asarray(data["attentions"]["self"]).shape == (
        cfg.n_layers,
        cfg.n_heads,
        len(result.tokens),
        len(result.tokens),
    )
    np.testing.assert_allclose(data["pool_weights"], result.pool_weights.numpy(), atol=1e-5)
    explanation = sentiment.explain(text)  # the default method: deterministic for these methods
    assert data["explanation"]["method"] == explanation.method and data["explanation"]["target"] == explanation.target
    np.testing.assert_allclose(data["explanation"]["scores"], np.asarray(explanation.scores, dtype=float), atol=1e-5)
    table = sentiment.head_table(text)
    assert [(r["layer"], r["head"]) for r in data["head_table"]] == [(r["layer"], r["head"]) for r in table]
    drawn = sentiment.layer_by_layer(text)  # the Layer by layer section, as drawn
    lens, attribution = drawn.lens, drawn.attribution
    assert data["layer_by_layer"]["lens"]["final_prob"] == pytest.approx(lens.final_prob, abs=1e-5)
    assert data["layer_by_layer"]["attribution"]["total"] == pytest.approx(attribution.total, abs=1e-5)
    np.testing.assert_allclose(data["layer_by_layer"]["attribution"]["heads"], attribution.heads, atol=1e-5)


def test_translation_export_matches_the_pipeline(translation):
    text = "Zwei Hunde spielen."
    data = load(downloads.translation_download(translation, text, "greedy", 4)[0])
    result = translation(text, beam_size=1)
    assert data["input"] == {"text": text, "decoding": "greedy", "beam_size": 1}
    assert data["translation"] == result.translation and data["score"] == pytest.approx(result.score, abs=1e-5)
    assert [t["text"] for t in data["target_tokens"]] == result.target_tokens
    assert [t["id"] for t in data["source_tokens"]] == [t.id for t in result.source_tokens]
    for kind, maps in (
        ("encoder", result.encoder_attentions),
        ("decoder", result.decoder_attentions),
        ("cross", result.cross_attentions),
    ):
        assert_maps(data["attentions"][kind], maps)
    assert [s["token"] for s in data["steps"]] == [s.token for s in result.steps]
    assert data["steps"][0]["top_k"][0][1] == pytest.approx(result.steps[0].top_k[0][1], abs=1e-6)
    assert data["explanation"] is not None and "error" not in data["explanation"]
    assert {r["kind"] for r in data["head_table"]} == {"encoder", "decoder", "cross"}
    drawn = translation.layer_by_layer(text, step=0, result=result)
    lens, attribution = drawn.lens, drawn.attribution
    assert data["layer_by_layer"]["lens"]["top_tokens"] == lens.top_tokens
    np.testing.assert_allclose(data["layer_by_layer"]["attribution"]["cross"], attribution.cross, atol=1e-5)


def test_model_info_names_the_model_without_server_paths(sentiment, sentiment_dir):
    info = model_info(sentiment)
    assert info["source"] == Path(sentiment_dir).name  # a folder outside the app: its name only
    assert len(info["weights_sha256"]) == 64 and info["revision"] is None
    assert info["config"]["n_heads"] == sentiment.model.config.n_heads


def test_model_info_keeps_small_settings_as_they_are():
    """The shipped MiniLM model's export said layer_norm_eps 0.0 (rounded like attention weights); it is 1e-12."""
    settings = {"layer_norm_eps": 1e-12, "dropout": 0.1, "n_heads": 12}
    bert_like = SimpleNamespace(source=None, adapter=SimpleNamespace(config_dict=lambda: settings))
    assert model_info(bert_like)["config"] == settings


@dataclass
class FakeExplanation:
    method: str
    scores: np.ndarray


class WithExtras:
    """The pipeline as it will be once explanations and the head table land (other branches)."""

    def __init__(self, pipe):
        self.pipe, self.calls = pipe, []

    def __call__(self, *args, **kwargs):
        return self.pipe(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.pipe, name)

    def explain(self, text, method=None):
        self.calls.append(("explain", text, method))
        return FakeExplanation(method or "default", np.array([0.5, np.nan, -0.25]))

    def head_table(self, text):
        return [{"kind": "self", "layer": 0, "head": 1, "entropy": np.float32(1.5), "effect": torch.tensor(0.25)}]


def test_explanations_and_head_table_are_included_when_the_pipeline_has_them(sentiment):
    pipe = WithExtras(sentiment)
    data = load(downloads.sentiment_download(pipe, "Good film.", "integrated_gradients")[0])
    assert data["explanation"] == {"method": "integrated_gradients", "scores": [0.5, None, -0.25]}
    assert data["head_table"] == [{"kind": "self", "layer": 0, "head": 1, "entropy": 1.5, "effect": 0.25}]
    assert pipe.calls == [("explain", "Good film.", "integrated_gradients")]


def test_a_failing_extra_is_recorded_not_fatal(sentiment):
    pipe = WithExtras(sentiment)
    pipe.head_table = lambda text: 1 / 0
    data = load(downloads.sentiment_download(pipe, "Good film.")[0])
    assert data["head_table"] == {"error": "ZeroDivisionError: division by zero"}
    assert data["prediction"]["label"] in ("negative", "positive")


def test_nothing_to_export_gives_a_message(sentiment, translation):
    assert downloads.sentiment_download(sentiment, "  \n ")[0] is None
    path, message = downloads.translation_download(translation, "", "beam search", 4)
    assert path is None and "Please type or paste a German sentence" in message


def test_to_jsonable_handles_what_results_hold():
    value = {"t": torch.tensor([[1.0, float("inf")]]), "n": np.int64(3), "b": np.bool_(True), "x": (1, "a", None)}
    assert to_jsonable(value) == {"t": [[1.0, None]], "n": 3, "b": True, "x": [1, "a", None]}
    assert json.dumps(to_jsonable({"f": np.float16(0.1234567)}))


def test_the_served_app_exports_its_explanations(sentiment, translation):
    """The app serves its pipelines through the batcher (pipelines.hosting.serving): there explain(text, method=...)
    failed ("_one() got multiple values for argument 'method'"), and every download carried that error instead of the
    explanation shown."""
    from pipelines.hosting.microbatch import MicroBatcher
    from pipelines.hosting.serving import serve
    from pipelines.tasks import SENTIMENT, TRANSLATION

    batcher = MicroBatcher(4)
    sent, trans = serve(SENTIMENT, sentiment, batcher), serve(TRANSLATION, translation, batcher)
    data = load(downloads.sentiment_download(sent, "Good film.", "occlusion")[0])
    assert data["explanation"]["method"] == "occlusion" and "error" not in data["explanation"]
    assert data["explanation"]["scores"] == pytest.approx(
        to_jsonable(sentiment.explain("Good film.", method="occlusion"))["scores"], abs=1e-5
    )
    data = load(downloads.translation_download(trans, "Zwei Hunde spielen.", "greedy", 4)[0])
    assert data["explanation"] is not None and "error" not in data["explanation"]
