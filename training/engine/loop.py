"""A training loop that knows nothing about the model: the task supplies batches, the loss and the score.

AdamW with linear warm-up and cosine (or inverse square root) decay, gradient clipping, fixed seeds,
a tqdm bar (loss, accuracy, tokens/s, ETA), JSON-lines metrics, atomic checkpoints (with a checksum) every
epoch and every few minutes, --resume after a kill, the best model kept, early stopping; a non-finite loss
stops the run before it reaches the weights or a checkpoint. Runs under `accelerate`: one process on the
GPU (bf16 autocast, TF32) or the CPU (fp32) by default, `accelerate launch` for several processes or GPUs.
Every process takes the same number of steps per epoch; decisions that depend on the clock or on a loss (save
now, stop now) are agreed over all processes in the one small all-reduce a step makes when there are several.
"""

import json
import math
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Protocol

import torch
from tqdm.auto import tqdm

from training.engine.checkpoint import atomic_folder, atomic_torch_save, load_state, restore, with_checksum
from training.engine.device import Precision, describe_device, to_device
from training.engine.snapshots import schedule, snapshot_folder, take_snapshot

# The files of a run folder (--out).
CHECKPOINT = "checkpoint.pt"  # what --resume needs
METRICS_LOG = "metrics.jsonl"  # one JSON record per event: start, train, validation, end
SUMMARY = "summary.json"  # the end record, written once when training ends
BEST = "best"  # the best model folder
RECENT = "recent"  # the last epochs' weights, for --average-last


@dataclass
class LoopConfig:
    out: Path
    epochs: int = 3
    lr: float = 1e-3
    weight_decay: float = 0.01  # on Linear weight matrices
    embedding_decay: float = 0.0  # on embedding tables (token, hashed n-gram)
    warmup: float = 0.05  # fraction of all steps
    schedule: str = "cosine"  # "cosine" | "inverse_sqrt" | "constant"
    clip: float = 1.0
    patience: int = 3  # epochs without a better validation score before stopping
    seed: int = 0
    resume: bool = False
    save_every_min: float = 10.0
    log_every: int = 50
    max_minutes: float | None = None  # stop cleanly after this much training time
    anneal_by_time: bool = False  # the schedule runs its course by max_minutes when that comes first
    max_steps: int | None = None  # stop cleanly after this many steps (the schedule still spans all epochs)
    average_last: int = 0  # average the weights of the last N epochs into the final model
    precision: str = "auto"  # "auto" (bf16 autocast on CUDA, fp32 on a CPU) | "bf16" | "fp32"
    snapshots: int = 0  # keep this many snapshots, step 0 to the end, in out/snapshots/ (training/engine/snapshots.py)


class NonFiniteLoss(RuntimeError):
    """Training produced a NaN or infinite loss (or gradient norm); str() is one line for the user."""


class Task(Protocol):
    metric: str  # the validation score to maximise, a key of evaluate()'s result

    def train_batches(self, epoch: int) -> list: ...  # a deterministic list of batches for this epoch
    def step(self, model, batch) -> tuple[torch.Tensor, dict]: ...  # loss, {"tokens", "correct", "count"}
    def evaluate(self, model) -> dict: ...
    def export(self, model, folder: Path) -> None: ...  # save_pretrained + tokenizer

    # optional: snapshot_evaluate(model) -> dict, a cheaper evaluate() for snapshots (training/engine/snapshots.py)


