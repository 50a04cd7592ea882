"""How attention forms in training (the model's training-step snapshots: pipelines/models/snapshots.py) and where to
go next (the research sections of the task tabs)."""

import numpy as np

from pipelines.learn.model_pass import Pass, keeper, labels
from pipelines.learn.open_math import entropy
from pipelines.learn.walk import Step
from pipelines.models.snapshots import at_revision, list_snapshots, starting_point

MAX_SNAPSHOTS = 4  # the first, the last and two between


def _snapshot_model(pipeline: type, folder: str, device: str):
    """A snapshot's model, loaded for this walk and let go after it: kept, the snapshots of the translator and the
    next-word model held about 200 MB of the app's memory for the price of about 1 s a new input (the walks
    themselves are kept by the Learn tab, so a text walked again loads nothing)."""
    return pipeline.from_pretrained(folder, device).adapter.model


def _chosen(source) -> list:
    try:
        snaps = list_snapshots(source) if source else []
    except Exception:  # a source whose snapshots cannot be listed (a single file, a Hub repo offline): none
        return []
    if len(snaps) <= MAX_SNAPSHOTS:
        return snaps
    picks = np.linspace(0, len(snaps) - 1, MAX_SNAPSHOTS).round().astype(int)
    return [snaps[i] for i in sorted(set(picks))]


def focus(weights: np.ndarray, causal: bool) -> float:
    """How sharply a map (Tq, Tk) picks its keys: the mean of each row's largest weight. A causal model's first key
    is left out (a head that parks its weight on the first token, a sink, has formed nothing to see), and with it
    the first row, which has no other key."""
    if causal and weights.shape[1] > 1:
        weights = weights[1:, 1:]
    return float(weights.max(axis=-1).mean())


def _followed(p: Pass) -> tuple[str, int]:
    """(hook point, head): the head of the trained model that picks its keys most sharply (focus)."""
    best = max((focus(p.at(point)[h].float().cpu().numpy(), p.stack.causal), point, h)
               for point in p.family.training_points(p) for h in range(p.at(point).size(0)))  # fmt: skip
    return best[1], best[2]


def _pattern(p: Pass, model, point: str, head: int) -> np.ndarray:
    cache = {}
    p.hooked([(point, keeper(cache, stop=True))], model=model)
    return cache[point][0, head].float().cpu().numpy()


NONE = (
    "This model has no training snapshots, so its training cannot be replayed here. The translator and the "
    "next-word model from scratch have them: choose one to see a head form, from flat at step 0 to its pattern."
)


def training(p: Pass) -> Step:
    source = getattr(p.pipe, "source", None)
    snaps = _chosen(source)
    if not snaps:
        return p.step("training", title="How attention forms in training", text=NONE, part="attention")
    point, head = _followed(p)
    folders = [at_revision(source, s.revision)[0] for s in snaps]
    device = str(p.ids.device)
    maps = [_pattern(p, _snapshot_model(type(p.pipe), f, device), point, head) for f in folders]
    maps.append(p.at(point)[head].float().cpu().numpy())
    steps = [f"step {s.step}" for s in snaps] + ["trained"]
    spread = [float(entropy(m).mean()) for m in maps]
    start = starting_point(getattr(p.pipe, "metrics", None))
    first = (f"This model's training started from {start}: its heads had formed before, and fine-tuning moves "
             "them little. " if start else "Training starts from random weights: every head's weights are nearly "
             "equal, a flat map. ")  # fmt: skip
    text = (
        f"{first}Step by step, training nudges W_Q and W_K until a head's queries match some keys far better "
        "than others. Here "
        f"one head ({point.replace('.hook_pattern', '')}, head {head}), the sharpest of the trained model, on "
        f"your text at {len(snaps)} training snapshots and trained: its mean row entropy goes from {spread[0]:.2f} "
        f"to {spread[-1]:.2f} nats."
    )
    rows = p.read.extra.get("target_tokens") if point.startswith("decoder.") and "cross" in point else None
    arrays = {"patterns": np.stack(maps).astype(np.float32), "steps": np.array(steps),
              "entropy": np.array(spread, dtype=np.float32)}  # fmt: skip
    if rows is not None:
        arrays["target"] = np.array(labels(rows))
    return p.step("training", title="How attention forms in training", text=text, part="attention", arrays=arrays)


NEXT = (
    "You have walked the whole path: tokens, attention, heads, blocks, and the output. Each task tab goes further, "
    "on the same input. All heads shows every map of every layer. Inside one head takes one row apart: its query, "
    "the keys, the values. Layer by layer reads what each layer would predict (the logit lens) and which parts "
    "wrote the answer (attribution), and patches states between two inputs. What each head does measures the "
    "heads: switch one off and see the answer change. Compare puts two inputs side by side. Training steps replays "
    "training."
)


def next_steps(p: Pass) -> Step:
    return p.step("next", title="Where to go next", text=NEXT, part="output")
