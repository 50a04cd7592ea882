"""A training loop that knows nothing about the model: the task supplies batches, the loss and the score.

AdamW with linear warm-up and cosine (or inverse square root) decay, gradient clipping, fixed seeds,
a tqdm bar (loss, accuracy, tokens/s, ETA), JSON-lines metrics, atomic checkpoints every epoch and
every few minutes, --resume after a kill, the best model kept, early stopping. Runs under
`accelerate` (one CPU process by default, `accelerate launch` for several processes or GPUs).
"""

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import torch
from tqdm.auto import tqdm

from .checkpoint import atomic_folder, atomic_torch_save, restore


@dataclass
class LoopConfig:
    out: Path
    epochs: int = 3
    lr: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.05  # fraction of all steps
    schedule: str = "cosine"  # "cosine" | "inverse_sqrt" | "constant"
    clip: float = 1.0
    patience: int = 3  # epochs without a better validation score before stopping
    seed: int = 0
    resume: bool = False
    save_every_min: float = 10.0
    log_every: int = 50
    max_minutes: float | None = None  # stop cleanly after this much training time
    average_last: int = 0  # average the weights of the last N epochs into the final model


class Task(Protocol):
    metric: str  # the validation score to maximise, a key of evaluate()'s result

    def train_batches(self, epoch: int) -> list: ...  # a deterministic list of batches for this epoch
    def step(self, model, batch) -> tuple[torch.Tensor, dict]: ...  # loss, {"tokens", "correct", "count"}
    def evaluate(self, model) -> dict: ...
    def export(self, model, folder: Path) -> None: ...  # save_pretrained + tokenizer


