"""Loading checkpoints from a local folder or a Hub repo, with errors that say what went wrong where."""

import dataclasses
import hashlib
import inspect
import json
import os
import re
from pathlib import Path

HUB_KWARGS = dict(
    library_name="attention-demo",
    tags=["attention-visualization", "from-scratch"],
    license="mit",
)

WEIGHTS = "model.safetensors"
# A model over a file-size limit (the app's bundle allows 25 MB a file) is saved as shards named in this index,
# the layout of huggingface_hub.save_torch_state_dict and transformers: {"weight_map": {tensor name: file}}.
WEIGHTS_INDEX = "model.safetensors.index.json"
CONFIG = "config.json"
# What a folder exported for `transformers` (training/release/hf_export.py) adds to config.json; the model ignores it.
TRANSFORMERS_KEYS = frozenset(
    {"model_type", "architectures", "auto_map", "id2label", "label2id", "transformers_version"}
)
# Hub rules: letters, digits, '-', '_', '.'; no '--' or '..'; no '-' or '.' at either end; 96 characters at most.
_NAME = r"(?!.*(?:--|\.\.))[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"^{_NAME}/{_NAME}$")
# Snapshots taken during training (training/engine/snapshots.py): a model folder keeps them in snapshots/step-<N>/,
# each a model folder of its own with snapshot.json (step, loss, validation score); a Hub repo keeps them as branches
# step-<N>. revision="step-<N>" loads one from either.
SNAPSHOTS = "snapshots"
SNAPSHOT_INFO = "snapshot.json"
SNAPSHOT_REVISION = re.compile(r"^step-(\d+)$")
# safetensors metadata of weights stored as int8 differences from a model's (transformer/quantize.py): that model's
# folder, relative to theirs, and the sha256 of its weights when they were made
DELTA_BASE, DELTA_BASE_SHA256 = "delta_base", "delta_base_sha256"


class CheckpointError(RuntimeError):
    """A checkpoint could not be found or loaded. The message names the path or repo and the cause."""


def rename_tensors(
    state: dict, layers: tuple[str, str], layer_names: dict[str, str], top_names: dict[str, str], model: str, skip=()
) -> dict:
    """A checkpoint's state dict -> ours, by its declarative key maps: the tensors of module layers[0] + "i.inner"
    become layers[1] + "i." + layer_names[inner], those of a module in top_names top_names[module]; modules in `skip`
    are left out, any other tensor raises CheckpointError ("unknown {model} tensor")."""
    theirs, ours_prefix = layers
    ours = {}
    for key, tensor in state.items():
        module, _, param = key.rpartition(".")
        if module.startswith(theirs):
            i, inner = module.removeprefix(theirs).split(".", 1)
            if inner not in layer_names:
                raise CheckpointError(f"unknown {model} tensor {key}")
            ours[f"{ours_prefix}{i}.{layer_names[inner]}.{param}"] = tensor
        elif module in top_names:
            ours[f"{top_names[module]}.{param}"] = tensor
        elif module not in skip:
            raise CheckpointError(f"unknown {model} tensor {key}")
    return ours


def looks_like_repo_id(name: str) -> bool:
    """'user/model' is a Hub repo id; './x', '/x', 'a/b/c' and existing folders are paths."""
    return bool(REPO_ID.match(name)) and not os.path.exists(name) and not name.startswith(".")


def weight_files(folder: str | os.PathLike) -> list[Path]:
    """The safetensors files holding a folder's weights: model.safetensors, or the shards its index names (in
    the index's order). Empty when there are neither; CheckpointError for an index that is not valid JSON."""
    folder = Path(folder)
    if (folder / WEIGHTS).is_file():
        return [folder / WEIGHTS]
    index = folder / WEIGHTS_INDEX
    if not index.is_file():
        return []
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
        return [folder / name for name in dict.fromkeys(weight_map.values())]
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(f"{folder}: {WEIGHTS_INDEX} is not a valid shard index ({e!r})") from e


