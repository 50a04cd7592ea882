"""Pieces both pipelines share: loading a model folder, and tokens with their place in the input."""

import json
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer

from transformer import CheckpointError, load_model, resolve_checkpoint
from transformer.hub import CONFIG, WEIGHTS

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
    model = load_model(model_cls, folder)
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


def save_folder(model, tokenizer, folder: Path, model_max_length: int, preprocessing: dict) -> None:
    """What load_folder reads: config.json and weights, the tokenizer, preprocessing.json."""
    from .tokenizers_io import save_tokenizer

    model.save_pretrained(folder)
    save_tokenizer(tokenizer, folder, model_max_length=model_max_length)
    (Path(folder) / PREPROCESSING).write_text(json.dumps(preprocessing, indent=2) + "\n")


def spans(encoding, text: str) -> list[TokenSpan]:
    """TokenSpans of a tokenizers Encoding over `text`."""
    return [TokenSpan(i, text[a:b], a, b) for i, (a, b) in zip(encoding.ids, encoding.offsets)]


class BatchRunner:
    """The one entry the served path runs a pipeline by (pipelines.serving), in this process or a model process."""

    def run_batch(self, items: list, name: str, **options) -> list:
        """self.<name> on the items: a batch method (analyze_many, explain_many) takes every item at once; any
        other method is called once per item, an (args, kwargs) pair, its error returned in place of its result."""
        fn = getattr(self, name)
        if name.endswith("_many"):
            return fn(items, **options)
        out = []
        for args, kwargs in items:
            try:
                out.append(fn(*args, **kwargs))
            except Exception as e:  # this caller gets the error; the others their results
                out.append(e)
        return out
