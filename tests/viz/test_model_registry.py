"""The per-tab model registry: models by name, loaded on first use, the default kept, at most `keep` others."""

import threading

import pytest

from pipelines.models.model_registry import ModelEntry, ModelRegistry


def registry(keep=2):
    loads = []

    def load(entry):
        loads.append(entry.name)
        return f"pipeline of {entry.source}"

    entries = [ModelEntry(n, f"src-{n}") for n in ("a", "b", "c", "d")]
    return ModelRegistry(entries, load, keep=keep, wrap=lambda p: p.upper()), loads


def test_lazy_loading_and_wrapping():
    models, loads = registry()
    assert loads == [] and models.default == "a" and models.names == ["a", "b", "c", "d"]
    assert models.get("b") == "PIPELINE OF SRC-B" and loads == ["b"]
    assert models.get("b") == "PIPELINE OF SRC-B" and loads == ["b"]  # loaded once


def test_unknown_or_missing_name_is_the_default():
    models, _ = registry()
    assert models.name_of(None) == models.name_of("gone") == "a"
    assert models.get("no longer offered") == models.get() == "PIPELINE OF SRC-A"


def test_bounded_memory_keeps_the_default_and_the_most_recent():
    models, loads = registry(keep=2)
    for name in ("a", "b", "c", "b", "d"):
        models.get(name)
    assert models.loaded() == ["a", "b", "d"]  # c was the least recently used of the others
    models.get("c")
    assert loads.count("c") == 2 and "a" in models.loaded() and len(models.loaded()) == 3


def test_a_preloaded_pipeline_is_not_loaded_again():
    models = ModelRegistry.of("ready", name="only")
    assert models.get() == "ready" and models.names == ["only"]


def test_load_errors_reach_the_caller_and_nothing_is_kept():
    def load(entry):
        raise OSError(f"{entry.source} missing")

    models = ModelRegistry([ModelEntry("a", "x"), ModelEntry("b", "y")], load)
    with pytest.raises(OSError, match="y missing"):
        models.get("b")
    assert models.loaded() == []


def test_concurrent_first_use_loads_once():
    models, loads = registry()
    threads = [threading.Thread(target=models.get, args=("c",)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == ["c"]


def test_empty_registry_is_refused():
    with pytest.raises(ValueError):
        ModelRegistry([], load=None)


def test_bundled_alternatives_are_offered_beside_a_bundled_default_only(tmp_path, monkeypatch):
    """The from-scratch sentiment model is offered one click from the default when the default is a bundled folder
    (unset, or assets/... as a Space sets it), never twice, and not beside a model named by a repo id or a path."""
    from viz.models import loading

    (tmp_path / "assets" / "sentiment-scratch").mkdir(parents=True)
    monkeypatch.setattr(loading, "ROOT", tmp_path)
    scratch = [str(tmp_path / "assets" / "sentiment-scratch")]
    for value, offered in (("", scratch), ("assets/sentiment", scratch), ("assets/sentiment-scratch", []),
                           ("user/attention-demo-sentiment", []), ("/somewhere/else", [])):  # fmt: skip
        monkeypatch.setenv("SENTIMENT_MODEL", value)
        assert loading.alternative_sources("SENTIMENT_MODEL") == offered, value


def test_two_models_of_one_name_are_both_offered(translation_dir, tmp_path):
    """Two translators of one size, neither with a display_name, had the same name in the model choice: the second
    replaced the first, which could not be chosen. Each now gets where it loads from after the shared name; the
    same folder named twice (another spelling of its path included) is offered once."""
    import shutil

    from pipelines import TranslationPipeline
    from viz.models import loading

    first, second = (shutil.copytree(translation_dir, tmp_path / name) for name in ("mine", "yours"))
    for folder in (first, second):
        (folder / "metrics.json").unlink(missing_ok=True)
    default = TranslationPipeline.from_pretrained(str(first))
    again = str(tmp_path / "yours" / ".." / "mine")  # the default's folder, spelt otherwise
    models = loading.translation_registry(default, lambda p: p, [str(second), again])
    shared = loading.translation_name(str(first))
    assert models.names == [f"{shared} (mine)", f"{shared} (yours)"]
    assert models.get(models.names[0]) is default and models.get(models.names[1]).source == str(second)
