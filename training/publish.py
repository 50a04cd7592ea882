"""`python -m training.publish`: put a trained model, or the demo Space, on the Hugging Face Hub.

    python -m training.publish sentiment --model assets/sentiment --repo-id USER/attention-demo-sentiment
    python -m training.publish translation --model assets/translation --repo-id USER/attention-demo-translation
    python -m training.publish space --repo-id USER/attention-demo \\
        --sentiment-repo USER/attention-demo-sentiment --translation-repo USER/attention-demo-translation

Everything that can be checked here is checked before the first request: the repo id, the model folder
(it must load with its pipeline), offline mode and the token. Then the repo folder is assembled (weights,
config, tokenizer, preprocessing.json, metrics.json, a model card with an attention figure, and the code that
lets `transformers` load it with trust_remote_code=True: training/release/hf_export.py), the repo is
created if needed, and the folder goes up in one commit, so the repo ends up either fully updated or
unchanged. `--dry-run` stops after assembling the folder.

A model folder with training snapshots (snapshots/step-<N>/, training/engine/snapshots.py and training.ship) becomes one
branch per snapshot, step-<N>, each a model folder of its own, and the final model on main, whose card lists
the snapshots with their scores and whose snapshots.json indexes them (pipelines/models/snapshots.py). The folder then
holds one sub-folder per branch (main/, step-<N>/); the branches go up first and main last, so main never
lists a branch that is not there.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pipelines.common import METRICS, MODEL_FILES, model_file_names
from pipelines.common import read_metrics as pipeline_metrics
from pipelines.models.snapshots import INDEX, read_infos
from training.release.space import copy_space_sources, gradio_version, is_bundled, missing_sources
from transformer.hub import (
    REPO_ID,
    SNAPSHOT_INFO,
    SNAPSHOTS,
    WEIGHTS_INDEX,
    CheckpointError,
    missing_files,
    snapshot_revision,
    weight_files,
)

# Exit codes, one per kind of failure (argparse also exits with 2 on bad arguments).
EXIT_OK = 0
EXIT_USAGE = 2  # malformed repo id, unusable --out
EXIT_INPUT = 3  # the model folder (or the Space's sources) is missing, incomplete or does not load
EXIT_NO_TOKEN = 4  # no Hugging Face token found
EXIT_OFFLINE = 5  # HF_HUB_OFFLINE is set, or the Hub cannot be reached
EXIT_DENIED = 6  # the Hub refused the token (401) or the write (403)
EXIT_HUB = 7  # any other answer from the Hub

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SPACE_VARIABLES = {"sentiment": "SENTIMENT_MODEL", "translation": "TRANSLATION_MODEL", "lm": "LM_OURS_MODEL"}
# Models the Space loads from the Hub, not from a folder of ours (a Space reaches the Hub): the next-word tab's
# pre-trained model. `--lm-hub-model ''` leaves it out (the tab then offers ours alone).
SMOLLM2_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct"
OPTIONAL_IN_SPACE = ("lm",)  # tasks whose model of ours the Space may lack: the Hub model (LM_MODEL) serves alone
SPACE_TITLE = "How transformers pay attention"


class PublishError(Exception):
    """A failure with the message for the user and the exit code that goes with it."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def make_api(token: str):
    """The Hub client (tests replace this, or pass `api=` to main)."""
    from huggingface_hub import HfApi

    return HfApi(token=token)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.publish",
        description="Publish a trained model or the demo Space to the Hugging Face Hub.",
        epilog="Exit codes: 2 bad arguments or repo id, 3 model folder or Space sources missing or broken, "
        "4 no token, 5 offline or Hub unreachable, 6 permission denied, 7 other Hub error.",
    )
    sub = parser.add_subparsers(dest="task", required=True)
    models = (
        ("sentiment", "the sentiment classifier"),
        ("translation", "the German-English translator"),
        ("lm", "the next-word model"),
    )
    for task, what in models:
        p = sub.add_parser(task, help=f"publish {what} as a model repo")
        p.add_argument("--model", required=True, type=Path, help="the model folder, e.g. assets/" + task)
        _common(p)
    s = sub.add_parser("space", help="publish the Gradio app as a Space")
    s.add_argument("--sentiment-repo", metavar="USER/NAME", help="model repo the Space loads (SENTIMENT_MODEL)")
    s.add_argument("--translation-repo", metavar="USER/NAME", help="model repo the Space loads (TRANSLATION_MODEL)")
    s.add_argument("--lm-repo", metavar="USER/NAME", help="our next-word model's repo the Space loads (LM_OURS_MODEL)")
    s.add_argument(
        "--lm-hub-model",
        default=SMOLLM2_REPO,
        metavar="USER/NAME",
        help="the pre-trained next-word model the Space loads from the Hub (LM_MODEL; '' for none; default "
        "%(default)s)",
    )
    _common(s)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo-id", required=True, metavar="USER/NAME", help="the Hub repo to create or update")
    p.add_argument(
        "--private", action="store_true", help="create the repo as private (an existing repo keeps its visibility)"
    )
    p.add_argument("--dry-run", action="store_true", help="assemble the repo folder, print it, send nothing")
    p.add_argument("--out", type=Path, help="where to assemble the folder (must be new or empty; default: temp)")