def lr_factor(step: int, total: int, warmup: int, schedule: str) -> float:
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    if schedule == "inverse_sqrt":
        return math.sqrt(max(warmup, 1) / (step + 1))
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def param_groups(model, weight_decay: float, embedding_decay: float = 0.0) -> list[dict]:
    """AdamW groups by module type: decay the weight matrices of Linear layers; embedding tables
    (token, hashed n-gram) get `embedding_decay`; biases, norms, position tables and other vectors none."""
    embeddings = [m.weight for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    seen = {id(p) for p in embeddings}  # a tied output projection shares its weight with an embedding
    matrices, other = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in seen or not p.requires_grad:
                continue
            seen.add(id(p))
            (matrices if isinstance(module, torch.nn.Linear) and name == "weight" else other).append(p)
    groups = [
        {"params": matrices, "weight_decay": weight_decay, "name": "linear weights"},
        {"params": embeddings, "weight_decay": embedding_decay, "name": "embeddings"},
        {"params": other, "weight_decay": 0.0, "name": "biases, norms, positions"},
    ]
    return [g for g in groups if g["params"]]


def describe_groups(groups: list[dict]) -> str:
    """One line for the log: parameter counts and weight decay per group."""
    return "; ".join(
        f"{g['name']}: {sum(p.numel() for p in g['params']):,} params, decay {g['weight_decay']}" for g in groups
    )


@dataclass
class LoopState:
    """Where training stands: everything resume needs besides the model, optimizer, scheduler and RNG."""

    epoch: int = 0
    batch: int = 0  # the next batch of this epoch
    step: int = 0
    best: float | None = None
    best_epoch: int = -1
    bad_epochs: int = 0
    train_seconds: float = 0.0
    tokens: int = 0  # training tokens so far, over all processes
    recent: list[str] = field(default_factory=list)  # weight files in out/recent/ for --average-last
    snapshot_loss: float = 0.0  # summed training loss of the steps since the last snapshot
    snapshot_steps: int = 0  # and their number
    snapshot_seconds: float = 0.0  # spent writing snapshots (scoring included), outside train_seconds

    @classmethod
    def from_dict(cls, saved: dict) -> "LoopState":
        """From checkpoint.pt; keys an older checkpoint has and this version does not know are dropped."""
        known = {f.name for f in fields(cls)}
        state = cls(**{k: v for k, v in saved.items() if k in known})
        if state.recent and not isinstance(state.recent[0], str):  # older checkpoints kept full state dicts
            state.recent = []
        return state


@dataclass
class Window:
    """Running training statistics between two log lines."""

    loss: float = 0.0
    steps: int = 0
    tokens: int = 0
    correct: int = 0
    count: int = 0
    t0: float = field(default_factory=time.time)

    def add(self, loss: float, stats: dict) -> None:
        self.loss += loss
        self.steps += 1
        self.tokens += stats.get("tokens", 0)
        self.correct += stats.get("correct", 0)
        self.count += stats.get("count", 0)

    def summary(self) -> dict:
        """Mean loss, accuracy and tokens/s (tokens of all processes) since the window opened."""
        tok_s = self.tokens / max(time.time() - self.t0, 1e-9)
        return {"loss": self.loss / max(self.steps, 1), "acc": self.correct / max(self.count, 1), "tokens_per_s": tok_s}


class Run:
    """One training run: the accelerator, model, optimizer and schedule, and the run folder's files."""

    def __init__(self, model, task: Task, cfg: LoopConfig):
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        # Without a GPU, cpu=True lets `accelerate launch --multi_gpu` (torchrun) run several CPU processes over gloo.
        # Autocast is ours (Precision), not accelerate's: the same for every launcher, and around the loss too.
        self.acc = acc = Accelerator(cpu=not torch.cuda.is_available(), mixed_precision="no")
        self.precision = Precision.for_device(acc.device, cfg.precision)
        self.precision.enable_tf32()
        set_seed(cfg.seed)
        self.task, self.cfg, self.state = task, cfg, LoopState()
        self.out = Path(cfg.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.ckpt_path, self.log_path = self.out / CHECKPOINT, self.out / METRICS_LOG
        self.first_batches = task.train_batches(0)  # also used for epoch 0, not built twice
        self.steps_per_epoch = math.ceil(len(self.first_batches) / acc.num_processes)
        self.total = self.steps_per_epoch * cfg.epochs
        self.snapshot_steps = set(schedule(min(self.total, cfg.max_steps or self.total), cfg.snapshots))
        warmup = max(1, int(cfg.warmup * self.total))
        groups = param_groups(model, cfg.weight_decay, cfg.embedding_decay)
        acc.print("optimizer groups: " + describe_groups(groups))
        opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9)
        self.elapsed = 0.0  # training seconds so far, as all processes agree: the time-annealed schedule's clock
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(self.schedule_step(s), self.total, warmup, cfg.schedule)
        )
        if cfg.resume:
            self.resume(model, opt)
            self.elapsed = self.state.train_seconds
        self.saved_step = self.state.step if cfg.resume and self.ckpt_path.exists() else None
        self.model, self.opt = acc.prepare(model, opt)
        self.raw = acc.unwrap_model(self.model)
        self.last_save = time.time()
        where = self.where()
        acc.print(f"training on {where['device']} ({where['precision']}), {where['processes']} process(es)")

    def schedule_step(self, step: int) -> float:
        """Where the schedule stands at `step`: the step itself, or with --anneal-by-time the step that the share
        of the time budget spent would be, when that is further on (so warm-up and decay end by max_minutes)."""
        if not (self.cfg.anneal_by_time and self.cfg.max_minutes):
            return step
        return max(step, self.total * min(self.elapsed / (self.cfg.max_minutes * 60), 1.0))

    def where(self) -> dict:
        """Device, precision and process count, for the log's start record."""
        return {
            "device": describe_device(self.acc.device),
            "precision": self.precision.describe(),
            "processes": self.acc.num_processes,
        }

    def resume(self, model, opt) -> None:
        if not self.ckpt_path.exists():
            self.acc.print(f"--resume: no checkpoint at {self.ckpt_path}, starting from scratch")
            return
        # DamagedCheckpoint (one line naming the file): the command exits 2
        self.state = restore(self.ckpt_path, model, opt, self.sched, LoopState.from_dict)
        s = self.state
        self.acc.print(f"resumed from {self.ckpt_path}: epoch {s.epoch}, batch {s.batch}, step {s.step}")

    def log(self, record: dict) -> None:
        if self.acc.is_main_process:
            with self.log_path.open("a") as f:
                f.write(json.dumps({**record, "time": round(time.time(), 1)}) + "\n")

    def save(self) -> None:
        """checkpoint.pt: what --resume needs, and nothing else, with its checksum. Every process calls it."""
        if self.acc.is_main_process:
            checkpoint = {
                "model": self.raw.state_dict(),
                "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict(),
                "state": asdict(self.state),
                "rng": torch.get_rng_state(),
            }
            if torch.cuda.is_available():
                checkpoint["cuda_rng"] = torch.cuda.get_rng_state_all()
            atomic_torch_save(with_checksum(checkpoint), self.ckpt_path)
        self.acc.wait_for_everyone()
        self.last_save, self.saved_step = time.time(), self.state.step

    def epoch_batches(self, epoch: int) -> list:
        """This process's share of the epoch's batches: steps_per_epoch of them on every process (DDP
        all-reduces every step), the last ones taken again from the start when the batches do not split evenly."""
        batches = self.first_batches if epoch == 0 else self.task.train_batches(epoch)
        self.first_batches = None
        acc = self.acc
        needed = self.steps_per_epoch * acc.num_processes
        batches = [batches[i % len(batches)] for i in range(needed)]
        return batches[acc.process_index :: acc.num_processes]

    def agree(self, *values: float) -> list[float]:
        """The sums of `values` over all processes (one all-reduce); the values themselves with one process."""
        if self.acc.num_processes == 1:
            return [float(v) for v in values]
        summed = self.acc.reduce(torch.tensor(values, dtype=torch.float64, device=self.acc.device), "sum")
        return summed.tolist()

    def train_step(self, batch, t0: float) -> tuple[float, dict, dict]:
        """One optimizer step; returns (loss, stats with the tokens of all processes, {"save", "stop"}: what
        the processes agreed to do after it). Raises NonFiniteLoss before a NaN can reach the weights."""
        cfg, state = self.cfg, self.state
        batch = to_device(batch, self.acc.device)
        with self.precision.autocast():
            loss, stats = self.task.step(self.model, batch)
        self.opt.zero_grad(set_to_none=True)
        self.acc.backward(loss)
        norm = self.acc.clip_grad_norm_(self.model.parameters(), cfg.clip) if cfg.clip else None
        value = float(loss.detach())
        bad = not math.isfinite(value) or (norm is not None and not math.isfinite(float(norm)))
        save = time.time() - self.last_save > cfg.save_every_min * 60
        elapsed = state.train_seconds + time.time() - t0
        stop = bool(cfg.max_minutes) and elapsed > cfg.max_minutes * 60
        tokens, bad, save, stop, elapsed = self.agree(stats.get("tokens", 0), bad, save, stop, elapsed)
        if bad:
            raise NonFiniteLoss(self.non_finite_message(value, norm))
        self.elapsed = elapsed / self.acc.num_processes  # the mean: one clock, so one learning rate, everywhere
        self.opt.step()
        self.sched.step()
        return value, {**stats, "tokens": int(tokens)}, {"save": save > 0, "stop": stop > 0}

    def non_finite_message(self, loss: float, norm) -> str:
        s = self.state
        what = f"loss {loss}" if not math.isfinite(loss) else f"gradient norm {float(norm)} (loss {loss:.4f})"
        kept = (
            f"{self.ckpt_path} keeps the last good state (step {self.saved_step})"
            if self.saved_step is not None
            else "no checkpoint was written before it"
        )
        return (
            f"non-finite {what} at epoch {s.epoch + 1}, step {s.step + 1}: training stopped before the update; "
            f"{kept}; lower --lr, or check the data and --resume"
        )


