"""Pieces both pipelines share: loading a model folder, and tokens with their place in the input."""

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from transformer import CheckpointError, load_model, resolve_checkpoint
from transformer.hub import CONFIG, WEIGHTS

METRICS = "metrics.json"  # what training measured; "weights_sha256" there is checked at load
TOKENIZER = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
PREPROCESSING = "preprocessing.json"  # how the pipeline cuts and decodes: max_len, head, labels, beam_size
MODEL_FILES = (CONFIG, WEIGHTS, TOKENIZER, TOKENIZER_CONFIG, PREPROCESSING)  # a complete model folder


@dataclass
class TokenSpan:
    """One subword token and the characters of the input it covers (input[start:end])."""

    id: int
    text: str  # what the user typed for this token ('' for special tokens)
    start: int
    end: int


def load_folder(model_cls, name_or_path: str):
    """(model, tokenizer, preprocessing dict) from a local folder or a Hub repo id."""
    folder = resolve_checkpoint(name_or_path, required=(CONFIG, WEIGHTS, TOKENIZER))
    check_weights_hash(folder, name_or_path)
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
    return model, tokenizer, prep


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_weights_hash(folder: Path, name_or_path: str) -> None:
    """CheckpointError when metrics.json records a weights_sha256 that the weights file does not have (a file
    damaged after training: the right size and shapes still load). Nothing to check without one."""
    metrics_file = Path(folder) / METRICS
    try:
        expected = json.loads(metrics_file.read_text()).get("weights_sha256") if metrics_file.is_file() else None
    except (json.JSONDecodeError, AttributeError) as e:
        raise CheckpointError(f"{name_or_path}: {METRICS} is not a valid JSON object ({e})") from e
    if expected is None:
        return
    actual = sha256_file(Path(folder) / WEIGHTS)
    if actual != str(expected).lower():
        raise CheckpointError(
            f"{name_or_path}: {WEIGHTS} does not match the weights_sha256 in {METRICS} (the file is damaged or "
            f"was replaced): expected {str(expected)[:12]}…, found {actual[:12]}…"
        )


def save_folder(model, tokenizer, folder: Path, model_max_length: int, preprocessing: dict) -> None:
    """What load_folder reads: config.json and weights, the tokenizer, preprocessing.json."""
    from .tokenizers_io import save_tokenizer

    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder, model_max_length=model_max_length)
    (Path(folder) / PREPROCESSING).write_text(json.dumps(preprocessing, indent=2) + "\n")


def spans(encoding, text: str) -> list[TokenSpan]:
    """TokenSpans of a tokenizers Encoding over `text`."""
    return [TokenSpan(i, text[a:b], a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]
