"""Heads over a data set: the table over a set is the mean (and standard deviation) of the per-input tables, with
progress, Stop and n; the induction set's induction score is the standard one; the bundled sets hold 100 lines."""

import numpy as np
import pytest

from pipelines.attention import heads
from pipelines.attention.head_roles import induction_scores
from pipelines.attention.over_set import SETS, InductionSet, bundled_set

REVIEWS = ["A fine film, not bad at all.", "Dull and far too long.", "The acting was great."]
GERMAN = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]


def equals_the_mean(over, tables: list[list[dict]]) -> None:
    assert over.n == len(tables) and len(over.rows) == len(tables[0])
    for i, row in enumerate(over.rows):
        for c in over.columns:
            values = [t[i][c] for t in tables if t[i][c] is not None]
            if not values:
                assert row[f"{c}_mean"] is None and row[f"{c}_n"] == 0
                continue
            assert row[f"{c}_mean"] == pytest.approx(np.mean(values), abs=1e-9)
            assert row[f"{c}_std"] == pytest.approx(np.std(values), abs=1e-9)
            assert row[f"{c}_n"] == len(values)


def test_the_classifiers_table_over_a_set_is_the_mean_of_its_tables(sentiment):
    seen = []
    over = sentiment.head_table_over(REVIEWS + [""], progress=lambda i, n: seen.append((i, n)))
    assert seen == [(1, 4), (2, 4), (3, 4), (4, 4)] and over.skipped == 1 and over.asked == 4
    assert {"effect", "entropy", "previous", "itself"} <= set(over.columns)
    equals_the_mean(over, [sentiment.head_table(t) for t in REVIEWS])


def test_stop_ends_it_between_inputs(sentiment):
    done = []
    over = sentiment.head_table_over(REVIEWS, progress=lambda i, n: done.append(i), stop=lambda: len(done) >= 2)
    assert over.stopped and over.n == 2 and done == [1, 2]
    equals_the_mean(over, [sentiment.head_table(t) for t in REVIEWS[:2]])


def test_the_translators_table_over_a_set_is_the_mean_of_its_tables(translation):
    over = translation.head_table_over(GERMAN)
    tables = [heads.translation_head_table(translation, t, beam_size=1, agreement=False) for t in GERMAN]
    equals_the_mean(over, tables)
    assert {r["kind"] for r in over.rows} == {"encoder", "decoder", "cross"}


def test_the_language_models_table_over_prompts_and_the_induction_set(lm):
    over = lm.head_table_over(REVIEWS[:2])
    assert over.n == 2 and over.row("causal", 1, 3)["effect_n"] == 2
    s = InductionSet(n=3, length=10, seed=0)
    induction = lm.head_table_over(s)
    assert induction.n == 3 and induction.name == "induction" and "effect" not in induction.columns
    standard = induction_scores(lm.model, n=10, batch=3, seed=0).numpy()  # (L, H): the same sequences
    got = np.array([[induction.row("causal", layer, h)["induction_mean"] for h in range(4)] for layer in range(2)])
    np.testing.assert_allclose(got, standard, atol=1e-6)


def test_the_bundled_sets_hold_100_lines_each(sentiment):
    for name in SETS:
        assert len(bundled_set(name)) == 100
    with pytest.raises(ValueError, match="no bundled set"):
        bundled_set("nope")


def test_without_effects_the_attention_columns_are_the_same(sentiment, lm):
    for pipe, texts in ((sentiment, REVIEWS), (lm, REVIEWS[:2])):
        full, quick = pipe.head_table_over(texts), pipe.head_table_over(texts, effects=False)
        assert "effect" in full.columns and set(quick.columns) == set(full.columns) - {"effect"}
        for a, b in zip(full.rows, quick.rows):
            assert all(a[f"{c}_mean"] == b[f"{c}_mean"] for c in quick.columns)