def train_epoch(run: Run, epoch: int) -> str | None:
    """Train from run.state.batch to the end of the epoch; returns why training stopped early, or None."""
    cfg, state, acc = run.cfg, run.state, run.acc
    batches = run.epoch_batches(epoch)
    run.model.train()
    desc = f"epoch {epoch + 1}/{cfg.epochs}"
    bar = tqdm(
        total=len(batches), initial=state.batch, desc=desc, disable=not acc.is_local_main_process, dynamic_ncols=True
    )
    with bar:  # closed (its line ended) before any error message
        stopped = run_steps(run, epoch, batches, bar)
    if stopped is None:
        state.epoch, state.batch = state.epoch + 1, 0
    return stopped


def run_steps(run: Run, epoch: int, batches: list, bar) -> str | None:
    """The steps of one epoch from run.state.batch on; returns why they stopped early, or None."""
    cfg, state = run.cfg, run.state
    window = Window()
    for i in range(state.batch, len(batches)):
        t0 = time.time()
        loss, stats, then = run.train_step(batches[i], t0)
        state.step, state.batch = state.step + 1, i + 1
        state.train_seconds += time.time() - t0
        state.tokens += stats.get("tokens", 0)
        state.snapshot_loss, state.snapshot_steps = state.snapshot_loss + loss, state.snapshot_steps + 1
        window.add(loss, stats)
        now = window.summary()
        bar.set_postfix(loss=f"{now['loss']:.3f}", acc=f"{now['acc']:.3f}", tok_s=f"{now['tokens_per_s']:,.0f}")
        bar.update(1)
        if state.step % cfg.log_every == 0:
            lr = run.sched.get_last_lr()[0]
            run.log({"event": "train", "epoch": epoch, "step": state.step, "lr": lr, **now})
            window = Window()
        if state.step in run.snapshot_steps:
            take_snapshot(run)
        if then["save"]:
            run.save()
        if then["stop"]:
            return f"time budget of {cfg.max_minutes} min reached"
        if cfg.max_steps and state.step >= cfg.max_steps:
            return f"step budget of {cfg.max_steps} steps reached"
    return None


