"""`--resume` from a damaged checkpoint: one line that names the file, exit code 2, never unsafe advice."""

import struct
import zipfile

import pytest
import torch
from training_runs import TINY_SENTIMENT

from training.cli import main as train_main
from training.engine.checkpoint import DamagedCheckpoint, load_state


@pytest.fixture(scope="module")
def good_checkpoint(imdb_dir, tmp_path_factory):  # noqa: F811
    out = tmp_path_factory.mktemp("run")
    args = ["sentiment", "--data-dir", str(imdb_dir), "--out", str(out), *TINY_SENTIMENT, "--max-minutes", "1e-9"]
    assert train_main(args) == 0
    return out / "checkpoint.pt"


def overwrite_tensor_bytes(path, member: str = "data/1", n: int = 2000) -> int:
    """Overwrite up to n bytes of one tensor's storage inside a torch.save zip with 0xFF (as a bad disk
    would); the file still loads. Returns how many bytes were overwritten."""
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith("/" + member))
    data = bytearray(path.read_bytes())
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    start = info.header_offset + 30 + name_len + extra_len  # the stored (uncompressed) bytes begin here
    n = min(n, info.file_size)
    data[start : start + n] = b"\xff" * n
    path.write_bytes(bytes(data))
    return n


def _damage(kind: str, good, path, imdb_dir) -> None:  # noqa: F811
    data = good.read_bytes()
    if kind == "tensor bytes overwritten":
        path.write_bytes(data)
        assert overwrite_tensor_bytes(path) > 0
        assert torch.load(path, weights_only=True)["model"]  # the damage does not stop torch from loading it
    elif kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "garbage":
        path.write_bytes(b"\x80\x04not a checkpoint at all" * 50)
    elif kind == "missing keys":
        saved = torch.load(good, weights_only=True)
        del saved["optimizer"], saved["rng"]
        torch.save(saved, path)
    elif kind == "another architecture":
        args = ["sentiment", "--data-dir", str(imdb_dir), "--out", str(path.parent), *TINY_SENTIMENT]
        assert train_main([*args, "--d-model", "48", "--max-minutes", "1e-9"]) == 0
    elif kind == "pickled code":
        torch.save({"model": {}, "x": DamagedCheckpoint("not a tensor")}, path)  # a class: refused by weights_only


@pytest.mark.parametrize(
    "kind, reason",
    [
        ("truncated", "truncated or not a training checkpoint"),
        ("empty", "the file is empty"),
        ("garbage", "truncated or not a training checkpoint"),
        ("pickled code", "truncated or not a training checkpoint"),
        ("missing keys", "incomplete checkpoint (no optimizer, rng)"),
        ("another architecture", "weights for another architecture"),
        ("tensor bytes overwritten", "damaged checkpoint (checksum mismatch"),
    ],
)
def test_resume_from_a_damaged_checkpoint_exits_2_with_one_line(
    kind,
    reason,
    good_checkpoint,
    imdb_dir,
    tmp_path,
    capsys,  # noqa: F811
):
    out = tmp_path / "run"
    out.mkdir()
    path = out / "checkpoint.pt"
    _damage(kind, good_checkpoint, path, imdb_dir)
    capsys.readouterr()
    code = train_main(["sentiment", "--data-dir", str(imdb_dir), "--out", str(out), *TINY_SENTIMENT, "--resume"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith(f"error: {path}: ") and reason in err and "\n" not in err
    assert "weights_only" not in err and "Traceback" not in err and "delete it" in err


def test_load_state_raises_only_damaged_checkpoint(tmp_path, good_checkpoint):
    assert set(load_state(good_checkpoint)) >= {"model", "optimizer", "scheduler", "state", "rng"}
    with pytest.raises(DamagedCheckpoint, match="cannot be read"):
        load_state(tmp_path / "nope.pt")
    torch.save([1, 2, 3], tmp_path / "list.pt")
    assert load_state(tmp_path / "list.pt") == [1, 2, 3]  # any safe file loads; restore checks what resuming needs


def test_garbage_checkpoint_gives_no_warning_lines(tmp_path, recwarn):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"\x80\x04not a checkpoint at all" * 50)
    with pytest.raises(DamagedCheckpoint):
        load_state(path)
    assert not recwarn.list


def test_a_diverging_run_exits_1_with_one_line_and_keeps_the_last_good_checkpoint(imdb_dir, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "run"
    args = ["sentiment", "--data-dir", str(imdb_dir), "--out", str(out), *TINY_SENTIMENT, "--epochs", "2"]
    capsys.readouterr()
    # lr 1e30: the first step blows the weights up (still finite), the second step's loss is NaN
    assert train_main([*args, "--lr", "1e30", "--save-every-min", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: non-finite loss nan at epoch 1, step 2: training stopped before the update")
    assert f"{out / 'checkpoint.pt'} keeps the last good state (step 1)" in err
    saved = load_state(out / "checkpoint.pt")
    assert saved["state"]["step"] == 1 and all(torch.isfinite(v).all() for v in saved["model"].values())
    assert not (out / "best").exists() and not (out / "summary.json").exists()


def test_a_checkpoint_from_before_checksums_still_resumes(good_checkpoint, imdb_dir, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    out.mkdir()
    saved = torch.load(good_checkpoint, weights_only=True)
    assert len(saved.pop("checksum")) == 64  # SHA-256 in hex
    torch.save(saved, out / "checkpoint.pt")
    args = ["sentiment", "--data-dir", str(imdb_dir), "--out", str(out), *TINY_SENTIMENT, "--resume"]
    assert train_main(args) == 0
    assert load_state(out / "checkpoint.pt")["state"]["step"] > saved["state"]["step"]