def weights_sha256(folder: Path) -> str | None:
    """What metrics.json records as weights_sha256: the sha256 of model.safetensors, or for shards, of the
    index and then every shard in the index's order. None when the folder has no weights."""
    files = weight_files(folder)
    if files and files[0].name != WEIGHTS:
        files = [Path(folder) / WEIGHTS_INDEX, *files]
    if not files or not all(f.is_file() for f in files):
        return None
    digest = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def missing_files(folder: str | os.PathLike, required: tuple[str, ...]) -> list[str]:
    """The files of `required` that `folder` lacks; WEIGHTS counts as present as an index and all its shards."""
    folder = Path(folder)
    missing = [f for f in required if f != WEIGHTS and not (folder / f).is_file()]
    if WEIGHTS in required:
        shards = weight_files(folder)
        if not shards:
            missing.insert(0, WEIGHTS)
        missing += [f.name for f in shards if not f.is_file()]
    return missing


def snapshot_revision(step: int) -> str:
    """The revision name of the snapshot taken after `step` optimizer steps: "step-<step>"."""
    return f"step-{int(step)}"


def local_revision(folder: Path, revision: str | None) -> Path:
    """The folder of `revision` in a local model folder: the folder itself for None or "main", its
    snapshots/step-<N>/ for "step-<N>". CheckpointError for another name or a snapshot it does not have."""
    if revision in (None, "main"):
        return folder
    if not SNAPSHOT_REVISION.match(str(revision)):
        raise CheckpointError(f"{folder}: revision {revision!r} is not 'main' or 'step-<N>' (a folder has no other)")
    found = folder / SNAPSHOTS / revision
    if not found.is_dir():
        have = sorted(
            (p.name for p in (folder / SNAPSHOTS).glob("step-*") if SNAPSHOT_REVISION.match(p.name)),
            key=lambda name: int(name.split("-")[1]),
        )
        which = f"it has {', '.join(have)}" if have else f"it has no {SNAPSHOTS}/ folder"
        raise CheckpointError(f"{folder}: no snapshot {revision!r} ({which})")
    return found


def resolve_checkpoint(
    name_or_path: str | os.PathLike, required: tuple[str, ...] = (CONFIG, WEIGHTS), revision: str | None = None
) -> Path:
    """A local folder holding the checkpoint: `name_or_path` itself, or a Hub snapshot of that repo id.

    revision: for a repo id, the branch, tag or commit to download (None: main); for a local folder, "main" or a
    snapshot "step-<N>" (its snapshots/step-<N>/ folder). Raises CheckpointError for a missing folder, a missing
    file, an unknown repo or revision, or the Hub being unreachable (offline), naming what it looked for. The
    weights may be one file or shards with an index.
    """
    name = str(name_or_path)
    if os.path.isdir(name):
        folder = local_revision(Path(name), revision)
    elif looks_like_repo_id(name):
        folder = _download(name, revision)
    else:
        raise CheckpointError(f"{name}: no such folder (and not a Hub repo id of the form 'user/name')")
    missing = missing_files(folder, required)
    if missing:
        raise CheckpointError(f"{name}: incomplete checkpoint, missing {', '.join(missing)} in {folder}")
    return folder


def _download(repo_id: str, revision: str | None = None) -> Path:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        return Path(snapshot_download(repo_id, revision=revision))
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as e:
        raise CheckpointError(
            f"{repo_id}: cannot reach the Hugging Face Hub (offline?) and the repo is not in the local cache. "
            "Use a local folder, or connect and try again."
        ) from e
    except GatedRepoError as e:
        raise CheckpointError(f"{repo_id}: the repo is gated; log in with an account that has access") from e
    except RevisionNotFoundError as e:  # before OSError, which it also is
        raise CheckpointError(f"{repo_id}: no revision {revision!r} on the Hub (a branch, tag or commit)") from e
    except RepositoryNotFoundError as e:
        raise CheckpointError(f"{repo_id}: no such repo on the Hub (or it is private)") from e
    except OSError as e:  # connection errors and the like
        raise CheckpointError(f"{repo_id}: download failed: {e}") from e


