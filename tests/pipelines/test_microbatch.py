"""Batched inference: many callers, one model run at a time, batches equal to single runs, fair to clients."""

import threading
import time

import pytest
import torch

from pipelines.attention.passes import run_passes
from pipelines.hosting.microbatch import MicroBatcher, TooManyRequests, pause_point

TEXTS = ["A fine film.", "Dull, slow and far too long; the actors looked bored in every scene.", "Wow", ""]
GERMAN = ["Ein Hund läuft.", "Zwei Männer spielen Fußball auf einer großen grünen Wiese im Park.", "Ja", ""]


def test_a_sentiment_batch_equals_single_runs(sentiment):
    batch = sentiment.analyze_many(TEXTS)
    assert isinstance(batch[-1], ValueError)  # no tokens: an error in its place, the others still run
    for text, got in zip(TEXTS[:-1], batch):
        alone = sentiment(text)
        assert got.label == alone.label and got.tokens == alone.tokens
        assert got.probabilities == pytest.approx(alone.probabilities, abs=1e-5)
        torch.testing.assert_close(got.pool_weights, alone.pool_weights, atol=1e-5, rtol=0)
        for a, b in zip(got.attentions, alone.attentions):
            assert a.shape == b.shape
            torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


@pytest.mark.parametrize("beam", [1, 3])
def test_a_translation_batch_equals_single_runs(translation, beam):
    batch = translation.explain_many(GERMAN, beam_size=beam)
    assert isinstance(batch[-1], ValueError)
    for text, got in zip(GERMAN[:-1], batch):
        alone = translation(text, beam_size=beam)
        assert got.translation == alone.translation and got.target_tokens == alone.target_tokens
        assert got.score == pytest.approx(alone.score, abs=1e-4)
        assert [s.token for s in got.steps] == [s.token for s in alone.steps]
        for name in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
            for a, b in zip(getattr(got, name), getattr(alone, name)):
                assert a.shape == b.shape
                torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


class SlowRunner:
    """A runner that records its batches and checks that no two runs overlap."""

    def __init__(self, seconds: float = 0.02):
        self.seconds, self.batches, self.starts, self.running, self.overlaps = seconds, [], [], 0, 0
        self.lock = threading.Lock()

    def __call__(self, items, scale=1):
        with self.lock:
            self.running += 1
            self.overlaps += self.running > 1
        self.starts.append(time.monotonic())
        time.sleep(self.seconds)
        self.batches.append(list(items))
        with self.lock:
            self.running -= 1
        return [ValueError(f"bad {x}") if x == "bad" else (x, scale) for x in items]


def run_threads(calls) -> dict:
    """Start one thread per (key, function); wait; {key: result or exception}."""
    out = {}

    def target(key, fn):
        try:
            out[key] = fn()
        except Exception as e:
            out[key] = e

    threads = [threading.Thread(target=target, args=call) for call in calls]
    for t in threads:
        t.start()
        time.sleep(0.001)
    for t in threads:
        t.join(timeout=30)
    return out


def test_concurrent_calls_share_batches_and_never_overlap():
    runner, batcher = SlowRunner(), MicroBatcher(max_batch_size=8)
    calls = [(i, lambda i=i: batcher.submit(runner, i, client=i % 5, scale=2)) for i in range(40)]
    calls.append(("bad", lambda: batcher.submit(runner, "bad", client="x", scale=2)))
    out = run_threads(calls)
    assert all(out[i] == (i, 2) for i in range(40))  # every caller gets its own item's result
    assert isinstance(out["bad"], ValueError) and "bad bad" in str(out["bad"])  # only that caller
    assert runner.overlaps == 0 and len(runner.batches) < 41 and batcher.largest_batch > 1
    assert max(len(b) for b in runner.batches) <= 8


def test_options_that_differ_never_share_a_batch():
    runner, batcher = SlowRunner(), MicroBatcher()
    out = run_threads([(i, lambda i=i: batcher.submit(runner, i, client=i, scale=1 + i % 2)) for i in range(12)])
    assert all(out[i] == (i, 1 + i % 2) for i in range(12))
    assert all(len({x % 2 for x in batch}) == 1 for batch in runner.batches)


