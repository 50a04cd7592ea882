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

The checks are training/release/checks.py, the assembly training/release/assembly.py and the upload
training/release/push.py; this module is the command.
"""

import argparse
import shutil
import sys
from pathlib import Path

from pipelines.models.snapshots import read_infos
from training.release.assembly import (
    PROJECT_ROOT,
    SMOLLM2_REPO,
    build_model_folder,
    build_space_folder,
    report_folder,
    snapshot_branches,
    space_variables,
)
from training.release.checks import EXIT_OK, PublishError, check_repo_id, load_pipeline, preflight, prepare_out
from training.release.push import push
from training.release.space import is_bundled
from training.tasks.table import TRAINING_TASKS


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
    for task in TRAINING_TASKS.values():
        p = sub.add_parser(task.name, help=f"publish {task.what} as a model repo")
        p.add_argument("--model", required=True, type=Path, help="the model folder, e.g. assets/" + task.name)
        _common(p)
    s = sub.add_parser("space", help="publish the Gradio app as a Space")
    for task in TRAINING_TASKS.values():
        s.add_argument(
            f"--{task.name}-repo",
            metavar="USER/NAME",
            help=f"the repo of {task.what} the Space loads ({task.space_variable})",
        )
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
    variables = space_variables(args, PROJECT_ROOT)
    token = None if args.dry_run else preflight()
    folder = prepare_out(args.out)
    kept = False  # as in publish_model
    try:
        files = build_space_folder(folder, variables, PROJECT_ROOT)
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


if __name__ == "__main__":
    sys.exit(main())
