"""The snapshots a model has: the same model at a few steps of its training (training/engine/snapshots.py writes them).

A local model folder keeps them in snapshots/step-<N>/ (each a model folder with snapshot.json: step, epoch,
training loss, validation scores); a Hub repo keeps them as branches step-<N>, listed in snapshots.json on main
(training.publish writes it). `Pipeline.from_pretrained(repo_or_folder, revision="step-<N>")` loads one.
"""

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from transformer.hub import (
    SNAPSHOT_INFO,
    SNAPSHOT_REVISION,
    SNAPSHOTS,
    CheckpointError,
    local_revision,
    looks_like_repo_id,
)

INDEX = "snapshots.json"  # on a Hub repo's main: the snapshot.json of every branch, by step


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: its revision ("step-<N>"), the step, and what was measured there."""

    revision: str
    step: int
    epoch: float | None  # epochs done (fractional) when it was taken
    loss: float | None  # mean training loss of the steps since the previous snapshot (step 0: first batch's)
    metric: str | None  # the validation score's name: "accuracy", "bleu", "mlm_accuracy"
    score: float | None  # the validation score at that step

    @classmethod
    def from_info(cls, info: dict) -> "Snapshot":
        """From a snapshot.json record."""
        metric = info.get("metric")
        score = info.get(metric) if metric else None
        return cls(
            revision=f"step-{int(info['step'])}",
            step=int(info["step"]),
            epoch=info.get("epoch"),
            loss=info.get("loss"),
            metric=metric,
            score=float(score) if isinstance(score, (int, float)) else None,
        )


def is_snapshot(revision: str | None) -> bool:
    """Whether a revision names a training snapshot ("step-<N>"), not the model itself or another Hub revision."""
    return re.fullmatch(r"step-\d+", revision or "") is not None


def starting_point(metrics: dict | None) -> str:
    """What a model's training started from, in words, as its metrics.json records it ("" for random weights):
    the step 0 of its snapshots (the app's training-step slider, the model card)."""
    source = (metrics or {}).get("source_weights")
    name = (source.get("name") or source.get("read_from")) if isinstance(source, dict) else None
    if not name:
        return ""
    if source.get("continued_from"):
        return f"the model of an earlier fine-tuning run from {name}'s weights"
    return f"{name}'s pre-trained weights, with an untrained classifier"


def read_infos(folder: str | os.PathLike) -> list[dict]:
    """The snapshot.json records of a local model folder's snapshots/step-<N>/ folders, by step ([] without any).
    A snapshot folder without a readable snapshot.json is skipped: it is not a complete snapshot."""
    infos = []
    for sub in (Path(folder) / SNAPSHOTS).glob("step-*"):
        if not SNAPSHOT_REVISION.match(sub.name) or not (sub / SNAPSHOT_INFO).is_file():
            continue
        try:
            info = json.loads((sub / SNAPSHOT_INFO).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(info, dict) and f"step-{info.get('step')}" == sub.name:
            infos.append(info)
    return sorted(infos, key=lambda info: int(info["step"]))


def hub_infos(repo_id: str) -> list[dict]:
    """The records of snapshots.json on a Hub repo's main ([] when it has none); CheckpointError when offline and
    not cached, or when the repo does not exist."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import LocalEntryNotFoundError, RemoteEntryNotFoundError, RepositoryNotFoundError

    try:
        path = hf_hub_download(repo_id, INDEX)
    except RemoteEntryNotFoundError:  # the repo has no snapshots
        return []
    except LocalEntryNotFoundError as e:  # offline, and not in the cache
        raise CheckpointError(f"{repo_id}: cannot reach the Hugging Face Hub to list its snapshots (offline?)") from e
    except RepositoryNotFoundError as e:
        raise CheckpointError(f"{repo_id}: no such repo on the Hub (or it is private)") from e
    infos = json.loads(Path(path).read_text())
    return sorted(infos, key=lambda info: int(info["step"])) if isinstance(infos, list) else []


def list_snapshots(name_or_path: str | os.PathLike) -> list[Snapshot]:
    """The snapshots of a model folder or Hub repo id, by step; [] for a model without any."""
    name = str(name_or_path)
    if os.path.isdir(name):
        return [Snapshot.from_info(info) for info in read_infos(name)]
    if looks_like_repo_id(name):
        return [Snapshot.from_info(info) for info in hub_infos(name)]
    raise CheckpointError(f"{name}: no such folder (and not a Hub repo id of the form 'user/name')")


def at_revision(name_or_path: str | os.PathLike, revision: str | None) -> tuple[str, str | None]:
    """(what to load, the Hub revision still to pass on): a local folder's snapshot is a folder of its own, so its
    revision is used up here; a repo id keeps its revision for the download."""
    name = str(name_or_path)
    if revision is not None and os.path.isdir(name):
        return str(local_revision(Path(name), revision)), None
    return name, revision


def no_hub_revision(name: str, revision: str | None) -> str:
    """`name`, for a `transformers` model: CheckpointError when a Hub revision is asked of it (that path loads a
    repo's main branch; a local folder's snapshots work, at_revision resolves them first)."""
    if revision is not None:
        raise CheckpointError(
            f"{name}: revision {revision!r} of a transformers model on the Hub is not supported here; "
            "download that revision to a folder and load the folder"
        )
    return name
