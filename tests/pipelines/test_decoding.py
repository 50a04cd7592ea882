"""Generations decoded together (pipelines.hosting.decoding): a row's tokens, probabilities and maps are those it
gets alone, greedy or sampled; a row that stops leaves without disturbing the others."""

import threading
import time

import numpy as np
import pytest
import torch

from pipelines.hosting.microbatch import MicroBatcher, TooManyRequests
from pipelines.hosting.serving import calling_client, serve
from pipelines.language_model import Decoding
from pipelines.tasks import LM

REQUESTS = [
    ("The cat", Decoding(max_new_tokens=6)),
    ("A dog ran to the", Decoding(max_new_tokens=4)),
    ("The cat", Decoding(max_new_tokens=6, temperature=1.0, seed=3)),
    ("Once upon a time there was a very", Decoding(max_new_tokens=5, temperature=0.8, top_p=0.9, seed=11)),
]


class HeldLane:
    """Holds the model's lane with a call of its own until released, so that the streams started meanwhile all
    wait to join the same first step."""

    def __init__(self, served):
        self.release, self.held = threading.Event(), threading.Event()

        def hold(items):
            self.held.set()
            self.release.wait(10)
            return [None for _ in items]

        submit = dict(target=served.batcher.submit, args=(hold, None), kwargs=dict(lane=served.run_batch))
        self.thread = threading.Thread(**submit)
        self.thread.start()
        assert self.held.wait(10)

    def __exit__(self, *_):
        self.release.set()
        self.thread.join(10)

    def __enter__(self):
        return self


def assert_same_result(together, alone) -> None:
    assert together.generated_ids == alone.generated_ids and together.continuation == alone.continuation
    for a, b in zip(together.steps, alone.steps, strict=True):
        assert a.probability == pytest.approx(b.probability, abs=1e-5) and a.top_ids == b.top_ids
        assert [p for _, p in a.top_k] == pytest.approx([p for _, p in b.top_k], abs=1e-5)
    for a, b in zip(together.attentions, alone.attentions, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)
    for a, b in zip(together.value_norms, alone.value_norms, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def generate_at_once(served, requests) -> list:
    out = [None] * len(requests)

    def run(i, prompt, decoding):
        with calling_client(f"visitor {i}"):
            out[i] = served.generate(prompt, decoding)

    threads = [threading.Thread(target=run, args=(i, *r)) for i, r in enumerate(requests)]
    with HeldLane(served):
        for t in threads:
            t.start()
        while len(served.decoding.waiting) < len(requests):
            threading.Event().wait(0.01)
    for t in threads:
        t.join(30)
    return out


def test_each_generation_decoded_with_others_is_the_one_it_gets_alone(lm):
    served = serve(LM, lm, MicroBatcher(4))
    together = generate_at_once(served, REQUESTS)
    assert served.decoding.widest == len(REQUESTS)  # they did decode together
    assert served.decoding.steps_run == max(d.max_new_tokens for _, d in REQUESTS)
    for result, (prompt, decoding) in zip(together, REQUESTS):
        assert result.complete and len(result.steps) == decoding.max_new_tokens
        assert_same_result(result, lm.generate(prompt, decoding))
    assert not served.decoding.decoding and not served.decoding.waiting


def test_a_stopped_generation_leaves_at_the_next_step_and_the_others_go_on(lm):
    served = serve(LM, lm, MicroBatcher(4))
    stopped = served.stream("The cat", Decoding(max_new_tokens=20))
    first = next(stopped)  # it decodes
    others = generate_at_once(served, REQUESTS[:2])
    assert first.steps and not first.complete
    stopped.close()  # the Stop button
    for result, (prompt, decoding) in zip(others, REQUESTS[:2]):
        assert_same_result(result, lm.generate(prompt, decoding))
    for _ in range(100):
        if not served.decoding.decoding:
            break
        threading.Event().wait(0.02)
    assert not served.decoding.decoding  # the stopped row left
    assert served.decoding.steps_run < 20


def test_a_head_mask_decodes_in_the_batch_as_it_does_alone(lm):
    served = serve(LM, lm, MicroBatcher(4))
    off = {("causal", 0, 1): 0.0}
    out = [None, None]

    def run(i, mask):
        out[i] = served.generate("The cat", Decoding(max_new_tokens=5), mask)

    threads = [threading.Thread(target=run, args=(0, off)), threading.Thread(target=run, args=(1, None))]
    with HeldLane(served):
        for t in threads:
            t.start()
        while len(served.decoding.waiting) < 2:
            threading.Event().wait(0.01)
    for t in threads:
        t.join(30)
    assert served.decoding.widest == 2
    assert_same_result(out[0], lm.generate("The cat", Decoding(max_new_tokens=5), off))
    assert_same_result(out[1], lm.generate("The cat", Decoding(max_new_tokens=5)))


def test_one_client_may_not_hold_more_rows_than_its_share(lm):
    batcher = MicroBatcher(4, max_pending_per_client=2)
    served = serve(LM, lm, batcher)

    def first_token(stream):
        with calling_client("greedy visitor"):
            next(stream)

    with HeldLane(served), calling_client("greedy visitor"):
        streams = [served.stream("The cat", Decoding(max_new_tokens=3)) for _ in range(3)]
        started = [threading.Thread(target=first_token, args=(s,)) for s in streams[:2]]
        for t in started:
            t.start()
        while len(served.decoding.waiting) < 2:
            threading.Event().wait(0.01)
        with pytest.raises(TooManyRequests):
            next(streams[2])
    for t in started:
        t.join(30)


def test_a_decoding_step_runs_while_an_exact_patch_is_in_progress(lm):
    """Exact patching is background work with a pause point before each layer's pass: a generation started while
    its first layer runs decodes at the next pause, not after the whole grid. Its tokens, and the grid, are each the
    ones they are alone."""
    clean, corrupted = (
        "When Mary and John went to the store, John gave",
        "When John and Mary went to the store, John gave",
    )
    served, steps, generated = serve(LM, lm, MicroBatcher(4)), [], []
    decoding = Decoding(max_new_tokens=3)
    generation = threading.Thread(target=lambda: generated.append(served.generate("The cat", decoding, None, False)))

    def progress(done, total):
        steps.append(served.decoding.steps_run)  # decoding steps run by the end of each of the patch's layers
        if done == 1:  # a visitor clicks Generate while the patch runs: its first step waits in the lane
            generation.start()
            deadline = time.monotonic() + 10
            while not served.batcher.waiting(served.run_batch):
                assert time.monotonic() < deadline, "the generation's step never came to the lane"
                time.sleep(0.001)

    with torch.no_grad():  # two answers to compare: the clean run's first and second choices
        t, c = lm.adapter.model(torch.tensor([lm.encode(clean).ids])).logits[0, -1].topk(2).indices.tolist()
    patched = served.patch(clean, corrupted, over="resid", target=t, contrast=c, progress=progress)
    generation.join(10)
    assert lm.n_layers >= 2 and len(steps) == lm.n_layers
    assert steps[0] == 0 and steps[1] >= 1  # a step ran at the pause before the second layer's pass
    np.testing.assert_allclose(
        patched.grid, lm.patch(clean, corrupted, "resid", target=t, contrast=c).grid, rtol=1e-5, atol=1e-6
    )
    assert generated[0].generated_ids == lm.generate("The cat", decoding, need_weights=False).generated_ids
