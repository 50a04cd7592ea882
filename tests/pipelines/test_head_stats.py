"""Head statistics on attention maps built by hand, where each number is known in advance."""

import math

import numpy as np
import pytest

from pipelines.attention.head_stats import (
    agreement,
    entropy,
    head_statistics,
    is_punctuation,
    mean_distance,
    punctuation_keys,
    rank,
    spearman,
    stats_rows,
)


def previous_token_head(T: int) -> np.ndarray:
    """(T, T): every query on the token before it (the first on itself)."""
    a = np.zeros((T, T))
    a[0, 0] = 1.0
    a[np.arange(1, T), np.arange(T - 1)] = 1.0
    return a


def test_entropy_is_zero_for_one_key_and_log_n_for_uniform():
    T = 5
    one_hot = np.eye(T)[None]
    uniform = np.full((1, T, T), 1.0 / T)
    assert entropy(one_hot)[0] == pytest.approx(0.0, abs=1e-9)
    assert entropy(uniform)[0] == pytest.approx(math.log(T))


def test_previous_token_head_statistics():
    T = 6
    attn = np.stack([previous_token_head(T), np.eye(T)])  # (2, T, T): previous-token head, self head
    punct = np.array([False, True, False, False, True, False])
    s = head_statistics(attn, same_sequence=True, end_key=T - 1, punct=punct)
    assert s["previous"].tolist() == [1.0, 0.0]
    assert s["itself"].tolist() == pytest.approx([1 / T, 1.0])
    assert s["distance"].tolist() == pytest.approx([(T - 1) / T, 0.0])
    assert s["end"].tolist() == pytest.approx([0.0, 1 / T])  # only query T-1 of the self head looks at the end
    # punctuation keys 1 and 4: the previous-token head reaches them from queries 2 and 5
    assert s["punctuation"].tolist() == pytest.approx([2 / T, 2 / T])


def test_cross_attention_distance_is_from_the_diagonal():
    Tq, Tk = 3, 5
    diagonal = np.zeros((1, Tq, Tk))
    diagonal[0, [0, 1, 2], [0, 2, 4]] = 1.0  # a monotone alignment over sequences of different length
    on_first = np.zeros((1, Tq, Tk))
    on_first[0, :, 0] = 1.0
    assert mean_distance(diagonal, same_sequence=False)[0] == pytest.approx(0.0)
    assert mean_distance(on_first, same_sequence=False)[0] == pytest.approx((0 + 2 + 4) / 3)
    s = head_statistics(on_first, same_sequence=False, end_key=None, punct=np.zeros(Tk, bool))
    assert s["previous"] is None and s["itself"] is None and s["end"] is None


def test_stats_rows_name_every_head_from_zero():
    maps = [np.stack([np.eye(3)] * 2), np.stack([previous_token_head(3)] * 2)]
    rows = stats_rows("encoder", maps, end_key=2, punct=np.zeros(3, bool))
    assert [(r["kind"], r["layer"], r["head"]) for r in rows] == [
        ("encoder", 0, 0),
        ("encoder", 0, 1),
        ("encoder", 1, 0),
        ("encoder", 1, 1),
    ]
    assert rows[2]["previous"] == 1.0 and rows[0]["itself"] == 1.0


def test_punctuation_tokens():
    assert is_punctuation(".") and is_punctuation(" ,") and is_punctuation("...") and is_punctuation("«")
    assert not is_punctuation("a.") and not is_punctuation("") and not is_punctuation("</s>")
    assert punctuation_keys(["Ein", "Hund", "."]).tolist() == [False, False, True]


def test_one_punctuation_for_the_views_and_the_head_table():
    """A symbol ("$") is hidden as punctuation in the views and counted as punctuation in the head table alike."""
    from pipelines.attention import attention_views, head_stats

    tokens = ["It", "cost", "$", "5", "+", "tax", "."]
    assert attention_views.hidden_positions(tokens).tolist() == head_stats.punctuation_keys(tokens).tolist()
    assert head_stats.punctuation_keys(tokens).tolist() == [False, False, True, False, True, False, True]


def test_spearman_with_ties():
    assert rank(np.array([10.0, 30.0, 20.0, 20.0])).tolist() == [0.0, 3.0, 1.5, 1.5]
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([5.0, 7.0, 100.0])) == pytest.approx(1.0)
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    assert spearman(np.array([1.0, 1.0]), np.array([1.0, 2.0])) is None


def test_agreement_of_heads_with_an_attribution():
    rng = np.random.default_rng(0)
    attribution = rng.normal(size=(4, 6))  # (Tt, Ts), signed
    aligned = np.abs(attribution) / np.abs(attribution).sum(-1, keepdims=True)
    reversed_ = 1.0 / (np.abs(attribution) + 0.1)
    flat = np.full((4, 6), 1 / 6)
    out = agreement(np.stack([aligned, reversed_, flat]), attribution)
    assert out[0] == pytest.approx(1.0) and out[1] == pytest.approx(-1.0) and np.isnan(out[2])
