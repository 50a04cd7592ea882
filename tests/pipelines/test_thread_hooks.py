"""Hooks on a model every thread shares keep to the thread that set them (pipelines.attention.thread_hooks): the server
runs a head table's passes on two threads and a waiting call of the same model at one's pause point
(pipelines.attention.passes, pipelines.hosting.microbatch), so a run on one thread must neither be recorded by, nor
have heads switched off by, another thread's hooks. Each test runs the other thread's pass to its end while the hooks
are set: no timing involved."""

import threading

import numpy as np
import pytest
import torch

from pipelines import SentimentPipeline
from pipelines.attention import heads, inside_head
from pipelines.models.hf_adapter import heads_off

REVIEW = "A wonderful film, but the ending was dull and far too long."


def on_another_thread(fn) -> dict:
    """fn() on a thread of its own, run to its end: {"value": its result} or {"error": what it raised}."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as e:  # noqa: BLE001  (handed to the test, which asserts there is none)
            out["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return out


def test_a_recording_keeps_to_its_own_thread(sentiment):
    """Seen in a browser test's log: an explanation by attention norm (a recorded run) failed with "('self', 1,
    'heads') ran twice in one recorded run": a head table's pass on the other thread had run through its hooks."""
    a = sentiment.adapter
    x = torch.tensor([sentiment.encode(REVIEW)[0]])  # (1, T)
    other = torch.tensor([sentiment.encode("Dull.")[0]])
    alone = inside_head.record(a, lambda: a.forward(x, need_weights=True))

    def with_a_pass_beside():
        beside = on_another_thread(lambda: a.forward(other, need_weights=True).logits)
        assert set(beside) == {"value"}, beside.get("error")
        return a.forward(x, need_weights=True)

    both = inside_head.record(a, with_a_pass_beside)
    for name in ("q", "k", "v", "heads", "weights"):
        torch.testing.assert_close(getattr(both.kinds["self"], name), getattr(alone.kinds["self"], name))


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    from tiny_hf_models import CLASSIFIERS

    return SentimentPipeline.from_pretrained(str(CLASSIFIERS["bert"](tmp_path_factory.mktemp("hf") / "bert")))


def test_heads_switched_off_on_one_thread_stay_on_in_another(hf_classifier):
    """A transformers model switches heads off by hooks on its output projections: a head-table pass with heads off
    on one thread would have switched them off in the pass beside it too."""
    pipe = hf_classifier
    a = pipe.adapter
    x = torch.tensor([pipe.encode(REVIEW)[0]])  # (1, T)
    masks = heads.mask_tensors({("self", 0, 1): 0.0, ("self", 1, 2): 0.0}, pipe.head_layers, pipe.n_heads, a.device)
    with torch.no_grad():
        intact, off = a.forward(x).logits, a.forward(x, head_mask=masks).logits
        assert not torch.allclose(intact, off)  # the heads matter
        with heads_off(a.projections, masks, a.n_heads):
            beside = on_another_thread(lambda: a.forward(x).logits)
            here = a.model(input_ids=x, attention_mask=torch.ones_like(x)).logits
    torch.testing.assert_close(beside["value"], intact)
    torch.testing.assert_close(here, off)  # and on the thread that set them they are off


def test_a_transformers_head_table_is_the_same_in_passes_at_once(hf_classifier, monkeypatch):
    """The head table of a transformers model in several batches of heads: two passes at once (the app: one torch
    thread a model, 2 cores) give the effects one pass at a time gives. Each pass switches its own heads off."""
    pipe = hf_classifier
    ids = pipe.encode(REVIEW)[0]
    label = 1  # any label: the change of its probability with each head off
    monkeypatch.setattr(heads, "head_rows", lambda size, tokens, at_once: 2)  # a batch of 2 heads a pass
    monkeypatch.setattr(heads, "at_once", lambda device: 1)
    _, one_at_a_time = heads.classifier_effects(pipe, ids, label)
    monkeypatch.setattr(heads, "at_once", lambda device: 2)
    _, two_at_once = heads.classifier_effects(pipe, ids, label)
    assert len(one_at_a_time) == pipe.n_layers * pipe.n_heads > 4  # several batches
    assert two_at_once.keys() == one_at_a_time.keys()
    np.testing.assert_allclose([two_at_once[k] for k in one_at_a_time], list(one_at_a_time.values()), atol=1e-6)


def test_calls_beside_a_head_table_in_the_server_give_their_solo_results(sentiment, monkeypatch):
    """As the app serves the sentiment model (in the server's process, one batcher, two models at once): a head table
    (a background call, its passes two at a time) with explanations and recorded runs arriving while it runs. The
    waiting calls run at its pause points, beside its other pass; each result must equal the call made alone. On
    the shipped model before 24acced, one attention-norm explanation a round failed ("ran twice")."""
    from pipelines.hosting.microbatch import MicroBatcher
    from pipelines.hosting.serving import serve
    from pipelines.tasks import SENTIMENT

    monkeypatch.setattr(heads, "head_rows", lambda size, tokens, at_once: 1)  # a pass a head: many pause points
    monkeypatch.setattr(heads, "at_once", lambda device: 2)
    texts = ["A wonderful film, but the ending was dull.", "Dull.", "Not bad at all, I actually enjoyed it."]
    calls = [("head_table", (REVIEW,), {})]
    calls += [("explain", (t,), {"method": m}) for t in texts for m in ("attention_norm", "gradient_x_input")]
    calls += [("internals", (t,), {}) for t in texts]
    alone = [getattr(sentiment, name)(*args, **kw) for name, args, kw in calls]
    pipe = serve(SENTIMENT, sentiment, MicroBatcher(4, parallel=2))
    got: list = [None] * len(calls)

    def call(i):
        name, args, kw = calls[i]
        got[i] = on_another_thread(lambda: getattr(pipe, name)(*args, **kw))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(calls))]
    for t in threads:  # the head table first, then the rest as it runs
        t.start()
    for t in threads:
        t.join()
    assert [sorted(g) for g in got] == [["value"]] * len(calls), [g.get("error") for g in got]
    assert got[0]["value"] == alone[0]
    for (name, _, _), g, a in zip(calls[1:], got[1:], alone[1:]):
        if name == "explain":
            np.testing.assert_allclose(g["value"].scores, a.scores, rtol=1e-5, atol=1e-7)
        else:
            torch.testing.assert_close(g["value"].kinds["self"].heads, a.kinds["self"].heads)