def test_one_clients_flood_cannot_starve_another_client():
    runner, batcher = SlowRunner(seconds=0.05), MicroBatcher(max_batch_size=4, max_pending_per_client=100)
    flood = [(f"a{i}", lambda i=i: batcher.submit(runner, f"a{i}", client="A", bucket="long")) for i in range(40)]
    came = []
    late = [("b", lambda: (came.append(time.monotonic()), batcher.submit(runner, "b", client="B", bucket="short"))[1])]
    out = run_threads(flood + late)
    assert out["b"] == ("b", 1)
    served_at = next(n for n, batch in enumerate(runner.batches) if "b" in batch)
    started_before = sum(came[0] < t for t in runner.starts[:served_at])
    assert started_before <= 1  # at most one batch of A's starts between B's arrival and B's batch
    assert served_at < len(runner.batches) - 2  # while A still had many calls waiting


def test_a_call_someone_waits_on_goes_before_background_work_of_any_client():
    """A click (inside one head's recording) made while the head tables of its own run and another client's wait
    runs straight after the call already running, and the background calls all still run, in their order."""
    runner, batcher = SlowRunner(seconds=0.05), MicroBatcher(max_batch_size=1)
    calls = [("running", lambda: batcher.submit(runner, "running", client="A"))]
    for client in ("A", "B"):
        calls += [
            (f"{client}{i}", lambda c=client, i=i: batcher.submit(runner, f"{c}{i}", client=c, background=True))
            for i in range(2)
        ]
    calls.append(("click", lambda: batcher.submit(runner, "click", client="A")))
    out = run_threads(calls)
    assert all(out[k] == (k, 1) for k in out)
    order = [batch[0] for batch in runner.batches]
    assert order[:2] == ["running", "click"]
    assert [k for k in order if k.startswith("A")] == ["A0", "A1"] and len(order) == 6


def long_runner(order: list, passes: int):
    """A runner whose item "long" is 5 passes of 30 ms (run_passes, `passes` at once), any other item one step."""

    def one_pass(step: int) -> None:
        order.append(f"long{step}")
        time.sleep(0.03)

    def run(items):
        for item in items:
            if item == "long":
                run_passes(one_pass, range(5), passes)
            else:
                order.append(item)
        return [(item, 1) for item in items]

    return run


def once_started(order: list, submit):
    """submit, called once the long call has made its first step (so the click comes while it runs)."""

    def call():
        while not order:
            time.sleep(0.001)
        return submit()

    return call


@pytest.mark.parametrize("passes", [1, 2])
def test_a_call_waiting_for_the_model_runs_at_a_background_calls_next_pause_point(passes):
    """A click that comes while a long background call of the same model runs does not wait for all of it: it runs
    at the next pause point (pipelines.attention.passes runs one before each pass, on the pool's threads too)."""
    order = []
    runner, batcher = long_runner(order, passes), MicroBatcher(max_batch_size=4)
    out = run_threads(
        [
            ("long", lambda: batcher.submit(runner, "long", client="A", background=True)),
            ("click", once_started(order, lambda: batcher.submit(runner, "click", client="B"))),
        ]
    )
    assert out == {"long": ("long", 1), "click": ("click", 1)}
    assert 0 < order.index("click") < order.index("long4") and len(order) == 6


def test_a_call_served_at_a_pause_point_has_grad_mode_on():
    """A pause point inside a no_grad block (the head table's passes, faithfulness' batches) still runs a waiting
    gradient explanation with gradients, as a worker thread would."""
    seen, started = [], []

    def runner(items):
        for item in items:
            if item == "long":
                started.append(item)
                with torch.no_grad():
                    for _ in range(5):
                        pause_point()
                        time.sleep(0.03)
            else:
                seen.append(torch.is_grad_enabled())
        return [(item, 1) for item in items]

    batcher = MicroBatcher()
    out = run_threads(
        [
            ("long", lambda: batcher.submit(runner, "long", client="A", background=True)),
            ("click", once_started(started, lambda: batcher.submit(runner, "click", client="B"))),
        ]
    )
    assert out == {"long": ("long", 1), "click": ("click", 1)} and seen == [True]