def load_model(cls, name_or_path: str | os.PathLike):
    """cls.from_pretrained on a resolved local folder, in eval mode; any failure becomes CheckpointError."""
    folder = resolve_checkpoint(name_or_path)
    try:
        config = json.loads((folder / CONFIG).read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{name_or_path}: {CONFIG} is not valid JSON ({e})") from e
    fields = {f.name for f in dataclasses.fields(inspect.signature(cls.__init__).parameters["config"].annotation)}
    unknown = sorted(set(config) - fields - TRANSFORMERS_KEYS)
    if unknown:  # e.g. a translation checkpoint asked to load as a classifier
        raise CheckpointError(f"{name_or_path}: {CONFIG} does not describe a {cls.__name__} (unknown keys {unknown})")
    try:
        model = cls.from_pretrained(folder, strict=True)
    except Exception as e:  # shape mismatch, missing keys, truncated safetensors, bad config fields
        raise CheckpointError(f"{name_or_path}: checkpoint does not load into {cls.__name__}: {e}") from e
    return model.eval()


class ShardedWeights:
    """Mixed in before PyTorchModelHubMixin: `from_pretrained(folder)` reads a local folder's weights itself, one
    model.safetensors or shards with a model.safetensors.index.json, in fp32, fp16 or int8 (transformer/quantize.py);
    a Hub repo id goes through the mixin as before."""

    @classmethod
    def _from_pretrained(cls, *, model_id: str, map_location: str = "cpu", strict: bool = False, **kwargs):
        if not os.path.isdir(model_id):
            return super()._from_pretrained(model_id=model_id, map_location=map_location, strict=strict, **kwargs)
        hub_args = ("revision", "cache_dir", "force_download", "local_files_only", "token")
        model = cls(**{k: v for k, v in kwargs.items() if k not in hub_args})
        load_shards(model, weight_files(model_id), strict=strict)
        return model.to(map_location)


def read_weights(files: list[Path]) -> dict:
    """Every tensor of the weight files, int8 ones dequantized (transformer/quantize.py). Differences from a model
    (a bundled snapshot's, metadata DELTA_BASE) get that model's weights added, after checking by sha256 that they
    are the weights the differences were taken from; CheckpointError when they are not, or not there."""
    from safetensors import safe_open

    from .quantize import dequantize

    state, metadata = {}, {}
    for f in files:
        with safe_open(f, "pt") as weights:
            metadata.update(weights.metadata() or {})
            state.update({name: weights.get_tensor(name) for name in weights.keys()})
    base = None
    if DELTA_BASE in metadata:
        folder = (Path(files[0]).parent / metadata[DELTA_BASE]).resolve()
        if weights_sha256(folder) != metadata.get(DELTA_BASE_SHA256):
            raise CheckpointError(
                f"{Path(files[0]).parent}: these weights are stored as differences from {folder}'s, which are not "
                "the weights they were taken from (changed or missing): bundle the snapshots again with the model"
            )
        base = read_weights(weight_files(folder))
    return dequantize(state, base)


def load_shards(model, files: list[Path], strict: bool = True) -> None:
    """Load the tensors of every shard into `model` (read_weights: int8 ones dequantized first). With `strict`, a
    parameter that no shard holds is an error unless it shares its storage with one that a shard holds (tied
    weights are saved once)."""
    state = read_weights(files)
    missing, unexpected = model.load_state_dict(state, strict=False)
    own = model.state_dict()
    loaded = {t.data_ptr() for name, t in own.items() if name in state}
    missing = [name for name in missing if own[name].data_ptr() not in loaded]
    if strict and (missing or unexpected):
        raise RuntimeError(f"shards do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_checkpoint(folder_or_repo_id: str, sha256: str | None = None) -> tuple[dict, dict]:
    """(config.json as a dict, the state dict) of another library's checkpoint folder or Hub repo (BERT, Llama),
    read as safetensors only. With `sha256`, the weights file must have that hash (checked before anything is read
    from it)."""
    from safetensors.torch import load_file

    folder = resolve_checkpoint(folder_or_repo_id, required=(CONFIG, WEIGHTS))
    files = weight_files(folder)
    if sha256 is not None:
        if len(files) != 1:
            raise CheckpointError(f"{folder_or_repo_id}: a sha256 is checked on one {WEIGHTS}, not {len(files)} files")
        actual = file_sha256(files[0])
        if actual != sha256.lower():
            raise CheckpointError(
                f"{folder_or_repo_id}: {files[0].name} has sha256 {actual}, expected {sha256.lower()}: not the "
                "weights asked for (a different revision, or a damaged download)"
            )
    state = {}
    for f in files:
        state.update(load_file(f))
    try:
        config = json.loads((folder / CONFIG).read_text())
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{folder_or_repo_id}: {CONFIG} is not valid JSON ({e})") from e
    return config, state
