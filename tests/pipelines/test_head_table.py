"""Head masks through the pipelines, and the head table's numbers, on the tiny models."""

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from pipelines.attention.heads import translation_head_table

REVIEW = "A warm, funny film. The acting is great, but the plot drags!"
GERMAN = "Ein Mann fährt Fahrrad."
REQUIRED = {"kind", "layer", "head", "entropy", "distance", "effect"}


def test_sentiment_head_table_effect_is_the_pipeline_with_that_head_off(sentiment):
    rows = sentiment.head_table(REVIEW)
    assert [(r["kind"], r["layer"], r["head"]) for r in rows] == [("self", la, h) for la in range(2) for h in range(4)]
    assert all(REQUIRED <= set(r) for r in rows)
    intact = sentiment(REVIEW)
    for r in rows:
        off = sentiment(REVIEW, head_mask={("self", r["layer"], r["head"]): 0.0})
        expected = off.probabilities[intact.label] - intact.probabilities[intact.label]
        assert r["effect"] == pytest.approx(expected, abs=1e-5)
    assert any(abs(r["effect"]) > 1e-4 for r in rows)  # the heads matter on this model
    assert all(0.0 <= r["previous"] <= 1.0 and 0.0 <= r["punctuation"] <= 1.0 for r in rows)


def test_head_effects_measured_passes_at_once_are_the_same(sentiment, translation, monkeypatch):
    import pipelines.attention.heads as heads

    ids = [t.id for t in sentiment(REVIEW).tokens]
    monkeypatch.setattr(heads, "at_once", lambda device: 1)
    one = heads.classifier_effects(sentiment, ids, 1)
    t_one = translation.head_table(GERMAN, beam_size=1)
    monkeypatch.setattr(heads, "at_once", lambda device: 3)
    monkeypatch.setattr(heads, "head_rows", lambda size, tokens, at_once=1: 1)  # a batch a head: many passes
    intact, effects = heads.classifier_effects(sentiment, ids, 1)
    assert intact == one[0] and effects.keys() == one[1].keys()
    assert all(effects[k] == pytest.approx(one[1][k], abs=1e-6) for k in effects)
    assert [r["effect"] for r in translation.head_table(GERMAN, beam_size=1)] == pytest.approx(
        [r["effect"] for r in t_one],
        abs=1e-4,  # log-probabilities summed over the sentence, in other batches
    )


def test_head_batches_are_even_and_keep_to_one_layer(sentiment, monkeypatch):
    import pipelines.attention.heads as heads

    keys = heads.head_keys({"self": 2}, 5)
    monkeypatch.setattr(heads, "head_rows", lambda size, tokens, at_once=1: 3)
    by_layer = heads._chunks(sentiment.adapter, keys, 10, by_layer=True)
    assert [len(c) for c in by_layer] == [2, 3, 2, 3] and all(len({k[1] for k in c}) == 1 for c in by_layer)
    assert [len(c) for c in heads._chunks(sentiment.adapter, keys, 10)] == [2, 3, 2, 3]
    assert sum(heads._chunks(sentiment.adapter, keys, 10), []) == keys


def test_translation_head_table_effect_is_the_pipeline_with_that_head_off(translation):
    rows = translation.head_table(GERMAN, beam_size=1)
    kinds = [r["kind"] for r in rows]
    assert kinds == ["encoder"] * 8 + ["decoder"] * 8 + ["cross"] * 8
    assert all(REQUIRED <= set(r) for r in rows)
    assert all(r["previous"] is None for r in rows if r["kind"] == "cross")
    intact = translation(GERMAN, beam_size=1)
    base = translation.score(GERMAN, intact.target_ids)
    assert base == pytest.approx(intact.score, abs=1e-4)  # teacher forcing scores what greedy decoding produced
    for r in rows:
        key = (r["kind"], r["layer"], r["head"])
        assert r["effect"] == pytest.approx(translation.score(GERMAN, intact.target_ids, {key: 0.0}) - base, abs=1e-4)
        if r["head"] == 1 and r["layer"] == 1:  # decoding again with the head off (one head per kind: speed)
            off = translation(GERMAN, beam_size=1, head_mask={key: 0.0})
            if off.target_ids == intact.target_ids:  # same output: the effect is the change of its score
                assert r["effect"] == pytest.approx(off.score - intact.score, abs=1e-4)
    assert any(abs(r["effect"]) > 1e-3 for r in rows)


