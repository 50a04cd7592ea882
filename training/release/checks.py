"""The checks `python -m training.publish` makes before it sends anything: the repo id, offline mode and the token,
the model folder (it must load with its pipeline) and its metrics.json, the folder to assemble in; with the exit
code of each kind of failure (PublishError)."""

import os
import tempfile
from pathlib import Path

from pipelines.models.folders import METRICS, MODEL_FILES
from pipelines.models.folders import read_metrics as pipeline_metrics
from transformer.hub import REPO_ID, CheckpointError, missing_files

# Exit codes, one per kind of failure (argparse also exits with 2 on bad arguments).
EXIT_OK = 0
EXIT_USAGE = 2  # malformed repo id, unusable --out
EXIT_INPUT = 3  # the model folder (or the Space's sources) is missing, incomplete or does not load
EXIT_NO_TOKEN = 4  # no Hugging Face token found
EXIT_OFFLINE = 5  # HF_HUB_OFFLINE is set, or the Hub cannot be reached
EXIT_DENIED = 6  # the Hub refused the token (401) or the write (403)
EXIT_HUB = 7  # any other answer from the Hub


class PublishError(Exception):
    """A failure with the message for the user and the exit code that goes with it."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def check_repo_id(repo_id: str, flag: str = "--repo-id") -> None:
    if not REPO_ID.match(repo_id or ""):
        raise PublishError(
            EXIT_USAGE,
            f"{flag} {repo_id!r} is not a Hub repo id: use USER/NAME (or ORG/NAME), with letters, digits, "
            "'-', '_' and '.', e.g. alice/attention-demo-sentiment",
        )


def hub_offline() -> bool:
    """True when HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set: the Hub client would refuse every request."""
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return flag.strip().upper() in {"1", "ON", "YES", "TRUE"} or bool(constants.HF_HUB_OFFLINE)


def preflight() -> str:
    """The token to publish with, after checking offline mode; raises PublishError. Sends nothing."""
    if hub_offline():
        raise PublishError(
            EXIT_OFFLINE,
            "HF_HUB_OFFLINE is set, so nothing can be sent to the Hugging Face Hub; nothing was created or "
            "uploaded. Unset it (and connect) to publish, or use --dry-run to only assemble the folder.",
        )
    from huggingface_hub import get_token

    try:
        token = get_token()
    except Exception as e:  # an OIDC exchange or token refresh that failed
        raise PublishError(EXIT_NO_TOKEN, f"could not get a Hugging Face token: {e}") from e
    if not token:
        raise PublishError(
            EXIT_NO_TOKEN,
            "no Hugging Face token: set HF_TOKEN to a token with write access "
            "(https://huggingface.co/settings/tokens) or log in once with `hf auth login`; nothing was sent.",
        )
    return token


def load_pipeline(task: str, model_dir: Path):
    """The task's pipeline loaded from `model_dir`, which must hold every file a published repo needs."""
    from pipelines.tasks import TASKS

    if not model_dir.is_dir():
        raise PublishError(EXIT_INPUT, f"--model {model_dir}: no such folder")
    missing = missing_files(model_dir, MODEL_FILES)
    if missing:
        raise PublishError(
            EXIT_INPUT,
            f"--model {model_dir}: incomplete model folder, missing {', '.join(missing)} "
            f"(a model folder holds {', '.join(MODEL_FILES)}); nothing was built or sent",
        )
    cls = TASKS[task].pipeline
    try:
        pipe = cls.from_pretrained(str(model_dir))
    except CheckpointError as e:  # loading is strict: config keys and every tensor must fit
        raise PublishError(EXIT_INPUT, f"--model {model_dir} does not load as a {task} model: {e}") from e
    return pipe


def read_metrics(task: str, model_dir: Path) -> dict | None:
    """The folder's metrics.json (None without one), refused when it is not JSON or describes another task."""
    try:
        metrics = pipeline_metrics(model_dir, str(model_dir))
    except CheckpointError as e:
        raise PublishError(EXIT_INPUT, str(e)) from e
    if metrics.get("task", task) != task:
        path = model_dir / METRICS
        raise PublishError(EXIT_INPUT, f"{path} does not describe a {task} model (task: {metrics.get('task')!r})")
    return metrics or None


def prepare_out(out: Path | None) -> Path:
    """A fresh folder to assemble the repo in: --out (new or empty), else a new temporary folder."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix="publish-"))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise PublishError(EXIT_USAGE, f"--out {out} exists and is not an empty folder: choose a new one")
    out.mkdir(parents=True, exist_ok=True)
    return out
