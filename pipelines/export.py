"""Everything one run shows, as one JSON-ready dict: input, tokens with offsets, prediction or translation,
every attention map (all layers and heads), explanation scores and head table when the pipeline has them,
and which model made it. The schema is documented in docs/reference.md ("Downloads")."""

import dataclasses
import logging
import math
import re
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from pipelines.language_model import Decoding
from pipelines.models.folders import weights_sha256
from transformer.hub import weight_files

SCHEMA_VERSION = 1
DECIMALS = 6  # attention weights and probabilities are rounded to this many decimals
_ROOT = Path(__file__).resolve().parents[1]
_SNAPSHOT = re.compile(r"snapshots/([0-9a-f]{40})")
log = logging.getLogger(__name__)


def to_jsonable(value, decimals: int | None = DECIMALS):
    """Tensors, arrays, dataclasses, tuples and numpy scalars as plain lists, dicts and numbers.
    Floats are rounded to `decimals` (None: kept as they are); NaN and infinity become None (JSON has neither)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu").float().numpy()
    if isinstance(value, np.ndarray):
        if value.dtype.kind != "f":
            return value.tolist()
        value = value.astype(np.float64) if decimals is None else np.round(value.astype(np.float64), decimals)
        if np.isfinite(value).all():
            return value.tolist()  # nested lists of floats, fast
        return np.where(np.isfinite(value), value, None).tolist()
    if hasattr(value, "as_dict"):  # a dataclass that names its fields for export (explanations)
        return to_jsonable(value.as_dict(), decimals)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name), decimals) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, decimals) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, decimals) for v in value]
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            return None
        return float(value) if decimals is None else round(float(value), decimals)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def model_info(pipe) -> dict:
    """Where the model came from (a Hub repo id or a folder, shown relative to the app) and its version:
    the Hub revision when it came from the Hub, and a hash of its weights either way."""
    source = getattr(pipe, "source", None)
    folder = _local_folder(source)
    info = {"source": _public_path(source), "revision": None, "weights_sha256": None}
    if folder is not None:
        match = _SNAPSHOT.search(Path(folder).as_posix())
        info["revision"] = match.group(1) if match else None
        info["weights_sha256"] = _weights_hash(Path(folder))
    info["config"] = to_jsonable(pipe.adapter.config_dict(), None)  # settings as they are (1e-12 is no 0.0)
    return info


def _local_folder(source) -> Path | None:
    """The folder the model was read from: the source itself, or the cached Hub snapshot (no network)."""
    if source is None:
        return None
    if Path(source).is_dir():
        return Path(source)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=True))
    except Exception:  # not a repo id, or not in the cache: the version stays unknown
        return None


def _public_path(source) -> str | None:
    """A repo id as it is; a folder relative to the app's root, else only its name (no server paths)."""
    if source is None:
        return None
    path = Path(str(source))
    if not path.is_absolute():
        return str(source)
    try:
        return path.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return path.name


_HASHES: dict[tuple[str, float], str] = {}


def _weights_hash(folder: Path) -> str | None:
    """weights_sha256 of the folder (cached per folder and modification time: the weights are ~20 MB)."""
    files = weight_files(folder)
    if not files or not files[0].is_file():
        return None
    key = (str(folder), files[0].stat().st_mtime)
    if key not in _HASHES:
        _HASHES[key] = weights_sha256(folder)
    return _HASHES[key]


def _optional(pipe, name: str, *args, **kwargs):
    """pipe.name(*args, **kwargs) when the pipeline has that method (explanations, head table), else None.
    A failure there is logged and recorded, never fatal: the rest of the export is still worth having."""
    method = getattr(pipe, name, None)
    if not callable(method):
        return None
    try:
        return to_jsonable(method(*args, **kwargs))
    except Exception as e:  # an optional extra must not cost the user the whole download
        log.exception("%s failed during export", name)
        return {"error": f"{type(e).__name__}: {e}"}


def _header(task: str, pipe) -> dict:
    created = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    return {"schema": f"attention-demo/{task}", "schema_version": SCHEMA_VERSION, "created": created,
            "model": model_info(pipe)}  # fmt: skip