def test_a_mask_of_ones_gives_the_intact_result(sentiment, translation):
    ones = {("self", layer, head): 1.0 for layer in range(2) for head in range(4)}
    assert sentiment(REVIEW, head_mask=ones).probabilities == sentiment(REVIEW).probabilities
    t_ones = {(kind, 1, 2): 1.0 for kind in ("encoder", "decoder", "cross")}
    a, b = translation(GERMAN, beam_size=1, head_mask=t_ones), translation(GERMAN, beam_size=1)
    assert a.translation == b.translation and a.score == b.score


def test_bad_heads_are_refused_with_a_message(sentiment, translation):
    with pytest.raises(ValueError, match="unknown kind"):
        sentiment(REVIEW, head_mask={("cross", 0, 0): 0.0})
    with pytest.raises(ValueError, match="no head"):
        sentiment(REVIEW, head_mask={("self", 2, 0): 0.0})
    with pytest.raises(ValueError, match="no head"):
        translation(GERMAN, head_mask={("decoder", 0, 4): 0.0})
    with pytest.raises(ValueError, match=r"\(kind, layer, head\)"):
        translation(GERMAN, head_mask={"cross": 0.0})


def test_masks_are_per_call_even_under_concurrent_requests(sentiment, translation):
    off_s = {("self", layer, head): 0.0 for layer in range(2) for head in range(3)}
    off_t = {("cross", layer, head): 0.0 for layer in range(2) for head in range(4)}
    expected_s = {None: sentiment(REVIEW).probabilities, "off": sentiment(REVIEW, head_mask=off_s).probabilities}
    translate = lambda mask: translation(GERMAN, beam_size=1, head_mask=mask).score  # noqa: E731
    expected_t = {None: translate(None), "off": translate(off_t)}
    assert expected_s[None] != expected_s["off"] and expected_t[None] != expected_t["off"]

    def run(i: int):
        which = "off" if i % 2 else None
        if i % 4 < 2:
            return "s", which, sentiment(REVIEW, head_mask=off_s if which else None).probabilities
        return "t", which, translate(off_t if which else None)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, range(12)))
    for task, which, value in results:
        expected = (expected_s if task == "s" else expected_t)[which]
        assert value == pytest.approx(expected, abs=1e-6)
    assert sentiment(REVIEW).probabilities == expected_s[None]  # nothing stayed switched off


def test_batched_prediction_and_translation_take_the_same_mask(sentiment, translation):
    off = {("self", 1, 0): 0.0, ("self", 1, 1): 0.0}
    batched = sentiment.predict([REVIEW, "Dull."], head_mask=off)[0]
    assert batched["positive"] == pytest.approx(sentiment(REVIEW, head_mask=off).probabilities["positive"], abs=1e-5)
    off_t = {("cross", 0, h): 0.0 for h in range(4)}
    batched = translation.translate([GERMAN], beam_size=1, head_mask=off_t)[0]
    assert batched == translation(GERMAN, beam_size=1, head_mask=off_t).translation


class WithExplain:
    """The translation pipeline plus an `explain` whose attribution is cross-attention layer 1, head 2."""

    def __init__(self, pipe):
        self.pipe = pipe

    def __call__(self, *args, **kwargs):
        return self.pipe(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.pipe, name)

    def explain(self, text, method=None, result=None):
        result = result or self.pipe(text)
        return SimpleNamespace(scores=-result.cross_attentions[0][1].numpy())  # signed: agreement uses |score|


def test_cross_attention_agreement_with_an_attribution(translation):
    rows = translation_head_table(WithExplain(translation), GERMAN, beam_size=1)
    agreement = {(r["kind"], r["layer"], r["head"]): r["agreement"] for r in rows}
    assert agreement[("cross", 0, 1)] == pytest.approx(1.0)
    assert all(-1.0 <= agreement[("cross", la, h)] <= 1.0 for la in range(2) for h in range(4))
    assert all(v is None for k, v in agreement.items() if k[0] != "cross")
    # The pipeline's own explain (gradient attribution) gives every cross head a rank agreement, others None.
    real = translation_head_table(translation, GERMAN, beam_size=1)
    assert all((-1.0 <= r["agreement"] <= 1.0) if r["kind"] == "cross" else r["agreement"] is None for r in real)
    # ... gradient x input's, whichever view the page shows (the page's help says so): the same numbers as its own
    gradients = translation.explain(GERMAN, "gradient_x_input", result=translation(GERMAN, beam_size=1))
    for r in (r for r in real if r["kind"] == "cross"):
        assert r["agreement"] == pytest.approx(float(gradients.head_agreement[r["layer"], r["head"]]), abs=1e-6)
    assert all(
        r["agreement"] is None for r in translation_head_table(translation, GERMAN, beam_size=1, agreement=False)
    )
