"""Computed once: identical calls to a served model come from a bounded cache (pipelines.hosting.cache), equal to
a fresh run; other options, an unseeded sampled generation or a head mask always run the model."""

import pytest
import torch

from pipelines.hosting.cache import MISSING, OBJECT_BYTES, ResultCache, result_bytes
from pipelines.hosting.microbatch import MicroBatcher
from pipelines.hosting.serving import serve
from pipelines.language_model import Decoding
from pipelines.tasks import LM, SENTIMENT, TRANSLATION

REVIEW = "Not bad at all, I actually enjoyed it."


def served(task, pipe, budget=64 * 2**20):
    batcher = MicroBatcher(4)
    return serve(task, pipe, batcher, cache=ResultCache(budget)), batcher


def assert_same_tensors(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=0)


def test_a_cached_review_equals_a_fresh_one_and_runs_once(sentiment):
    pipe, batcher = served(SENTIMENT, sentiment)
    first, again = pipe(REVIEW), pipe(REVIEW)
    assert again is first and batcher.batches_run == 1 and pipe.cache.hits == 1
    fresh = sentiment(REVIEW)
    assert again.label == fresh.label and again.tokens == fresh.tokens
    assert again.probabilities == pytest.approx(fresh.probabilities, abs=1e-5)
    assert_same_tensors(again.attentions, fresh.attentions)
    assert_same_tensors(again.value_norms, fresh.value_norms)


def test_other_options_or_a_head_mask_are_not_served_from_the_cache(sentiment):
    pipe, batcher = served(SENTIMENT, sentiment)
    with_maps = pipe(REVIEW)
    without = pipe(REVIEW, need_weights=False)
    assert without is not with_maps and without.attentions == [] and batcher.batches_run == 2
    masked = pipe(REVIEW, head_mask={("self", 0, 0): 0.0})
    pipe(REVIEW, head_mask={("self", 0, 0): 0.0})
    assert masked is not with_maps and batcher.batches_run == 4  # what-if runs always run
    assert pipe(REVIEW + " ") is not with_maps  # another input


def test_a_cached_translation_equals_a_fresh_one_and_a_beam_size_is_an_option(translation):
    pipe, batcher = served(TRANSLATION, translation)
    first = pipe("Ein Hund läuft.", beam_size=2)
    assert pipe("Ein Hund läuft.", beam_size=2) is first and batcher.batches_run == 1
    fresh = translation("Ein Hund läuft.", beam_size=2)
    assert first.translation == fresh.translation and first.target_ids == fresh.target_ids
    assert_same_tensors(first.cross_attentions, fresh.cross_attentions)
    assert pipe("Ein Hund läuft.", beam_size=3) is not first and batcher.batches_run == 2


def test_an_api_translation_computes_no_maps_and_decodes_the_same(translation):
    pipe, _ = served(TRANSLATION, translation)
    light, full = pipe("Ein Hund läuft.", need_weights=False), pipe("Ein Hund läuft.")
    assert light is not full and light.translation == full.translation and light.target_ids == full.target_ids
    assert light.cross_attentions == [] and light.value_norms == {} and full.cross_attentions
    assert [s.token for s in light.steps] == [s.token for s in full.steps] and light.steps[0].top_k == []


def test_a_result_the_cache_holds_stands_for_itself_in_a_key(translation):
    """The page explains the result it holds (result=view.result): the same object, cached, keys the call."""
    pipe, batcher = served(TRANSLATION, translation)
    result = pipe("Ein Hund läuft.")
    explained = pipe.explain("Ein Hund läuft.", "attention", result=result)
    assert pipe.explain("Ein Hund läuft.", "attention", result=result) is explained and batcher.batches_run == 2
    copy = translation("Ein Hund läuft.")  # an equal result the cache does not hold: no key, it runs
    assert pipe.explain("Ein Hund läuft.", "attention", result=copy) is not explained


def test_greedy_and_seeded_generations_are_cached_an_unseeded_sampled_one_never(lm):
    pipe, batcher = served(LM, lm)
    greedy = Decoding(max_new_tokens=4)
    streamed = list(pipe.stream("The cat", greedy))
    ran = batcher.batches_run  # 4 decoding steps and the maps' pass
    assert streamed[-1].complete and ran == 5 and pipe.decoding.steps_run == 4
    again = list(pipe.stream("The cat", greedy))
    assert again == [streamed[-1]] and pipe.generate("The cat", greedy) is streamed[-1] and batcher.batches_run == ran
    seeded = Decoding(max_new_tokens=4, temperature=1.0, seed=7)
    first = pipe.generate("The cat", seeded)
    ran = batcher.batches_run
    assert pipe.generate("The cat", seeded) is first and batcher.batches_run == ran
    assert first.generated_ids == lm.generate("The cat", seeded).generated_ids  # a fresh run: the same text
    unseeded = Decoding(max_new_tokens=4, temperature=1.0)
    for generation in (
        lambda: pipe.generate("The cat", unseeded),
        lambda: list(pipe.stream("The cat", unseeded)),
        lambda: pipe("The cat", 4, 1.0),  # __call__'s temperature, no seed
    ):
        generation()
        assert batcher.batches_run > ran
        ran = batcher.batches_run
    assert len(pipe.cache) == 2


def test_a_stopped_stream_is_not_cached(lm):
    pipe, batcher = served(LM, lm)
    stream = pipe.stream("The cat", Decoding(max_new_tokens=8))
    next(stream)
    stream.close()
    assert len(pipe.cache) == 0


def test_the_memory_bound_holds_inserting_beyond_it_evicts_the_least_recently_used():
    one = torch.zeros(1000)  # 4,000 bytes
    size = result_bytes([one])
    assert 4000 < size <= 4000 + 2 * OBJECT_BYTES
    cache = ResultCache(3 * size)
    for key in "abc":
        assert cache.put(key, [torch.zeros(1000)])
    cache.get("a")  # now the most recently used
    cache.put("d", [torch.zeros(1000)])
    assert cache.get("b") is not cache.get("a") and "b" not in cache._entries and len(cache) == 3
    assert cache.bytes <= cache.budget
    assert not cache.put("huge", [torch.zeros(4000)]) and len(cache) == 3  # larger than the budget: not kept
    for i in range(50):
        cache.put(i, [torch.zeros(1000)])
        assert cache.bytes <= cache.budget and len(cache) <= 3


def test_result_bytes_counts_a_results_tensors(sentiment):
    result = sentiment(REVIEW)
    tensors = sum(a.nelement() * a.element_size() for a in [*result.attentions, *result.value_norms])
    assert tensors < result_bytes(result) < tensors + 100_000


def test_a_call_identical_to_one_being_computed_waits_for_its_result():
    import threading

    cache, started, release, runs = ResultCache(2**20), threading.Event(), threading.Event(), []

    def compute():
        runs.append(1)
        started.set()
        release.wait(10)
        return [torch.ones(3)]

    out = {}
    first = threading.Thread(target=lambda: out.setdefault("first", cache.computed("k", compute)))
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=lambda: out.setdefault("second", cache.computed("k", compute)))
    second.start()
    while cache.joined == 0 and second.is_alive():
        threading.Event().wait(0.01)
    release.set()
    first.join(10), second.join(10)
    assert len(runs) == 1 and out["second"] is out["first"] and cache.joined == 1

    def fails():
        raise ValueError("the model failed")

    with pytest.raises(ValueError, match="failed"):
        cache.computed("bad", fails)
    assert cache.get("bad") is MISSING and cache.computed("bad", lambda: [1]) == [1]  # an error is not kept