def _tokens(tokens) -> list[dict]:
    return [{"index": i, "id": t.id, "text": t.text, "start": t.start, "end": t.end} for i, t in enumerate(tokens)]


def sentiment_record(pipe, text: str, method: str | None = None) -> dict:
    """Run the classifier on `text` (one run, plus explanations and the head table if the pipeline has
    them) and return the export dict. Attentions: per layer, per head, rows = query tokens."""
    result = pipe(text)
    return {
        **_header("sentiment", pipe),
        "input": {"text": text},
        "tokens": _tokens(result.tokens),
        "n_tokens": result.n_tokens,
        "truncated": result.truncated,
        "prediction": {"label": result.label, "probabilities": to_jsonable(result.probabilities)},
        "attentions": {"self": to_jsonable(result.attentions)},
        "pool_weights": to_jsonable(result.pool_weights),
        "explanation": _optional(pipe, "explain", text, method=method),
        "head_table": _optional(pipe, "head_table", text),
        "layer_by_layer": _optional(pipe, "layer_by_layer", text),  # {"lens", "attribution", ...}
    }


def translation_record(pipe, text: str, beam_size: int | None = None, method: str | None = None) -> dict:
    """Translate `text` with the given beam size (1 = greedy) and return the export dict. Cross-attention
    rows are English steps, columns German tokens; the last source token is the end marker '</s>'."""
    result = pipe(text, beam_size=beam_size)
    beam = pipe.beam_size if beam_size is None else beam_size
    return {
        **_header("translation", pipe),
        "input": {"text": text, "decoding": "greedy" if beam <= 1 else "beam search", "beam_size": beam},
        "source_tokens": _tokens(result.source_tokens),
        "target_tokens": [{"index": i, "text": t} for i, t in enumerate(result.target_tokens)],
        "truncated": result.truncated,
        "translation": result.translation,
        "score": to_jsonable(result.score),
        "steps": [{"token": s.token, "top_k": to_jsonable(s.top_k)} for s in result.steps],
        "attentions": {
            "encoder": to_jsonable(result.encoder_attentions),
            "decoder": to_jsonable(result.decoder_attentions),
            "cross": to_jsonable(result.cross_attentions),
        },
        "explanation": _optional(pipe, "explain", text, method=method, result=result),  # of this very translation
        "head_table": _optional(pipe, "head_table", text, beam_size=beam, result=result),  # no second decoding
        "layer_by_layer": _optional(pipe, "layer_by_layer", text, step=0, result=result),  # at the first English token
    }


def lm_record(pipe, prompt: str, decoding: Decoding | None = None, method: str | None = None) -> dict:
    """Continue `prompt` decoded as `decoding` (None: greedy, 20 tokens) and return the export dict. The maps' rows
    and columns are `sequence` (the prompt's tokens, then the generated ones but the last): row i reads columns 0..i
    only, and the maps of step s are their top-left (len(tokens) + s) square. The explanation and the layer by layer
    readout are of the first generated token."""
    decoding = decoding or Decoding()
    result = pipe.generate(prompt, decoding)
    options = dataclasses.asdict(decoding)
    options = {"prompt": prompt, "chat": options.pop("chat"), **options}
    return {
        **_header("lm", pipe),
        "input": {**options, "decoding": "greedy" if decoding.temperature <= 0 else "sampled"},
        "tokens": _tokens(result.tokens),
        "template_positions": result.template_positions,
        "generated": [{"index": i, "id": s.token_id, "text": s.token} for i, s in enumerate(result.steps)],
        "continuation": result.continuation,
        "finished": result.finished,
        "steps": [
            {"token": s.token, "probability": to_jsonable(s.probability), "top_k": to_jsonable(s.top_k)}
            for s in result.steps
        ],  # fmt: skip
        "sequence": result.sequence_texts,
        "attentions": {"causal": to_jsonable(result.attentions)},
        "explanation": _optional(pipe, "explain", prompt, method=method, result=result),  # of this very continuation
        "head_table": _optional(pipe, "head_table", prompt, result=result),  # no second generation
        "layer_by_layer": _optional(pipe, "layer_by_layer", prompt, step=0, result=result, chat=result.chat),
    }
