"""A pipeline in a process of its own (pipelines.hosting.processes): same results as in this process, errors come back
as errors, a child that dies is replaced, and the served app uses it."""

import functools
import os
import types

import pytest
import torch

from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.processes import ModelProcess
from pipelines.hosting.serving import serve
from pipelines.tasks import TRANSLATION

GERMAN = ["Ein Hund läuft.", "Zwei Männer spielen Fußball auf einer großen grünen Wiese im Park.", ""]
REVIEWS = ["A fine film.", "Dull, slow and far too long; the actors looked bored in every scene.", ""]


@pytest.fixture
def process_of():
    started = []

    def start(pipe, **kwargs) -> ModelProcess:
        started.append(ModelProcess(pipe, **kwargs).start())
        return started[-1]

    yield start
    for process in started:
        process.close()


def assert_same_translations(got, expected):
    for a, b in zip(got, expected):
        if isinstance(b, Exception):
            assert type(a) is type(b) and str(a) == str(b)
            continue
        assert (a.translation, a.target_ids, a.steps, a.score) == (b.translation, b.target_ids, b.steps, b.score)
        assert a.source_tokens == b.source_tokens and a.out_of_domain == b.out_of_domain
        for name in ("encoder_attentions", "decoder_attentions", "cross_attentions"):
            for x, y in zip(getattr(a, name), getattr(b, name)):
                assert x.dtype == y.dtype == torch.float32 and torch.equal(x, y)


def test_a_translation_batch_in_a_process_equals_one_here(translation, process_of, one_thread):
    process = process_of(translation, name="translation")
    assert process.pid is not None and process.pid != os.getpid()
    expected = translation.explain_many(GERMAN, beam_size=3)
    assert_same_translations(process.call("explain_many", GERMAN, beam_size=3), expected)
    assert isinstance(expected[-1], ValueError)  # a text without tokens: an error in its place, as here


def test_sentiment_results_come_back_as_tensors(sentiment, process_of, one_thread):
    process = process_of(sentiment, name="sentiment")
    for a, b in zip(process.call("analyze_many", REVIEWS[:2]), sentiment.analyze_many(REVIEWS[:2])):
        assert (a.label, a.probabilities, a.tokens) == (b.label, b.probabilities, b.tokens)
        assert all(torch.equal(x, y) for x, y in zip(a.attentions, b.attentions))
        assert torch.equal(a.pool_weights, b.pool_weights)


def test_errors_in_the_child_are_raised_here(translation, process_of):
    process = process_of(translation)
    with pytest.raises(AttributeError, match="no_such_method"):
        process.call("no_such_method")
    assert process.call("detokenize", []) == ""  # and the child goes on


def test_the_child_uses_the_threads_it_was_given(process_of):
    assert process_of(functools.partial(torch.get_num_threads), threads=1).call("__call__") == 1


def test_a_child_that_dies_is_an_error_then_replaced(process_of):
    process = process_of(functools.partial(os._exit, 3), name="doomed")
    first = process.pid
    with pytest.raises(RuntimeError, match="doomed process ended unexpectedly"):
        process.call("__call__")  # the child exits in the middle of the call
    assert process.pid is None
    with pytest.raises(RuntimeError):
        process.call("__call__")  # a new child (which dies again)
    assert process.starts == 2 and first is not None


def test_close_ends_the_child(translation):
    process = ModelProcess(translation).start()
    pid = process.pid
    process.close()
    assert process.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_served_translation_runs_its_batches_in_the_process(translation, one_thread):
    batcher = MicroBatcher(4)
    served_translation = serve(TRANSLATION, translation, batcher, own_process=("translation",))
    try:
        got = served_translation("Ein Hund läuft.", beam_size=3)  # waits for the child, started meanwhile
        assert served_translation.process.pid is not None and not served_translation.process.here
        assert_same_translations([got], [translation("Ein Hund läuft.", beam_size=3)])
        assert batcher.batches_run == 1
        assert served_translation.n_heads == translation.n_heads  # everything else is the pipeline's own
    finally:
        served_translation.process.close()


def test_a_child_started_soon_serves_the_calls_and_one_that_cannot_start_leaves_them_here(translation, caplog):
    process = ModelProcess(translation, name="translation").start_soon()  # returns at once; the calls wait for it
    try:
        assert process.starts == 0  # not ready yet: the child imports torch first (seconds), the server goes on
        assert process.call("translate", GERMAN[:2]) == translation.translate(GERMAN[:2])
        assert process.pid is not None and process.pid != os.getpid() and process.starts == 1
    finally:
        process.close()
    unsendable = types.SimpleNamespace(run=lambda x: x + 1)  # a lambda: pickle cannot send it to a child
    process = ModelProcess(unsendable, name="unsendable").start_soon()
    try:
        assert process.call("run", 1) == 2 and process.here and process.pid is None  # run here, on the pipeline
        assert "could not start the unsendable model's process; it runs in this one" in caplog.text
    finally:
        process.close()


def test_the_app_serves_translation_from_its_own_process(sentiment_dir, translation_dir):
    from browser import serve
    from gradio_client import Client

    from app import build_demo
    from pipelines import SentimentPipeline, TranslationPipeline

    demo = build_demo(
        SentimentPipeline.from_pretrained(str(sentiment_dir)),
        TranslationPipeline.from_pretrained(str(translation_dir)),
        own_process=("translation",),
    )
    (process,) = demo.model_processes
    try:
        client = Client(serve(demo), verbose=False, analytics_enabled=False)
        english, status = client.predict("Ein Hund läuft.", "greedy", 2, api_name="/translate")
        assert isinstance(english, str) and "greedy decoding" in status and "⚠️" not in status
        label, _ = client.predict("A fine film.", api_name="/sentiment")  # sentiment still runs here
        assert label["label"] in ("positive", "negative")
        assert process.pid is not None and demo.batcher.batches_run == 2
    finally:
        demo.close()
        process.close()


def test_a_progress_callback_stays_here_and_hears_the_child(translation, one_thread):
    """A served translation explained in the model's process with a progress callback (a closure, which pickle
    cannot send): the child's calls of it come back and run here, and the explanation equals one made here. The
    app's translation explanation failed with "Can't pickle local object 'reporter.<locals>.report'"."""
    batcher = MicroBatcher(4)
    served_translation = serve(TRANSLATION, translation, batcher, own_process=("translation",))
    text = "Zwei Männer spielen Fußball auf einer großen grünen Wiese im Park."
    heard = []
    try:
        result = served_translation(text, beam_size=2)
        got = served_translation.explain(text, "gradient_x_input", result=result, progress=lambda *a: heard.append(a))
        expected = translation.explain(text, "gradient_x_input", result=result)
        torch.testing.assert_close(torch.as_tensor(got.scores), torch.as_tensor(expected.scores))
        steps = len(result.target_ids)
        assert heard and heard[-1] == (steps, steps) and [d for d, _ in heard] == sorted(d for d, _ in heard)
    finally:
        served_translation.process.close()


def test_a_failing_callback_does_not_fail_the_call(translation, process_of, caplog):
    process = process_of(translation, name="translation")

    def broken(done, total):
        raise RuntimeError("the page went away")

    got = process.call("explain", "Ein Hund läuft.", "gradient_x_input", progress=broken)
    assert got.method == "gradient_x_input" and "a callback of the translation process failed" in caplog.text
