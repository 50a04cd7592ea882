"""Loading the two pipelines once at start, from Hub repo ids or local folders named by env vars: ours or
`transformers` models (a model id or folder), and optionally a second sentiment model to compare with."""

import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SOURCES = {"SENTIMENT_MODEL": "assets/sentiment", "TRANSLATION_MODEL": "assets/translation"}
log = logging.getLogger(__name__)
# An absolute path (POSIX or Windows) of two or more parts; only its last part is kept.
_ABS_PATH = re.compile(r"(?:(?<![\w.~-])/|\b[A-Za-z]:\\)(?:[^\s/\\:'\"`,;()]+[/\\])+([^\s/\\:'\"`,;()]*)")


@dataclass
class LoadedModel:
    """A pipeline, or None with the reason it is not available."""

    pipeline: object | None
    source: str
    error: str | None = None


def model_source(env_var: str) -> str:
    """The repo id or folder to load: $env_var if set, else the bundled folder under the repo root.

    A relative folder that exists under the repo root but not under the current directory is taken from
    the repo root, so `SENTIMENT_MODEL=assets/sentiment python /elsewhere/app.py` still works.
    """
    value = os.environ.get(env_var, "").strip()
    if not value and env_var in DEFAULT_SOURCES:
        return str(ROOT / DEFAULT_SOURCES[env_var])
    if not os.path.isabs(value) and not os.path.exists(value) and (ROOT / value).is_dir():
        return str(ROOT / value)
    return value


def load_pipeline(pipeline_cls, env_var: str) -> LoadedModel:
    """pipeline_cls.from_pretrained(source): the same path for repo ids and folders. Never raises."""
    from transformer import CheckpointError

    source = model_source(env_var)
    try:
        return LoadedModel(pipeline_cls.from_pretrained(source), source)
    except CheckpointError as e:
        log.warning("%s not loaded: %s", env_var, e)
        return LoadedModel(None, source, str(e))
    except Exception as e:  # the app must start even when one model is broken
        log.exception("%s failed to load", env_var)
        return LoadedModel(None, source, f"{source}: {type(e).__name__}: {e}")


def load_models() -> tuple[LoadedModel, LoadedModel]:
    """(sentiment, translation), each from $SENTIMENT_MODEL / $TRANSLATION_MODEL or assets/."""
    from pipelines import SentimentPipeline, TranslationPipeline

    return load_pipeline(SentimentPipeline, "SENTIMENT_MODEL"), load_pipeline(TranslationPipeline, "TRANSLATION_MODEL")


# Bundled beside the default sentiment model: the from-scratch one, offered one click away when the default is ours.
BUNDLED_ALTERNATIVES = {"SENTIMENT_MODEL": ["assets/sentiment-scratch"]}


def _name(metrics: dict, source: str) -> str:
    """The display_name a model's metrics.json records, else the last part of where it loads from."""
    if metrics.get("display_name"):
        return str(metrics["display_name"])
    source = str(source or "model").rstrip("/")
    return source.rsplit("/", 1)[-1] or source


def display_name(pipe, source: str = "") -> str:
    """What the model choice calls a loaded pipeline."""
    return _name(getattr(pipe, "metrics", None) or {}, source or getattr(pipe, "source", ""))


def alternative_sources(env_var: str) -> list[str]:
    """The bundled models offered beside the default when $env_var is not set (and they are there)."""
    if os.environ.get(env_var, "").strip():
        return []
    return [str(ROOT / p) for p in BUNDLED_ALTERNATIVES.get(env_var, []) if (ROOT / p).is_dir()]


def folder_metrics(source: str) -> dict:
    """A local model folder's metrics.json without loading its weights ({} for a repo id or a folder without)."""
    path = Path(source) / "metrics.json"
    try:
        metrics = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        return {}
    return metrics if isinstance(metrics, dict) else {}


def entry_name(source: str) -> str:
    """A model's display name without loading its weights (its folder's metrics.json)."""
    return _name(folder_metrics(source), source)


def entry(source: str, pipe=None):
    """The registry entry of a model: its name, the note its metrics.json records (what it is, what its heads
    do, measured) and what its training started from."""
    from pipelines.model_registry import ModelEntry
    from pipelines.snapshots import starting_point

    metrics = getattr(pipe, "metrics", None) or folder_metrics(source)
    name = display_name(pipe, source) if pipe is not None else entry_name(source)
    return ModelEntry(name, source, str(metrics.get("display_note", "")), started=starting_point(metrics))


def sentiment_registry(default, wrap, compare=None, sources: list[str] = ()):
    """The sentiment tab's ModelRegistry: the default pipeline (loaded; served by the API), a second one to compare
    with ($SENTIMENT_COMPARE_MODEL, loaded), then `sources` (python app.py: alternative_sources), loaded on first
    use. wrap: the server's stand-in for each pipeline as it loads."""
    from pipelines import SentimentPipeline
    from pipelines.model_registry import ModelRegistry

    loaded = {display_name(p): p for p in (default, compare) if p is not None}
    entries = [entry(str(getattr(p, "source", "")), p) for p in loaded.values()]
    entries += [entry(s) for s in sources if entry_name(s) not in loaded]
    registry = ModelRegistry(
        entries, lambda e: SentimentPipeline.from_pretrained(e.source, revision=e.revision), wrap=wrap
    )
    registry.preload(loaded)
    return registry.add_snapshots()


def translation_registry(default, wrap):
    """The translation tab's ModelRegistry: the default pipeline (loaded; served by the API) and its training
    snapshots (the training-step slider), loaded on first use. wrap: the server's stand-in for each as it loads."""
    from pipelines import TranslationPipeline
    from pipelines.model_registry import ModelRegistry

    entries = [entry(str(getattr(default, "source", "")), default)]
    registry = ModelRegistry(
        entries, lambda e: TranslationPipeline.from_pretrained(e.source, revision=e.revision), wrap=wrap
    )
    registry.preload({entries[0].name: default})
    return registry.add_snapshots()


def load_compare_model():
    """The sentiment pipeline named by $SENTIMENT_COMPARE_MODEL (a second model for the compare view), or None
    when it is not set or does not load."""
    from pipelines import SentimentPipeline

    if not os.environ.get("SENTIMENT_COMPARE_MODEL", "").strip():
        return None
    return load_pipeline(SentimentPipeline, "SENTIMENT_COMPARE_MODEL").pipeline


def redact_paths(message: str) -> str:
    """A message safe to show visitors: paths under the repo made relative, other absolute paths cut to
    '…/last-part'. The full message stays in the server log."""
    message = message.replace(str(ROOT) + os.sep, "")
    return _ABS_PATH.sub(lambda m: "…/" + m.group(1), message)