def test_pause_points_serve_nothing_outside_a_background_call():
    """A call someone waits on runs straight through its pause points; outside a batcher they do nothing."""
    order = []
    runner, batcher = long_runner(order, 1), MicroBatcher(max_batch_size=4)
    pause_point()
    out = run_threads(
        [
            ("long", lambda: batcher.submit(runner, "long", client="A")),
            ("click", once_started(order, lambda: batcher.submit(runner, "click", client="B"))),
        ]
    )
    assert out == {"long": ("long", 1), "click": ("click", 1)} and order[-1] == "click"


def test_a_client_with_too_many_waiting_calls_is_refused():
    runner, batcher = SlowRunner(seconds=0.2), MicroBatcher(max_pending_per_client=3)
    out = run_threads([(i, lambda i=i: batcher.submit(runner, i, client="A")) for i in range(8)])
    refused = [k for k, v in out.items() if isinstance(v, TooManyRequests)]
    assert refused and all(out[k] == (k, 1) for k in out if k not in refused)


def test_two_models_run_side_by_side_but_each_one_batch_at_a_time():
    """parallel=2: a review never waits behind a batch of translations, and no model runs two batches at once."""
    reviews, translations = SlowRunner(seconds=0.05), SlowRunner(seconds=0.3)
    batcher = MicroBatcher(max_batch_size=4, parallel=2)
    calls = [(f"t{i}", lambda i=i: batcher.submit(translations, f"t{i}", client=f"T{i}")) for i in range(8)]
    calls += [(f"r{i}", lambda i=i: batcher.submit(reviews, f"r{i}", client=f"R{i}")) for i in range(8)]
    start = time.monotonic()
    out = run_threads(calls)
    assert all(out[k] == (k, 1) for k in out)
    assert reviews.overlaps == 0 and translations.overlaps == 0
    # the reviews' batches all started while the first batch of translations was still running
    assert max(reviews.starts) - start < 0.3
    assert min(reviews.starts) < translations.starts[0] + 0.3


def test_one_worker_runs_every_model_in_turn():
    a, b = SlowRunner(seconds=0.05), SlowRunner(seconds=0.05)
    batcher = MicroBatcher(max_batch_size=2)
    calls = [(i, lambda i=i: batcher.submit(a if i % 2 else b, i, client=i)) for i in range(12)]
    out = run_threads(calls)
    assert all(out[i] == (i, 1) for i in range(12))
    spans = sorted((t, t + 0.05) for t in a.starts + b.starts)
    assert all(later[0] >= earlier[1] - 0.01 for earlier, later in zip(spans, spans[1:]))  # never overlapping


def test_a_bucket_can_hold_smaller_batches():
    """max_batch caps one bucket's batches (long reviews: 4) while the others fill up to max_batch_size."""
    runner, batcher = SlowRunner(seconds=0.05), MicroBatcher(max_batch_size=8)
    long = dict(bucket="long", max_batch=3)
    calls = [(f"l{i}", lambda i=i: batcher.submit(runner, f"l{i}", client=i, **long)) for i in range(9)]
    calls += [(f"s{i}", lambda i=i: batcher.submit(runner, f"s{i}", client=i, bucket="short")) for i in range(9)]
    out = run_threads(calls)
    assert all(out[k] == (k, 1) for k in out)
    longs = [b for b in runner.batches if b[0].startswith("l")]
    shorts = [b for b in runner.batches if b[0].startswith("s")]
    assert max(map(len, longs)) <= 3 and max(map(len, shorts)) > 3


