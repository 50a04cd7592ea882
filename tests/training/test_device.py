"""Every tensor a training task builds follows the model's device (what a GPU run needs), checked on a CPU.

On a CPU-only machine every tensor is on the CPU, so a batch left behind on the CPU goes unnoticed until the
first GPU run crashes. Here the model lives on the `meta` device (shapes without data) and a torch function
mode fails any torch call whose tensors sit on two devices, naming the call. A `meta` tensor holds no values,
so the mode answers the few reads of a value (`int(t)`, `t.item()`, `t.tolist()`, `bool(t)`) with stand-ins, a
copy to the CPU (`t.cpu()`, what a result handed back does) with a CPU tensor of stand-ins, and a boolean-mask
selection with every row (a shape `meta` cannot know): the tasks then run their whole training step and
evaluation, decoding included, as they would on an accelerator (tests/pipelines/test_serving_device.py: the pipelines).
"""

import pytest
import torch
from devices import DEVICE, FollowsDevice
from training_runs import TINY_PRETRAIN, TINY_SENTIMENT, TINY_TRANSLATION

from training.cli import build_parser, load_task_data, task_class


def task_for(command: list[str], data_dir):
    args = build_parser().parse_args([*command, "--data-dir", str(data_dir), "--out", "unused"])
    task = task_class(args.task)(args, load_task_data(args), log=lambda *a: None)
    torch.manual_seed(0)
    return task, task.build_model()


def step_and_evaluate(task, model) -> dict:
    """A training step (forward, loss, backward) on the first batch and a full evaluation, on `meta`."""
    model.to(DEVICE).train()
    batch = [t.to(DEVICE) if torch.is_tensor(t) else t for t in task.train_batches(0)[0]]  # as the loop moves it
    with FollowsDevice() as mode:
        loss, stats = task.step(model, batch)
        assert loss.device == DEVICE and loss.dim() == 0
        loss.backward()
        metrics = task.evaluate(model)
    assert mode.calls > 100  # the mode saw the work (it is not bypassed)
    assert any(p.grad is not None and p.grad.is_meta for p in model.parameters())
    return metrics


def test_the_check_catches_a_cpu_tensor_beside_a_meta_one():
    with FollowsDevice(), pytest.raises(AssertionError, match="mixes devices"):
        torch.zeros(3, device=DEVICE) + torch.zeros(3)
    with FollowsDevice(), pytest.raises(AssertionError, match="embedding"):
        torch.nn.functional.embedding(torch.tensor([1, 2]), torch.zeros(5, 2, device=DEVICE))  # torch allows it
    with FollowsDevice():
        ids = torch.zeros(2, 3, dtype=torch.long, device=DEVICE)
        assert int(ids.sum()) == 1 and ids.tolist() == [[1, 1, 1], [1, 1, 1]]
        assert ids[ids > 0].shape == (6,) and (torch.zeros(3, device=DEVICE) * torch.tensor(2.0)).is_meta
        assert ids.cpu().tolist() == [[1, 1, 1], [1, 1, 1]] and ids.float().to("cpu").device.type == "cpu"
        assert ids.to(torch.float16).is_meta  # a copy that stays on meta is the real one
    with FollowsDevice(), pytest.raises(TypeError, match="meta"):
        torch.zeros(3, device=DEVICE).numpy()  # what a result left on a GPU does: fails, as there


@pytest.mark.parametrize("ngrams", ["101", "0"])
def test_sentiment_step_and_evaluation_follow_the_model_device(imdb_dir, ngrams):  # noqa: F811
    task, model = task_for(["sentiment", *TINY_SENTIMENT, "--ngram-buckets", ngrams], imdb_dir)
    metrics = step_and_evaluate(task, model)
    assert {"accuracy", "imdb_accuracy", "imdb_loss"} <= metrics.keys()


@pytest.mark.parametrize("objective", ["mlm", "electra"])
def test_pretrain_step_and_evaluation_follow_the_model_device(imdb_dir, objective):  # noqa: F811
    task, model = task_for(["pretrain", *TINY_PRETRAIN, "--ngram-buckets", "0", "--objective", objective], imdb_dir)
    metrics = step_and_evaluate(task, model)
    assert {"mlm_accuracy", "mlm_loss"} <= metrics.keys()


def test_translation_step_and_evaluation_follow_the_model_device(multi30k_dir):  # noqa: F811
    task, model = task_for(["translation", *TINY_TRANSLATION], multi30k_dir)
    metrics = step_and_evaluate(task, model)  # greedy validation decoding, as each epoch runs it
    assert {"bleu", "chrf"} <= metrics.keys()
    with FollowsDevice():
        assert task.evaluate(model, beam=2)["n"] == len(task.sample)  # beam search, as the final score runs it


@pytest.mark.parametrize("task_name", ["sentiment", "pretrain", "translation"])
def test_each_task_steps_and_evaluates_under_bf16_autocast(imdb_dir, multi30k_dir, task_name):  # noqa: F811
    """What a CUDA run does (training.engine.device.Precision "bf16"), with the CPU's bf16 autocast: no dtype clash."""
    tiny = {"sentiment": TINY_SENTIMENT, "pretrain": TINY_PRETRAIN, "translation": TINY_TRANSLATION}[task_name]
    task, model = task_for([task_name, *tiny], multi30k_dir if task_name == "translation" else imdb_dir)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = task.step(model, task.train_batches(0)[0])
        assert loss.dtype == torch.float32  # losses are computed in fp32 under autocast
        loss.backward()
        metrics = task.evaluate(model)
    assert all(p.grad is None or p.grad.dtype == torch.float32 for p in model.parameters())
    assert metrics[task.metric] >= 0.0
