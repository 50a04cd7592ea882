"""The tuned lens (Belrose et al. 2023): for each layer, an affine translator trained to map that layer's residual
state to what the last layer holds, read out through the model's own final norm and unembedding. The logit lens is
the tuned lens with every translator the identity; the tuned lens reads middle layers that the logit lens leaves
blank (SmolLM2's, say) because a layer's state is not yet in the basis the unembedding reads.

Each translator is h + (h @ down) @ up + bias, identity-initialised (up and bias zero); down (D, r) and up (r, D)
are full-rank when r = D. The file is safetensors with the model's fingerprint in its metadata, so a lens is never
applied to a model it was not trained on (a training snapshot of the same model included): `python -m
training.tuned_lens` writes it (its metrics beside it, in a .json of the same name)."""

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

FILE = "tuned_lens.safetensors"  # beside the weights, in a model folder
# for a model that is one file (SmolLM2's GGUF) or a repo id: <its name>.safetensors here
SHARED_DIR = Path(os.environ.get("TUNED_LENS_DIR", Path(__file__).resolve().parents[2] / "assets" / "tuned-lens"))


@dataclass(frozen=True)
class Fingerprint:
    """What a lens must match: the stack's size and a checksum of its unembedding."""

    n_layers: int
    d_model: int
    vocab: int
    unembed: float  # the L2 norm of W_U's first 256 columns, to 7 significant digits

    @classmethod
    def of(cls, readout) -> "Fingerprint":
        w = readout.unembed.detach()  # (D, V)
        return cls(len(readout.blocks), w.shape[0], w.shape[1], float(f"{w[:, :256].double().norm().item():.7g}"))


class Translators(nn.Module):
    """One affine map per residual state but the last: embeddings, then after each block up to the last but one."""

    def __init__(self, n_layers: int, d_model: int, rank: int):
        super().__init__()
        self.rank = min(rank, d_model)
        self.down = nn.Parameter(torch.randn(n_layers, d_model, self.rank) / d_model**0.5)  # (L, D, r)
        self.up = nn.Parameter(torch.zeros(n_layers, self.rank, d_model))  # (L, r, D): the identity to start
        self.bias = nn.Parameter(torch.zeros(n_layers, d_model))  # (L, D)

    def forward(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        """h (..., D), the residual state after `layer` blocks (0: the embeddings) -> (..., D) translated; the last
        state (layer L) is the model's own and stays as it is."""
        if layer >= self.up.shape[0]:
            return h
        return h + (h @ self.down[layer]) @ self.up[layer] + self.bias[layer]


@dataclass
class TunedLens:
    translators: Translators
    fingerprint: Fingerprint
    about: dict  # what it was trained on and how well it reads (the .json beside the file)

    def fits(self, readout) -> bool:
        return Fingerprint.of(readout) == self.fingerprint

    def save(self, path: Path) -> None:
        """The weights (safetensors, the fingerprint in its metadata) and `about` beside them (.json)."""
        path = Path(path)
        t = self.translators
        tensors = {k: v.detach().contiguous().cpu() for k, v in (("down", t.down), ("up", t.up), ("bias", t.bias))}
        meta = {"fingerprint": json.dumps(self.fingerprint.__dict__), "rank": str(t.rank)}
        tmp = path.with_suffix(".tmp")
        save_file(tensors, str(tmp), metadata=meta)
        os.replace(tmp, path)
        tmp_json = path.with_suffix(".json.tmp")
        tmp_json.write_text(json.dumps(self.about, indent=2) + "\n")
        os.replace(tmp_json, path.with_suffix(".json"))

    @classmethod
    def load(cls, path: Path, device=None) -> "TunedLens":
        from safetensors import safe_open

        path = Path(path)
        with safe_open(str(path), "pt") as f:
            meta = f.metadata()
        w = load_file(str(path), device=str(device or "cpu"))
        n, d, r = w["down"].shape
        t = Translators(n, d, r)
        with torch.no_grad():
            for k in ("down", "up", "bias"):
                getattr(t, k).copy_(w[k])
        t.requires_grad_(False)
        about_path = path.with_suffix(".json")
        about = json.loads(about_path.read_text()) if about_path.exists() else {}
        return cls(t.to(w["down"].device), Fingerprint(**json.loads(meta["fingerprint"])), about)


def lens_path(source: str) -> Path:
    """Where the tuned lens of a model loaded from `source` belongs: FILE in its folder, else <name>.safetensors in
    SHARED_DIR (a GGUF file's name without .gguf, a repo id's last part)."""
    folder = Path(source)
    return folder / FILE if folder.is_dir() else SHARED_DIR / f"{folder.name.rsplit('.gguf', 1)[0]}.safetensors"


def lens_file(source: str | None) -> Path | None:
    """lens_path(source) where a lens is there, else None."""
    path = lens_path(source) if source else None
    return path if path is not None and path.exists() else None


@lru_cache(maxsize=8)
def _load(path: str, mtime: float, device: str) -> TunedLens:
    return TunedLens.load(Path(path), device)


def tuned_lens_for(source: str | None, readout, device) -> TunedLens | None:
    """The tuned lens trained for this model (found by lens_file, loaded once), None when there is none or the one
    found was trained on other weights (a training snapshot's, another model's)."""
    path = lens_file(source)
    if path is None:
        return None
    lens = _load(str(path), path.stat().st_mtime, str(device))
    return lens if lens.fits(readout) else None


LENS_KINDS = ("logit", "tuned")  # how a state is read out: as it is, or through its layer's translator (tuned.py)
NO_TUNED_LENS = (
    "This model has no tuned lens (one is trained by `python -m training.tuned_lens --model ...`, for these very "
    "weights; a training step's snapshot has none): the logit lens is shown."
)


def translators_for(pipe, readout, kind: str):
    """(a tuned lens's translators or None, what the lens's note says first) for reading `readout` the `kind` way."""
    if kind not in LENS_KINDS:
        raise ValueError(f"lens kind {kind!r} is not one of {', '.join(LENS_KINDS)}")
    if kind == "logit":
        return None, ""
    tuned = tuned_lens_for(getattr(pipe, "source", None), readout, pipe.adapter.device)
    return (tuned.translators, "") if tuned is not None else (None, NO_TUNED_LENS)
