"""Limits from the model: long-review batches, head-effect rows and the exports' cap follow from one
memory budget and the models' layers x heads x tokens."""

from pipelines.hosting.budget import (
    BUDGET,
    Budget,
    ModelSize,
    export_bytes,
    head_rows,
    review_batch,
)

SMALL = ModelSize(layers=2, heads=4, tokens=512)  # the from-scratch classifier
LARGE = ModelSize(layers=6, heads=12, tokens=512)  # MiniLM's shape at 512 tokens
TRANSLATOR = ModelSize(layers=9, heads=4, tokens=255)  # 3 encoder, 3 decoder, 3 cross-attention layers


def test_a_run_keeps_the_float16_maps_of_each_tab():
    assert round(SMALL.maps_bytes() / 2**20, 1) == 4.0  # the "about 4 MB a session"
    assert round(LARGE.maps_bytes() / 2**20) == 36  # "about 38 MB" (in 10^6 bytes: 37.7)


def test_batches_and_head_rows_shrink_with_the_model_and_the_input():
    assert review_batch(LARGE) < review_batch(SMALL) and review_batch(ModelSize(48, 64, 4096)) == 1
    assert review_batch(SMALL) * 2 * SMALL.maps_bytes(4) <= BUDGET.bytes(BUDGET.batch)
    assert head_rows(LARGE, 512) < head_rows(SMALL, 512) < head_rows(SMALL, 64)
    # a head-effect pass keeps no maps: a row holds one layer's float32 scores and weights at a time
    assert LARGE.pass_bytes(512) == 2 * 12 * 512 * 512 * 4
    assert head_rows(LARGE, 512) * LARGE.pass_bytes(512) <= BUDGET.bytes(BUDGET.heads)
    # passes running at once share the budget
    assert 2 * head_rows(LARGE, 512, at_once=2) * LARGE.pass_bytes(512) <= BUDGET.bytes(BUDGET.heads)
    assert head_rows(LARGE, 512, at_once=2) < head_rows(LARGE, 512)


def test_the_exports_cap_holds_two_of_the_largest_export():
    assert export_bytes([]) == BUDGET.bytes(BUDGET.exports) == 256 * 2**20
    huge = ModelSize(24, 16, 1024)
    assert export_bytes([SMALL, huge]) == 2 * huge.maps_bytes(10)


def test_a_smaller_budget_gives_smaller_limits():
    tight = Budget(total_mb=64)
    assert review_batch(SMALL, tight) < review_batch(SMALL) and head_rows(SMALL, 512, tight) < head_rows(SMALL, 512)


def test_model_size_of_the_tiny_pipelines(sentiment, translation):
    s, t = ModelSize.of(sentiment), ModelSize.of(translation)
    assert (s.layers, s.heads, s.tokens) == (sentiment.n_layers, sentiment.n_heads, sentiment.max_len)
    assert t.layers == sum(translation.head_layers.values()) and t.tokens == translation.max_src
