"""`python -m training sentiment|pretrain|translation|lm ...`: train a model on real data and keep the best checkpoint.

Runs on the GPU when there is one (bf16 autocast, TF32), on the CPU otherwise (fp32); `accelerate launch` runs
several processes. Exit codes: 0 done, 1 training diverged (a non-finite loss: the last good checkpoint is kept),
2 bad data or a damaged checkpoint (one line on stderr), 3-7 as `python -m training.publish` with --push-to-hub.
"""

import json
import os
import platform
import shlex
import sys
import time

import torch

from training import arguments  # light: --help imports no task module


def build_parser():
    """`python -m training`'s parser (training/arguments.py), with this module's help."""
    return arguments.build_parser(__doc__)


def task_class(name: str):
    """The task class of a sub-command (training.engine.loop.Task: batches, step, evaluate, export, build_model): a
    task's trainer (training/tasks/table.py), or pre-training, which trains the sentiment encoder and no task of its
    own; imported when used, so that --help imports no task module."""
    from training.tasks.table import TRAINING_TASKS

    if name in TRAINING_TASKS:
        return TRAINING_TASKS[name].trainer
    from training.tasks.pretrain import PretrainTask

    return PretrainTask


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.anneal_by_time and not args.max_minutes:
        parser.error("--anneal-by-time needs --max-minutes, the time the schedule runs its course by")
    from training.engine.checkpoint import DamagedCheckpoint
    from training.engine.data import DataError
    from training.engine.loop import BEST, NonFiniteLoss, train

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.push_to_hub:  # fail now, not after an hour of training: bad repo id, offline, no token
        from training.release.checks import PublishError, check_repo_id, preflight

        try:
            check_repo_id(args.push_to_hub, "--push-to-hub")
            preflight()
        except PublishError as e:
            print(f"error: {e}", file=sys.stderr)
            return e.code
    torch.manual_seed(args.seed)
    t_start = time.time()
    Task = task_class(args.task)
    try:
        splits = load_task_data(args)
        if args.limit and not getattr(args, "applies_limit", False):  # else the task applies it itself
            splits = {k: v.select(range(min(args.limit, len(v)))) for k, v in splits.items()}
        task = Task(args, splits)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    model = task.build_model()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{type(model).__name__}: {n_params / 1e6:.2f}M parameters, {torch.get_num_threads()} threads")
    run_info = {
        "command": "python -m training " + shlex.join(sys.argv[1:] if argv is None else argv),
        "parameters": n_params,
        "machine": machine(),
        "data": args.data_dir or "hub",
    }
    if getattr(task, "provenance", None):
        run_info["source_weights"] = task.provenance
    if getattr(task, "held_out", None):
        run_info["held_out"] = task.held_out
    try:
        summary = train(model, task, loop_config(args), run_info, started=t_start)
    except DamagedCheckpoint as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except NonFiniteLoss as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(summary))
    return push(args, args.out / BEST) if args.push_to_hub else 0


def push(args, best) -> int:
    """--push-to-hub: publish the best model, from the main process only (one upload, not one a process)."""
    from accelerate import PartialState

    from training.publish import main as publish_main

    if not PartialState().is_main_process:
        return 0
    return publish_main([args.task, "--model", str(best), "--repo-id", args.push_to_hub])


def loop_config(args):
    """The training loop's options from the command line."""
    from training.engine.loop import LoopConfig

    return LoopConfig(
        out=args.out,
        epochs=args.epochs,
        lr=args.lr,
        weight_decay=args.weight_decay,
        embedding_decay=args.embedding_decay,
        warmup=args.warmup,
        schedule=args.schedule,
        clip=args.clip,
        patience=args.patience,
        seed=args.seed,
        resume=args.resume,
        save_every_min=args.save_every_min,
        max_minutes=args.max_minutes,
        anneal_by_time=args.anneal_by_time,
        max_steps=args.max_steps,
        average_last=getattr(args, "average_last", 0),
        precision=args.precision,
        snapshots=args.snapshots,
    )


def load_task_data(args) -> dict:
    """The splits a task trains on: its own (Task.load_data: Multi30k, the next-word model's reviews), or for the
    sentiment encoder IMDB (+ unlabelled reviews for pre-training) (+ SST-2)."""
    from training.engine.data import IMDB, SST2, load_splits

    Task = task_class(args.task)
    if hasattr(Task, "load_data"):
        return Task.load_data(args)
    if args.task == "pretrain" and not args.no_unlabeled:
        splits = load_splits(IMDB, args.data_dir, ("train", "unsupervised"))
    else:
        splits = load_splits(IMDB, args.data_dir, ("train",))
    if args.sst2_dir:
        splits["sst2_train"] = load_splits(SST2, args.sst2_dir)["train"]
    return splits


def machine() -> str:
    return (
        f"{platform.machine()} {platform.processor() or ''}, {os.cpu_count()} cores, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads".replace(" ,", ",")
    )