def main(argv: list[str] | None = None, api=None) -> int:
    """Run the command; returns the exit code. `api` replaces the Hub client (for tests)."""
    args = build_parser().parse_args(argv)
    try:
        if args.task == "space":
            publish_space(args, api)
        else:
            publish_model(args, api)
    except PublishError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    return EXIT_OK


# --- checks that need no network ----------------------------------------------------------------------------


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


# --- assembling the repo folders ----------------------------------------------------------------------------


def build_model_folder(
    task: str, model_dir: Path, pipe, repo_id: str, folder: Path, snapshots: list[dict] | None = None
) -> list[str]:
    """Copy the model's files into `folder`, add what `transformers` needs to load it (trust_remote_code=True),
    and write the model card and its attention figure there; `snapshots` (their snapshot.json records): the
    branches the card lists and snapshots.json indexes."""
    from dataclasses import asdict

    from training.release.attention_figure import lm_figure, sentiment_figure, translation_figure
    from training.release.hf_export import export
    from training.release.model_card import FIGURE, model_card

    metrics = read_metrics(task, model_dir)
    for name in (*model_file_names(model_dir), METRICS):
        if (model_dir / name).is_file():
            shutil.copy2(model_dir / name, folder / name)
    export(task, folder)
    figures = {"sentiment": sentiment_figure, "translation": translation_figure, "lm": lm_figure}
    figure = figures[task](pipe)
    figure.image().save(folder / FIGURE)
    n_params = sum(p.numel() for p in pipe.model.parameters())
    card = model_card(task, repo_id, asdict(pipe.model.config), n_params, metrics, figure.caption, snapshots)
    card.save(folder / "README.md")
    if snapshots:
        (folder / INDEX).write_text(json.dumps(snapshots, indent=1) + "\n")
    return list_files(folder)


def _int8_weights(folder: Path) -> bool:
    """Whether the folder's weights are stored int8 (transformer/quantize.py)."""
    from safetensors import safe_open

    from transformer.quantize import is_quantized

    names = {}
    for f in weight_files(folder):
        with safe_open(f, "pt") as weights:
            names.update(dict.fromkeys(weights.keys()))
    return is_quantized(names)


