"""Atomic writes, so a kill mid-save never leaves a half-written checkpoint behind; a checksum, so a checkpoint
damaged after it was written is refused instead of resumed from."""

import hashlib
import os
import shutil
import warnings
from pathlib import Path

import torch


def atomic_torch_save(obj, path: Path) -> None:
    """torch.save to a temporary file, then rename over the target (atomic on one file system)."""
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def atomic_write_text(path: Path, text: str) -> None:
    """Write text to a temporary file in the same folder, then rename it over `path`."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def atomic_folder(write, folder: Path) -> None:
    """Call write(tmp_folder), then swap tmp_folder in for `folder`."""
    tmp = folder.with_name(folder.name + ".tmp")
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # `folder` stays as it was
        raise
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        os.replace(folder, old)
    os.replace(tmp, folder)
    shutil.rmtree(old, ignore_errors=True)


class DamagedCheckpoint(Exception):
    """A checkpoint that cannot be resumed from. str() is one line that names the file."""


RESUME_KEYS = ("model", "optimizer", "scheduler", "state", "rng")
CHECKSUM = "checksum"  # SHA-256 of everything else in the checkpoint (state_checksum)
_ADVICE = "delete it to start over, or pass another --out"


def _feed(h, obj) -> None:
    """Hash obj into h: tensors by dtype, shape and bytes; dicts in key order; other values by repr."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous().reshape(-1)
        h.update(f"T{t.dtype}{tuple(obj.shape)}:".encode())
        h.update(t.view(torch.uint8).numpy())
    elif isinstance(obj, dict):
        h.update(b"{")
        for k in sorted(obj, key=repr):
            h.update(repr(k).encode() + b":")
            _feed(h, obj[k])
        h.update(b"}")
    elif isinstance(obj, list | tuple):
        h.update(b"[")
        for v in obj:
            _feed(h, v)
        h.update(b"]")
    else:
        h.update(repr(obj).encode() + b";")


def state_checksum(checkpoint: dict) -> str:
    """SHA-256 (hex) of a checkpoint's contents (its own checksum entry aside), the same before and after a
    save and load: it changes when any byte of any tensor, or any value, does."""
    h = hashlib.sha256()
    _feed(h, {k: v for k, v in checkpoint.items() if k != CHECKSUM})
    return h.hexdigest()


def with_checksum(checkpoint: dict) -> dict:
    """The checkpoint with its checksum entry, for torch.save."""
    return {**checkpoint, CHECKSUM: state_checksum(checkpoint)}


def load_state(path: Path) -> dict:
    """What torch.save wrote to path, tensors and plain data only (weights_only=True: never runs code).

    Raises DamagedCheckpoint for an unreadable, empty, truncated or foreign file.
    """
    try:
        with warnings.catch_warnings():  # a garbage file makes torch warn about pickle protocols first
            warnings.simplefilter("ignore")
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as e:
        raise DamagedCheckpoint(f"{path}: cannot be read ({e.strerror or type(e).__name__})") from None
    except Exception:  # torch's own message would advise unsafe loading: never pass it on
        what = "the file is empty" if Path(path).stat().st_size == 0 else "truncated or not a training checkpoint"
        raise DamagedCheckpoint(f"{path}: damaged checkpoint ({what}); {_ADVICE}") from None
    return saved


def _mismatch(model, weights: dict) -> str | None:
    """Why `weights` does not fit `model` (missing, unexpected or differently shaped tensors), or None."""
    own = model.state_dict()
    missing, unexpected = own.keys() - weights.keys(), weights.keys() - own.keys()
    shaped = [k for k in own.keys() & weights.keys() if getattr(weights[k], "shape", None) != own[k].shape]
    if not (missing or unexpected or shaped):
        return None
    parts = [f"{len(v)} {name}" for name, v in (("missing", missing), ("unexpected", unexpected)) if v]
    parts += [f"{len(shaped)} of another shape (e.g. {sorted(shaped)[0]})"] if shaped else []
    return "weights for another architecture: " + ", ".join(parts) + " tensors"


def restore(path: Path, model, optimizer, scheduler, parse_state=dict):
    """Load a checkpoint into model, optimizer and scheduler and the RNG; returns parse_state(saved loop state).

    Raises DamagedCheckpoint (one line, naming the file) when it cannot be resumed from.
    """
    saved = load_state(path)
    missing = [k for k in RESUME_KEYS if k not in saved] if isinstance(saved, dict) else list(RESUME_KEYS)
    if missing:
        raise DamagedCheckpoint(f"{path}: incomplete checkpoint (no {', '.join(missing)}); {_ADVICE}")
    if CHECKSUM in saved and saved[CHECKSUM] != state_checksum(saved):  # older checkpoints carry none
        why = "checksum mismatch: its contents changed after it was written"
        raise DamagedCheckpoint(f"{path}: damaged checkpoint ({why}); {_ADVICE}")
    if not isinstance(saved["model"], dict) or (why := _mismatch(model, saved["model"])):
        raise DamagedCheckpoint(f"{path}: {why or 'no model weights'}; {_ADVICE}")
    try:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["rng"])
        if "cuda_rng" in saved and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["cuda_rng"])
        state = parse_state(saved["state"])
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise DamagedCheckpoint(f"{path}: optimizer or training state does not fit ({first}); {_ADVICE}") from None
    return state
