"""Pieces both pipelines share: where models run and loading a model folder, tokens with their place in the input,
and the output guard.

The guard: a model never hands out a NaN or infinite probability, score or attention weight. Damaged weights (or a
numerical accident) make a model compute NaN; served as is, a NaN reads as a prediction ("negative (nan%)") and is
not even valid JSON. The pipelines check what they return (`guarded`, `require_finite`) and put a NonFiniteOutput
in place of a result that holds one; the app turns it into a clear message."""

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer

from transformer import CheckpointError, load_model, resolve_checkpoint
from transformer.hub import CONFIG, WEIGHTS, WEIGHTS_INDEX, weight_files, weights_sha256  # noqa: F401 (re-exported)

METRICS = "metrics.json"  # what training measured; "weights_sha256" there is checked at load
TOKENIZER = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
PREPROCESSING = "preprocessing.json"  # how the pipeline cuts and decodes: max_len, head, labels, beam_size
MODEL_FILES = (CONFIG, WEIGHTS, TOKENIZER, TOKENIZER_CONFIG, PREPROCESSING)  # a complete model folder
DEVICE_ENV = "MODEL_DEVICE"  # where the served models run (serving_device)


def model_file_names(folder: Path) -> list[str]:
    """The files of a complete model folder as they are in `folder`: MODEL_FILES, with the weights as
    model.safetensors or as the index and its shards."""
    shards = [f.name for f in weight_files(folder)]
    weights = [WEIGHTS_INDEX, *shards] if shards and shards[0] != WEIGHTS else [WEIGHTS]
    return [name for f in MODEL_FILES for name in (weights if f == WEIGHTS else [f])]


@dataclass
class TokenSpan:
    """One subword token and the characters of the input it covers (input[start:end])."""

    id: int
    text: str  # what the user typed for this token ('' for special tokens)
    start: int
    end: int
    special: str = ""  # a special token's name ("[CLS]", "[SEP]", "</s>"): what the views label it with