def build_snapshot_folder(task: str, snapshot_dir: Path, repo_id: str, info: dict, folder: Path) -> list[str]:
    """One snapshot's branch: its model files and snapshot.json, the code `transformers` loads it with, a short card.
    Its weights go up as they are, but int8 ones (a bundle's snapshots) in fp16: the Hub has room, and
    `transformers` reads fp16."""
    from training.release.hf_export import export
    from training.release.model_card import snapshot_card
    from training.ship import write_weights

    int8 = _int8_weights(snapshot_dir)
    weights = {f.name for f in weight_files(snapshot_dir)} | {WEIGHTS_INDEX} if int8 else set()
    for name in (*model_file_names(snapshot_dir), SNAPSHOT_INFO):
        if name not in weights:
            shutil.copy2(snapshot_dir / name, folder / name)
    if int8:
        write_weights(snapshot_dir, folder)
    export(task, folder)
    snapshot_card(task, repo_id, info).save(folder / "README.md")
    return list_files(folder)


def snapshot_branches(task: str, model_dir: Path, repo_id: str, out: Path) -> dict[str, Path]:
    """{branch: its assembled folder} for each snapshot of the model folder, under out/; PublishError for a
    snapshot that is not a complete model folder or does not load."""
    from pipelines.tasks import TASKS

    cls = TASKS[task].pipeline
    branches = {}
    for info in read_infos(model_dir):
        branch = snapshot_revision(info["step"])
        src = model_dir / SNAPSHOTS / branch
        try:
            cls.from_pretrained(str(src))
        except CheckpointError as e:
            raise PublishError(EXIT_INPUT, f"--model {model_dir}: snapshot {branch} does not load: {e}") from e
        branches[branch] = out / branch
        branches[branch].mkdir()
        build_snapshot_folder(task, src, repo_id, info, branches[branch])
    return branches


def build_space_folder(folder: Path, variables: dict[str, str], root: Path | None = None) -> list[str]:
    """The Space: app.py, the packages it imports, requirements.txt, README.md, and bundled models if any."""
    from training.release.model_card import space_card

    root = root or PROJECT_ROOT
    missing = missing_sources(root)
    if missing:
        raise PublishError(EXIT_INPUT, f"the Space needs {', '.join(missing)} in {root}, which is missing")
    requirements = copy_space_sources(root, folder, variables)
    space_card(SPACE_TITLE, gradio_version(requirements), variables).save(folder / "README.md")
    return list_files(folder)


def space_variables(args, root: Path | None = None) -> dict[str, str]:
    """SENTIMENT_MODEL / TRANSLATION_MODEL / LM_OURS_MODEL: the given model repo, else the project's assets/<task>
    folder; LM_MODEL: the pre-trained next-word model's Hub repo (--lm-hub-model)."""
    root = root or PROJECT_ROOT
    variables = {}
    for task, var in SPACE_VARIABLES.items():
        repo = getattr(args, f"{task}_repo", None)
        if repo:
            check_repo_id(repo, f"--{task}-repo")
            variables[var] = repo
        elif (root / "assets" / task).is_dir() and not missing_files(root / "assets" / task, MODEL_FILES):
            variables[var] = f"assets/{task}"
            print(f"note: no --{task}-repo, so the Space bundles assets/{task} and loads it from there")
        elif task in OPTIONAL_IN_SPACE:
            print(f"note: no --{task}-repo and no assets/{task}: the Space's {task} tab offers the Hub model alone")
        else:
            raise PublishError(
                EXIT_INPUT,
                f"the Space needs a {task} model: pass --{task}-repo USER/NAME (publish the model first), "
                f"or put a complete model folder in {root / 'assets' / task}",
            )
    hub_lm = getattr(args, "lm_hub_model", "")
    if hub_lm:
        check_repo_id(hub_lm, "--lm-hub-model")
        variables["LM_MODEL"] = hub_lm
    return variables


def list_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def report_folder(folder: Path, files: list[str], repo_id: str, branches: dict[str, Path] | None = None) -> None:
    print(f"dry run: nothing was sent to the Hub. The folder for {repo_id} is ready at {folder}")
    if branches:
        print(f"branch main: the final model ({folder / 'main'})")
        folder = folder / "main"
    for f in files:
        print(f"  {f}  ({(folder / f).stat().st_size:,} bytes)")
    for branch, path in (branches or {}).items():
        info = json.loads((path / SNAPSHOT_INFO).read_text())
        metric = info.get("metric")
        print(f"branch {branch}: snapshot at step {info['step']}, {metric} {info.get(metric)} ({path})")
        for f in list_files(path):
            print(f"  {f}  ({(path / f).stat().st_size:,} bytes)")