def throughput(state: LoopState) -> float:
    """Training tokens per second (all processes) so far."""
    return state.tokens / max(state.train_seconds, 1e-9)


def validate(run: Run, epoch: int) -> str | None:
    """Score, keep the best model, remember weights for averaging; returns an early-stop reason or None.

    Runs on the main process; every process gets its decision.
    """
    from accelerate.utils import broadcast_object_list

    decision = [None]
    if run.acc.is_main_process:
        decision = [record_validation(run, epoch)]
    return broadcast_object_list(decision)[0]


def record_validation(run: Run, epoch: int) -> str | None:
    task, cfg, state = run.task, run.cfg, run.state
    t_eval = time.time()
    with run.precision.autocast():
        metrics = task.evaluate(run.raw)
    score = metrics[task.metric]
    timing = {"eval_seconds": time.time() - t_eval, "train_seconds": state.train_seconds}
    speed = {"tokens": state.tokens, "tokens_per_s": throughput(state)}
    run.log({"event": "validation", "epoch": epoch, "step": state.step, **metrics, **timing, **speed})
    scores = ", ".join(f"{k}={v:.4f}" for k, v in metrics.items() if isinstance(v, float))
    run.acc.print(f"epoch {epoch + 1}: {scores}; {speed['tokens_per_s']:,.0f} training tokens/s")
    if cfg.average_last:
        remember_weights(run)
    if state.best is None or score > state.best:
        state.best, state.best_epoch, state.bad_epochs = score, epoch, 0
        atomic_folder(lambda d: task.export(run.raw, d), run.out / BEST)
        return None
    state.bad_epochs += 1
    if state.bad_epochs >= cfg.patience:
        return f"early stop: no better {task.metric} for {cfg.patience} epochs"
    return None


