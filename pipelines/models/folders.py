"""A model folder in our format and where its model runs: the files it holds, loading it (from a folder or a Hub
repo, its weights checked against the hash training recorded) and saving it, and the device the served models run on
($MODEL_DEVICE)."""

import json
import os
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