# --- the two commands ---------------------------------------------------------------------------------------


def publish_model(args, api=None) -> None:
    check_repo_id(args.repo_id)
    token = None if args.dry_run else preflight()
    pipe = load_pipeline(args.task, args.model)
    folder = prepare_out(args.out)
    kept = False  # a dry run's folder without --out stays for the reader; any other temporary one goes
    try:
        snapshots = read_infos(args.model)
        main = folder / "main" if snapshots else folder  # with snapshots, one sub-folder per branch
        main.mkdir(exist_ok=True)
        branches = snapshot_branches(args.task, args.model, args.repo_id, folder)
        files = build_model_folder(args.task, args.model, pipe, args.repo_id, main, snapshots)
        if args.dry_run:
            report_folder(folder, files, args.repo_id, branches)
            kept = True
            return
        message = f"Upload the {args.task} model"
        push(api or make_api(token), args.repo_id, main, "model", args.private, message, branches=branches)
    finally:
        if not kept and args.out is None:
            shutil.rmtree(folder, ignore_errors=True)


def publish_space(args, api=None) -> None:
    check_repo_id(args.repo_id)
    variables = space_variables(args)
    token = None if args.dry_run else preflight()
    folder = prepare_out(args.out)
    kept = False  # as in publish_model
    try:
        files = build_space_folder(folder, variables)
        if args.dry_run:
            report_folder(folder, files, args.repo_id)
            print("Space variables it would set: " + ", ".join(f"{k}={v}" for k, v in variables.items()))
            kept = True
            return
        api = api or make_api(token)
        models = [v for v in variables.values() if not is_bundled(v)]
        push(api, args.repo_id, folder, "space", args.private, "Upload the Space", variables, models)
    finally:
        if not kept and args.out is None:
            shutil.rmtree(folder, ignore_errors=True)


# --- talking to the Hub -------------------------------------------------------------------------------------


def push(
    api,
    repo_id: str,
    folder: Path,
    repo_type: str,
    private: bool,
    message: str,
    variables: dict[str, str] | None = None,
    models: list[str] = (),
    branches: dict[str, Path] | None = None,
) -> None:
    """Check the token, create the repo if needed, (set the Space's variables,) upload `folder` in one commit;
    `branches` ({name: folder}, a model's snapshots) go up before it, one commit each."""
    who = hub_call(api.whoami, "checking the token")
    check_namespace(who, repo_id)
    for model in models:
        if not hub_call(lambda m=model: api.repo_exists(m, repo_type="model"), f"looking up {model}"):
            raise PublishError(
                EXIT_INPUT,
                f"the model repo {model} does not exist (or is not visible with this token): publish it first",
            )
    extra = {"space_sdk": "gradio"} if repo_type == "space" else {}
    url = hub_call(
        lambda: api.create_repo(
            repo_id, repo_type=repo_type, private=True if private else None, exist_ok=True, **extra
        ),
        f"creating the {repo_type} repo {repo_id}",
    )
    upload_branches(api, repo_id, url, branches or {})
    set_vars = []
    try:
        for key, value in (variables or {}).items():
            api.add_space_variable(repo_id, key, value, description="model the app loads: a Hub repo id or a folder")
            set_vars.append(key)
        # delete_patterns="*": files of an earlier upload that this folder no longer has go away in the same
        # commit (.gitattributes stays), so the repo holds exactly this folder.
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=str(folder),
            repo_type=repo_type,
            commit_message=message,
            delete_patterns="*",
        )
    except Exception as e:
        err = hub_error(e, f"uploading to {repo_id}")
        raise PublishError(
            err.code,
            f"{err}. The repo {url} exists, but nothing was uploaded: its files are none, or unchanged if it "
            f"existed before{' (its variables ' + ', '.join(set_vars) + ' were set)' if set_vars else ''}. "
            "Fix the cause and run the same command again.",
        ) from e
    print(f"published {repo_id}: {url}")
    if getattr(commit, "commit_url", None):
        print(f"commit: {commit.commit_url}")
    for key, value in (variables or {}).items():
        print(f"Space variable {key}={value}")


