"""Pieces both pipelines share: loading a model folder, and tokens with their place in the input."""

import json
from dataclasses import dataclass
from pathlib import Path

from transformer import CheckpointError, load_model, resolve_checkpoint

TOKENIZER_FILES = ("tokenizer.json",)


@dataclass
class TokenSpan:
    """One subword token and the characters of the input it covers (input[start:end])."""

    id: int
    text: str  # what the user typed for this token ('' for special tokens)
    start: int
    end: int


def load_folder(model_cls, name_or_path: str, extra_files: tuple[str, ...] = ()):
    """(model, tokenizer, folder, preprocessing dict) from a local folder or a Hub repo id."""
    from .tokenizers_io import load_tokenizer

    folder = resolve_checkpoint(
        name_or_path, required=("config.json", "model.safetensors", *TOKENIZER_FILES, *extra_files)
    )
    model = load_model(model_cls, folder)
    try:
        tokenizer = load_tokenizer(folder).backend_tokenizer
    except Exception as e:
        raise CheckpointError(f"{name_or_path}: tokenizer does not load: {e}") from e
    if tokenizer.get_vocab_size() > model.config.vocab_size:
        raise CheckpointError(
            f"{name_or_path}: tokenizer has {tokenizer.get_vocab_size()} tokens but the model only "
            f"{model.config.vocab_size}: they do not belong together"
        )
    prep_file = Path(folder) / "preprocessing.json"
    prep = json.loads(prep_file.read_text()) if prep_file.is_file() else {}
    return model, tokenizer, Path(folder), prep


def spans(encoding, text: str) -> list[TokenSpan]:
    """TokenSpans of a tokenizers Encoding over `text`."""
    return [TokenSpan(i, text[a:b], a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]


def save_folder(model, tokenizer, folder: str | Path, prep: dict) -> Path:
    """Write a model folder from_pretrained reads back: weights, config, tokenizer, preprocessing.json."""
    from .tokenizers_io import save_tokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder, model_max_length=model.config.max_len)
    (folder / "preprocessing.json").write_text(json.dumps(prep, indent=2) + "\n")
    return folder