def lr_factor(step: int, total: int, warmup: int, schedule: str) -> float:
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    if schedule == "inverse_sqrt":
        return math.sqrt(max(warmup, 1) / (step + 1))
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def param_groups(model, weight_decay: float) -> list[dict]:
    """No weight decay on biases, norms and embeddings."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "emb" in name else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def train(model, task: Task, cfg: LoopConfig, run_info: dict | None = None) -> dict:
    """Train `model` on `task`; returns the final summary (also in cfg.out/summary.json)."""
    from accelerate import Accelerator
    from accelerate.utils import broadcast_object_list, set_seed

    # Without a GPU, cpu=True lets `accelerate launch --multi_gpu` (torchrun) run several CPU processes over gloo.
    acc = Accelerator(cpu=not torch.cuda.is_available())
    set_seed(cfg.seed)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt_path, log_path = out / "checkpoint.pt", out / "metrics.jsonl"

    first_batches = task.train_batches(0)  # also used for epoch 0 below, not built twice
    steps_per_epoch = math.ceil(len(first_batches) / acc.num_processes)
    total = steps_per_epoch * cfg.epochs
    warmup = max(1, int(cfg.warmup * total))
    opt = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, warmup, cfg.schedule))
    state = {
        "epoch": 0,
        "batch": 0,
        "step": 0,
        "best": None,
        "best_epoch": -1,
        "bad_epochs": 0,
        "train_seconds": 0.0,
        "recent": [],
    }

    if cfg.resume and ckpt_path.exists():
        state.update(restore(ckpt_path, model, opt, sched))  # DamagedCheckpoint: cli exits 2
        acc.print(f"resumed from {ckpt_path}: epoch {state['epoch']}, batch {state['batch']}, step {state['step']}")
    elif cfg.resume:
        acc.print(f"--resume: no checkpoint at {ckpt_path}, starting from scratch")

    model, opt = acc.prepare(model, opt)
    raw = acc.unwrap_model(model)

    def log(record: dict) -> None:
        if acc.is_main_process:
            with log_path.open("a") as f:
                f.write(json.dumps({**record, "time": round(time.time(), 1)}) + "\n")

    def save() -> None:
        if acc.is_main_process:
            atomic_torch_save(
                {
                    "model": raw.state_dict(),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "state": state,
                    "rng": torch.get_rng_state(),
                    "config": {k: str(v) for k, v in asdict(cfg).items()},
                },
                ckpt_path,
            )
        acc.wait_for_everyone()

    if state["step"] == 0 and acc.is_main_process:
        log({"event": "start", **(run_info or {}), "steps_per_epoch": steps_per_epoch, "total_steps": total})

    stopped = None
    last_save = time.time()
    while state["epoch"] < cfg.epochs and stopped is None:
        epoch = state["epoch"]
        all_batches = first_batches if epoch == 0 else task.train_batches(epoch)
        first_batches = None
        batches = all_batches[acc.process_index :: acc.num_processes][:steps_per_epoch]
        model.train()
        bar = tqdm(
            total=len(batches),
            initial=state["batch"],
            desc=f"epoch {epoch + 1}/{cfg.epochs}",
            disable=not acc.is_local_main_process,
            dynamic_ncols=True,
        )
        window = {"loss": 0.0, "tokens": 0, "correct": 0, "count": 0, "t0": time.time(), "steps": 0}
        for i in range(state["batch"], len(batches)):
            t0 = time.time()
            batch = [t.to(acc.device) if torch.is_tensor(t) else t for t in batches[i]]
            loss, stats = task.step(model, batch)
            opt.zero_grad(set_to_none=True)
            acc.backward(loss)
            if cfg.clip:
                acc.clip_grad_norm_(model.parameters(), cfg.clip)
            opt.step()
            sched.step()
            state["step"] += 1
            state["batch"] = i + 1
            state["train_seconds"] += time.time() - t0
            window["loss"] += float(loss.detach())
            window["steps"] += 1
            for k in ("tokens", "correct", "count"):
                window[k] += stats.get(k, 0)
            elapsed = time.time() - window["t0"]
            tok_s = window["tokens"] * acc.num_processes / max(elapsed, 1e-9)
            bar.set_postfix(
                loss=f"{window['loss'] / window['steps']:.3f}",
                acc=f"{window['correct'] / max(window['count'], 1):.3f}",
                tok_s=f"{tok_s:,.0f}",
            )
            bar.update(1)
            if state["step"] % cfg.log_every == 0:
                log(
                    {
                        "event": "train",
                        "epoch": epoch,
                        "step": state["step"],
                        "lr": sched.get_last_lr()[0],
                        "loss": window["loss"] / window["steps"],
                        "acc": window["correct"] / max(window["count"], 1),
                        "tokens_per_s": tok_s,
                    }
                )
                window = {"loss": 0.0, "tokens": 0, "correct": 0, "count": 0, "t0": time.time(), "steps": 0}
            if time.time() - last_save > cfg.save_every_min * 60:
                save()
                last_save = time.time()
            if cfg.max_minutes and state["train_seconds"] > cfg.max_minutes * 60:
                stopped = f"time budget of {cfg.max_minutes} min reached"
                break
        bar.close()
        if stopped is None:
            state["epoch"] += 1
            state["batch"] = 0
        # Validation, the best model, averaging, early stopping: on the main process.
        decision = [None]
        if acc.is_main_process:
            t_eval = time.time()
            metrics = task.evaluate(raw)
            score = metrics[task.metric]
            log(
                {
                    "event": "validation",
                    "epoch": epoch,
                    "step": state["step"],
                    **metrics,
                    "eval_seconds": time.time() - t_eval,
                    "train_seconds": state["train_seconds"],
                }
            )
            acc.print(
                f"epoch {epoch + 1}: " + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items() if isinstance(v, float))
            )
            if cfg.average_last:
                state["recent"] = (state["recent"] + [{k: v.detach().clone() for k, v in raw.state_dict().items()}])[
                    -cfg.average_last :
                ]
            if state["best"] is None or score > state["best"]:
                state.update(best=score, best_epoch=epoch, bad_epochs=0)
                atomic_folder(lambda d: task.export(raw, d), out / "best")
            else:
                state["bad_epochs"] += 1
                if state["bad_epochs"] >= cfg.patience:
                    decision[0] = f"early stop: no better {task.metric} for {cfg.patience} epochs"
        decision = broadcast_object_list(decision)
        stopped = stopped or decision[0]
        model.train()
        save()
        last_save = time.time()

    summary = {
        "stopped": stopped or "all epochs done",
        "epochs_run": state["epoch"],
        "steps": state["step"],
        "best_epoch": state["best_epoch"],
        f"best_{task.metric}": state["best"],
        "train_seconds": round(state["train_seconds"], 1),
    }
    if acc.is_main_process:
        if cfg.average_last and len(state["recent"]) > 1:
            summary.update(average_checkpoints(raw, task, state["recent"], out, state["best"]))
        log({"event": "end", **summary})
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return broadcast_object_list([summary])[0]  # every process reports the main process's summary


def average_checkpoints(model, task: Task, recent: list[dict], out: Path, best: float) -> dict:
    """Average the last epochs' weights; keep the average as 'best' if it scores higher."""
    keep = {k: v.clone() for k, v in model.state_dict().items()}
    avg = {k: sum(sd[k].float() for sd in recent) / len(recent) for k in keep}
    model.load_state_dict(avg)
    metrics = task.evaluate(model)
    result = {"averaged_epochs": len(recent), f"averaged_{task.metric}": metrics[task.metric]}
    if metrics[task.metric] > best:
        atomic_folder(lambda d: task.export(model, d), out / "best")
        result["kept"] = "average"
    else:
        result["kept"] = "best single epoch"
    model.load_state_dict(keep)
    return result