def upload_branches(api, repo_id: str, url: str, branches: dict[str, Path]) -> None:
    """Create each branch (from main, if it is not there) and upload its folder to it, replacing what it held."""
    done = []
    for branch, folder in branches.items():
        try:
            api.create_branch(repo_id, branch=branch, exist_ok=True)
            api.upload_folder(
                repo_id=repo_id,
                folder_path=str(folder),
                revision=branch,
                commit_message=f"Upload the snapshot {branch}",
                delete_patterns="*",
            )
        except Exception as e:
            err = hub_error(e, f"uploading the branch {branch} to {repo_id}")
            pushed = f"the branches {', '.join(done)} were uploaded" if done else "no branch was uploaded"
            raise PublishError(
                err.code, f"{err}. The repo {url} exists; {pushed}, main is unchanged. Run the same command again."
            ) from e
        done.append(branch)
        print(f"published {repo_id}@{branch}")


def hub_call(fn, doing: str):
    """fn(), with Hub errors turned into PublishError (nothing has been created when this fails)."""
    try:
        return fn()
    except Exception as e:
        err = hub_error(e, doing)
        raise PublishError(err.code, f"{err}; nothing was created or uploaded") from e


def hub_error(e: Exception, doing: str) -> PublishError:
    """A PublishError saying what went wrong while `doing`: permission, connection, or another Hub answer."""
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(e, HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        if status == 401:
            return PublishError(
                EXIT_DENIED,
                f"the Hub rejected the token while {doing} (401 Unauthorized): it is invalid or expired; "
                "set HF_TOKEN to a valid token or log in again with `hf auth login`",
            )
        if status == 403:
            return PublishError(
                EXIT_DENIED,
                f"permission denied while {doing} (403 Forbidden): the token cannot write there; use a token "
                f"with write access to that namespace ({first})",
            )
        return PublishError(EXIT_HUB, f"the Hub answered {status} while {doing}: {first}")
    if isinstance(e, (OfflineModeIsEnabled, ConnectionError, TimeoutError)) or _is_transport_error(e):
        return PublishError(
            EXIT_OFFLINE, f"cannot reach the Hugging Face Hub while {doing} ({type(e).__name__}: {e}); are you offline?"
        )
    return PublishError(EXIT_HUB, f"{doing} failed: {type(e).__name__}: {e}")


def _is_transport_error(e: Exception) -> bool:
    try:
        import httpx2  # what huggingface_hub 2.x sends requests with
    except ImportError:
        return False
    return isinstance(e, httpx2.TransportError)


def check_namespace(who: dict, repo_id: str) -> None:
    """Refuse early when the token is read-only, or belongs to someone who cannot write to repo_id's namespace."""
    if not isinstance(who, dict) or not who.get("name"):
        return  # an unfamiliar answer: let create_repo decide
    role = ((who.get("auth") or {}).get("accessToken") or {}).get("role")
    if role == "read":
        raise PublishError(
            EXIT_DENIED,
            f"permission denied: the token of {who['name']} is read-only; create one with write access at "
            "https://huggingface.co/settings/tokens. Nothing was created or uploaded.",
        )
    namespace = repo_id.split("/")[0]
    mine = {who["name"]} | {o.get("name") for o in who.get("orgs") or [] if isinstance(o, dict)}
    if namespace not in mine:
        raise PublishError(
            EXIT_DENIED,
            f"permission denied: the token belongs to {who['name']}, who cannot write to '{namespace}' "
            f"(yours: {', '.join(sorted(n for n in mine if n))}). Nothing was created or uploaded.",
        )


if __name__ == "__main__":
    sys.exit(main())