def test_a_lane_runs_one_batch_at_a_time_whatever_its_runners_and_never_holds_up_another_lane():
    """A model's generations (a runner each, as ServedLM.stream's) share its lane: one at a time. A review in the
    sentiment lane runs beside them, and beside a translation: three lanes, three batches at once."""
    generations = [SlowRunner(seconds=0.3) for _ in range(3)]
    reviews, translations = SlowRunner(seconds=0.05), SlowRunner(seconds=0.3)
    running, most = [0], [0]
    lock = threading.Lock()

    def counted(runner):
        def run(items):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                return runner(items)
            finally:
                with lock:
                    running[0] -= 1

        return run

    lm_lane = object()
    batcher = MicroBatcher(max_batch_size=4, parallel=3)
    calls = [
        (f"g{i}", lambda i=i: batcher.submit(counted(generations[i]), f"g{i}", client=f"G{i}", lane=lm_lane))
        for i in range(3)
    ]
    calls += [("t", lambda: batcher.submit(counted(translations), "t", client="T"))]
    calls += [(f"r{i}", lambda i=i: batcher.submit(counted(reviews), f"r{i}", client=f"R{i}")) for i in range(3)]
    start = time.monotonic()
    out = run_threads(calls)
    assert all(out[k] == (k, 1) for k in out)
    spans = sorted((g.starts[0], g.starts[0] + 0.3) for g in generations)
    assert all(later[0] >= earlier[1] - 0.02 for earlier, later in zip(spans, spans[1:]))  # one at a time
    assert max(reviews.starts) - start < 0.3  # the reviews did not wait for a generation or the translation
    assert most[0] == 3


def test_each_lane_is_fair_between_its_own_clients():
    """A client served in one lane keeps its place in another: lane B serves its clients in their order of arrival,
    whatever lane A did meanwhile."""
    a, b = SlowRunner(seconds=0.02), SlowRunner(seconds=0.05)
    batcher = MicroBatcher(max_batch_size=1, parallel=2)
    calls = [(f"a{i}", lambda i=i: batcher.submit(a, f"a{i}", client="X")) for i in range(4)]
    calls += [(f"b{c}", lambda c=c: batcher.submit(b, f"b{c}", client=c)) for c in ("X", "Y", "Z")]
    out = run_threads(calls)
    assert all(out[k] == (k, 1) for k in out)
    assert [batch[0] for batch in b.batches] == ["bX", "bY", "bZ"]


def until(condition, seconds: float = 10.0) -> None:
    """Wait until condition() holds (a bounded wait: the test fails after `seconds`)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_the_hooks_a_paused_analysis_has_set_do_not_reach_a_call_served_at_its_pause():
    """A background analysis pauses inside its own hooks (one that zeroes the first block's input): the call served
    there runs the model as if no hook were set (its logits the hook-free ones, to the bit), and the analysis's pass
    after the pause still runs with its hook."""
    from transformer import CausalLM, CausalLMConfig

    torch.manual_seed(3)
    model = CausalLM(CausalLMConfig(vocab_size=40, d_model=32, n_heads=4, n_kv_heads=2, d_ff=48, n_layers=2,
                                    max_len=32)).eval()  # fmt: skip
    ids = torch.tensor([[5, 9, 3, 17, 22, 8]])
    zero = ("blocks.0.hook_resid_pre", lambda x, name: x * 0)
    with torch.no_grad():
        plain, zeroed = model(ids).logits, model.run_with_hooks(ids, hooks=[zero]).logits
    assert not torch.allclose(plain, zeroed)  # the hook matters
    batcher, inside, order = MicroBatcher(), threading.Event(), []

    def runner(items):
        out = []
        for item in items:
            if item == "analysis":
                with model.hook_registry.hooks([zero]):
                    inside.set()
                    until(lambda: batcher.waiting(runner) > 0)
                    pause_point()  # the call waiting runs here
                    out.append(model(ids).logits)
            else:
                out.append(model(ids).logits)
            order.append(item)
        return out

    def call():
        assert inside.wait(10)
        return batcher.submit(runner, "call", client="B")

    with torch.no_grad():
        out = run_threads([("analysis", lambda: batcher.submit(runner, "analysis", client="A", background=True)),
                           ("call", call)])  # fmt: skip
    assert order == ["call", "analysis"]  # served at the pause, inside the analysis's hooks
    torch.testing.assert_close(out["call"], plain, rtol=0, atol=0)
    torch.testing.assert_close(out["analysis"], zeroed, rtol=0, atol=0)