def serving_device(choice: str | None = None) -> torch.device:
    """Where a loaded model runs: `choice`, or $MODEL_DEVICE when it is None; "cpu" when neither says; "auto" = CUDA
    where there is a GPU, else the CPU; or any torch device ("cuda:1", "mps"). The pipelines build every tensor
    on their model's device (adapter.device) and hand their results back on the CPU."""
    choice = (choice if choice is not None else os.environ.get(DEVICE_ENV, "")).strip() or "cpu"
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(choice)
    except RuntimeError:
        raise CheckpointError(f"{DEVICE_ENV}={choice!r} is not a device: use cpu, auto, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise CheckpointError(f"{DEVICE_ENV}={choice!r}, but torch sees no CUDA GPU here: use auto or cpu")
    return device


def load_folder(model_cls, name_or_path: str, device: str | None = None, revision: str | None = None):
    """(model on serving_device(device), tokenizer, preprocessing dict, metrics.json dict ({} without one)) from a
    local folder or a Hub repo id; revision: a snapshot "step-<N>" (a branch of the repo, or the folder's
    snapshots/step-<N>/), or any Hub revision of a repo id; None for the model itself."""
    device = serving_device(device)  # a device that is not there is said before anything loads
    folder = resolve_checkpoint(name_or_path, required=(CONFIG, WEIGHTS, TOKENIZER), revision=revision)
    metrics = read_metrics(folder, name_or_path)
    check_weights_hash(folder, name_or_path, metrics)
    model = load_model(model_cls, folder)
    bad = [name for name, p in model.named_parameters() if not bool(p.isfinite().all())]
    if bad:  # bytes overwritten inside the file: the right size and shapes, but NaN where numbers were
        raise CheckpointError(f"{name_or_path}: {WEIGHTS} is damaged: {len(bad)} weight tensors hold NaN or infinity "
                              f"(first: {bad[0]})")  # fmt: skip
    try:
        tokenizer = Tokenizer.from_file(str(Path(folder) / TOKENIZER))
    except Exception as e:
        raise CheckpointError(f"{name_or_path}: tokenizer does not load: {e}") from e
    if tokenizer.get_vocab_size() > model.config.vocab_size:
        raise CheckpointError(
            f"{name_or_path}: tokenizer has {tokenizer.get_vocab_size()} tokens but the model only "
            f"{model.config.vocab_size}: they do not belong together"
        )
    prep_file = Path(folder) / PREPROCESSING
    prep = json.loads(prep_file.read_text()) if prep_file.is_file() else {}
    return model.to(device), tokenizer, prep, metrics


def read_metrics(folder: Path, name_or_path: str) -> dict:
    """The folder's metrics.json ({} without one); CheckpointError when it is not a JSON object."""
    metrics_file = Path(folder) / METRICS
    if not metrics_file.is_file():
        return {}
    try:
        metrics = json.loads(metrics_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{name_or_path}: {METRICS} is not a valid JSON object ({e})") from e
    if not isinstance(metrics, dict):
        raise CheckpointError(f"{name_or_path}: {METRICS} is not a valid JSON object (a {type(metrics).__name__})")
    return metrics


def check_weights_hash(folder: Path, name_or_path: str, metrics: dict) -> None:
    """CheckpointError when metrics.json (`metrics`, read_metrics) records a weights_sha256 that the weights file
    does not have (a file damaged after training: the right size and shapes still load). Nothing to check
    without one."""
    expected = metrics.get("weights_sha256")
    if expected is None:
        return
    actual = weights_sha256(Path(folder))
    if actual != str(expected).lower():
        raise CheckpointError(
            f"{name_or_path}: {WEIGHTS} does not match the weights_sha256 in {METRICS} (the file is damaged or "
            f"was replaced): expected {str(expected)[:12]}…, found {actual[:12]}…"
        )


def save_folder(model, tokenizer, folder: Path, model_max_length: int, preprocessing: dict) -> None:
    """What load_folder reads: config.json and weights, the tokenizer, preprocessing.json."""
    from pipelines.models.tokenizers_io import save_tokenizer

    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder, model_max_length=model_max_length)
    (Path(folder) / PREPROCESSING).write_text(json.dumps(preprocessing, indent=2) + "\n")


def wrap_spans(prefix: list[int], toks: list[TokenSpan], suffix: list[int], end: int, name) -> list[TokenSpan]:
    """Special tokens (ids) around a text's TokenSpans, as spans that cover no characters at its start and end;
    name(id) gives each its name ("[CLS]")."""
    before = [TokenSpan(i, "", 0, 0, name(i)) for i in prefix]
    return before + list(toks) + [TokenSpan(i, "", end, end, name(i)) for i in suffix]


class SpecialTokensAround:
    """An adapter whose tokenizer puts special tokens around a text's own: `prefix` and `suffix` ids, and
    `special_name(id)` for their names ("[CLS]")."""

    prefix: list[int]
    suffix: list[int]

    def special_name(self, token_id: int) -> str:
        raise NotImplementedError

    def wrap(self, ids: list[int]) -> list[int]:
        """The ids the model reads for the text's own ids: the special tokens around them, if any."""
        return [*self.prefix, *ids, *self.suffix]

    def wrap_spans(self, toks: list[TokenSpan], text: str) -> list[TokenSpan]:
        """The special tokens as spans that cover no characters, at the start and the end of the text."""
        return wrap_spans(self.prefix, toks, self.suffix, len(text), self.special_name)


def spans(encoding, text: str) -> list[TokenSpan]:
    """TokenSpans of a tokenizers Encoding over `text`."""
    return [TokenSpan(i, text[a:b], a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]


class AdapterBacked:
    """A pipeline that reaches its model only through `self.adapter` (pipelines/models/adapter.py, hf_adapter.py)."""

    @property
    def model(self):
        """The adapter's model (ours: a TransformerClassifier or Seq2SeqTransformer)."""
        return self.adapter.model

    @property
    def tokenizer(self):
        return self.adapter.tokenizer

    @property
    def head_layers(self) -> dict[str, int]:
        """Layers per kind of attention (pipelines.kinds): {"self": 6}; {"encoder": 3, "decoder": 3, "cross": 3}."""
        return self.adapter.head_layers

    @property
    def n_layers(self) -> int:
        """The deepest kind's layers (a translator: the deeper of its encoder and decoder; the app's layer control
        covers every kind)."""
        return max(self.head_layers.values())

    @property
    def n_heads(self) -> int:
        return self.adapter.n_heads


def runs_model(method=None, *, background: bool = False):
    """Declares a pipeline method that runs the model: a server runs each call as a batch of its own on the
    model's one runner (pipelines.hosting.serving, whose served classes write out each such method; the contract
    test holds them to this declaration), in the model's process where it has one. `@runs_model(background=True)`:
    a long analysis the page starts after a response and no click waits on (the head table, faithfulness); the
    server runs every other waiting call first (pipelines.hosting.microbatch)."""

    def declare(fn):
        fn.runs_model, fn.runs_in_background = True, background
        return fn

    return declare if method is None else declare(method)


def declared_runs_model(cls, name: str) -> bool:
    """Whether `cls.name` is a method declared with @runs_model."""
    return bool(getattr(getattr(cls, name, None), "runs_model", False))


def in_background(method: Callable) -> bool:
    """Whether a pipeline method is declared @runs_model(background=True)."""
    return bool(getattr(method, "runs_in_background", False))


class BatchRunner:
    """The one entry the served path runs a pipeline by (pipelines.hosting.serving), in this process or a model
    process: one runner per model, so that the batcher never runs two batches of one model at once."""

    def run_batch(self, items: list, pipeline_method: Callable, one_by_one: bool = False, **options) -> list:
        """pipeline_method(self, items, **options): a batch method (SentimentPipeline.analyze_inputs) takes every
        item at once. one_by_one: pipeline_method(self, *args, **kwargs) for each item, an (args, kwargs) pair, its
        error returned in place of its result."""
        if not one_by_one:
            return pipeline_method(self, items, **options)
        out = []
        for args, kwargs in items:
            try:
                out.append(pipeline_method(self, *args, **kwargs))
            except Exception as e:  # this caller gets the error; the others their results
                out.append(e)
        return out


class NonFiniteOutput(ArithmeticError):
    """The model computed NaN or infinity for this input (its weights may be damaged)."""


def _finite_tensor(t: torch.Tensor) -> bool:
    """No NaN or infinity in t: its smallest and largest values are finite (both propagate a NaN). One pass
    without a mask: the 72 maps of a 353-token review in 4 ms here, against 55 ms for isfinite(t).all()."""
    if not t.is_floating_point() or t.numel() == 0:
        return True
    lo, hi = torch.aminmax(t.detach())
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def _finite(value) -> bool:
    if isinstance(value, torch.Tensor):
        return _finite_tensor(value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_finite(getattr(value, f.name)) for f in dataclasses.fields(value))
    return True


def non_finite(named: dict[str, object]) -> list[str]:
    """The names whose values (tensors, floats, or dicts/lists of them) hold a NaN or an infinity."""
    return [name for name, value in named.items() if not _finite(value)]


def require_finite(what: str, named: dict[str, object]) -> None:
    """Raise NonFiniteOutput naming what holds a NaN or an infinity (nothing when all is finite)."""
    bad = non_finite(named)
    if bad:
        raise NonFiniteOutput(f"{what}: the model computed NaN or infinity in {', '.join(bad)}")


def guarded(results: Iterable, what: str, fields: tuple[str, ...]) -> list:
    """Each result (a dataclass), or a NonFiniteOutput in its place when one of its `fields` is not finite.
    Exceptions already in the list stay as they are."""
    out = []
    for result in results:
        if not isinstance(result, Exception):
            try:
                require_finite(what, {f: getattr(result, f) for f in fields})
            except NonFiniteOutput as e:
                result = e
        out.append(result)
    return out