def remember_weights(run: Run) -> None:
    """Write this epoch's weights once to out/recent/ and keep the last cfg.average_last of them."""
    folder = run.out / RECENT
    folder.mkdir(exist_ok=True)
    name = f"step-{run.state.step}.pt"
    atomic_torch_save(run.raw.state_dict(), folder / name)
    recent = [n for n in run.state.recent if n != name] + [name]
    for old in recent[: -run.cfg.average_last]:
        (folder / old).unlink(missing_ok=True)
    run.state.recent = recent[-run.cfg.average_last :]


def start_record(run: Path) -> dict:
    """The start record of a run folder's metrics.jsonl: the last one (a folder used again by a new run, not
    --resume, gets a second); {} without one."""
    log = run / METRICS_LOG
    if not log.is_file():
        return {}
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return next((r for r in reversed(records) if r.get("event") == "start"), {})


def train(model, task: Task, cfg: LoopConfig, run_info: dict | None = None, started: float | None = None) -> dict:
    """Train `model` on `task`; returns the final summary (also in cfg.out/summary.json).

    `started`: when the command started (time.time()), for the summary's wall_seconds.
    """
    from accelerate.utils import broadcast_object_list

    run = Run(model, task, cfg)
    state = run.state
    if state.step == 0:
        plan = {"steps_per_epoch": run.steps_per_epoch, "total_steps": run.total}
        run.log({"event": "start", **(run_info or {}), **run.where(), **plan})
        if 0 in run.snapshot_steps:
            take_snapshot(run)
    stopped = None
    while state.epoch < cfg.epochs and stopped is None:
        epoch = state.epoch
        stopped = train_epoch(run, epoch)
        # a time or step budget that ends an epoch early still scores it, so the run leaves a best/ model
        early_stop = validate(run, epoch)
        stopped = stopped or early_stop
        run.model.train()
        run.save()
    if cfg.snapshots and not snapshot_folder(run.out, state.step).is_dir():  # a run that stopped before its plan
        take_snapshot(run)
    summary = {
        "stopped": stopped or "all epochs done",
        "epochs_run": state.epoch,
        "steps": state.step,
        "best_epoch": state.best_epoch,
        f"best_{task.metric}": state.best,
        "train_seconds": round(state.train_seconds, 1),
        "tokens": state.tokens,
        "tokens_per_s": round(throughput(state), 1),
        **run.where(),
    }
    if cfg.snapshots:
        summary["snapshot_seconds"] = round(state.snapshot_seconds, 3)  # compare with train_seconds: the cost
    if run.acc.is_main_process:
        finish(run, summary, started)
    summary = broadcast_object_list([summary])[0]  # every process reports the main process's summary
    # the last collective: leave the process group, so no gloo worker thread is left to the interpreter's exit,
    # which aborted a two-process CI run after its summary ("terminate called without an active exception")
    run.acc.end_training()
    return summary


def finish(run: Run, summary: dict, started: float | None) -> None:
    """Average the last epochs if asked, log the end and write summary.json (the one place that does)."""
    if run.cfg.average_last and len(run.state.recent) > 1:
        files = [run.out / RECENT / name for name in run.state.recent]
        recent = [load_state(f) for f in files if f.is_file()]  # a kill can leave a name without its file
        with run.precision.autocast():
            summary.update(average_checkpoints(run.raw, run.task, recent, run.out, run.state.best))
    if started is not None:
        summary["wall_seconds"] = round(time.time() - started, 1)  # this invocation, data loading included
    run.log({"event": "end", **summary})
    (run.out / SUMMARY).write_text(json.dumps(summary, indent=2))


def average_checkpoints(model, task: Task, recent: list[dict], out: Path, best: float) -> dict:
    """Average the last epochs' weights; keep the average as 'best' if it scores higher."""
    keep = {k: v.clone() for k, v in model.state_dict().items()}
    avg = {k: sum(sd[k].float() for sd in recent) / len(recent) for k in keep}
    model.load_state_dict(avg)
    metrics = task.evaluate(model)
    result = {"averaged_epochs": len(recent), f"averaged_{task.metric}": metrics[task.metric]}
    if metrics[task.metric] > best:
        atomic_folder(lambda d: task.export(model, d), out / BEST)
        result["kept"] = "average"
    else:
        result["kept"] = "best single epoch"
    model.load_state_dict(keep)
    return result
