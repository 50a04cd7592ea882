"""Atomic writes, so a kill mid-save never leaves a half-written checkpoint behind."""

import os
import shutil
from pathlib import Path

import torch


def atomic_torch_save(obj, path: Path) -> None:
    """torch.save to a temporary file, then rename over the target (atomic on one file system)."""
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
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


def load_state(path: Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)
