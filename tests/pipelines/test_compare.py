"""Comparing two inputs: token alignment, the aligned attention diff, and the comparison on the tiny models."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.compare import align_tokens, aligned_diff, compare_sentiment, compare_translation, shared_share
from viz.compare import input_compare as compare_view


def kinds(alignment) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in alignment]


def test_identical_sequences_share_every_token():
    al = align_tokens([5, 6, 7], [5, 6, 7], ["a", "b", "c"], ["a", "b", "c"])
    assert [(t.a_index, t.b_index) for t in al] == [(0, 0), (1, 1), (2, 2)] and shared_share(al) == 1.0


def test_inserted_deleted_and_replaced_tokens_are_marked():
    a = "the acting was good .".split()
    b = "the acting was not good at all .".split()
    assert kinds(align_tokens(a, b)) == [
        ("shared", "the"), ("shared", "acting"), ("shared", "was"), ("inserted", "not"), ("shared", "good"),
        ("inserted", "at"), ("inserted", "all"), ("shared", "."),
    ]  # fmt: skip
    al = align_tokens("a funny film".split(), "a dull film".split())
    assert kinds(al) == [("shared", "a"), ("deleted", "funny"), ("inserted", "dull"), ("shared", "film")]
    assert (al[1].a_index, al[1].b_index, al[2].a_index, al[2].b_index) == (1, None, None, 1)


def test_repeated_tokens_align_in_order():
    """Frequent tokens ('the', ',') must not be dropped as junk: difflib's autojunk is off."""
    a = ["the"] * 250 + ["end"]
    b = ["the"] * 250 + ["finish"]
    al = align_tokens(a, b)
    assert sum(t.kind == "shared" for t in al) == 250
    assert kinds(al)[-2:] == [("deleted", "end"), ("inserted", "finish")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=30), st.lists(st.integers(0, 5), max_size=30))
def test_alignment_covers_both_sequences_in_order(a, b):
    al = align_tokens(a, b)
    assert [t.a_index for t in al if t.a_index is not None] == list(range(len(a)))
    assert [t.b_index for t in al if t.b_index is not None] == list(range(len(b)))
    assert all(a[t.a_index] == b[t.b_index] for t in al if t.kind == "shared")


def test_diff_subtracts_shared_cells_and_leaves_gaps_elsewhere():
    a = "x y z".split()
    b = "x new y z".split()
    al = align_tokens(a, b)  # x, +new, y, z
    rng = np.random.default_rng(0)
    map_a, map_b = rng.random((3, 3)), rng.random((4, 4))
    diff = aligned_diff(map_a, map_b, al, al)
    assert diff.shape == (4, 4)
    assert np.isnan(diff[1]).all() and np.isnan(diff[:, 1]).all()  # the inserted token's row and column
    # By hand: B's 'y' is row/column 2, A's 'y' is 1; B's 'z' is 3, A's 'z' is 2.
    assert diff[2, 3] == pytest.approx(map_b[2, 3] - map_a[1, 2], abs=1e-6)
    assert diff[0, 0] == pytest.approx(map_b[0, 0] - map_a[0, 0], abs=1e-6)
    assert np.isfinite(diff[np.ix_([0, 2, 3], [0, 2, 3])]).all()


def test_diff_of_rectangular_maps_aligns_rows_and_columns_separately():
    rows = align_tokens(["two", "dogs"], ["three", "dogs"])  # English steps
    cols = align_tokens(["zwei", "hunde", "</s>"], ["drei", "hunde", "</s>"])  # German tokens
    map_a, map_b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3) * 2
    diff = aligned_diff(map_a, map_b, rows, cols)
    assert diff.shape == (3, 4)  # -two, +three, dogs  x  -zwei, +drei, hunde, </s>
    assert diff[2, 2] == map_b[1, 1] - map_a[1, 1] and diff[2, 3] == map_b[1, 2] - map_a[1, 2]
    assert np.isnan(diff[:2]).all() and np.isnan(diff[:, :2]).all()


def test_sentiment_comparison_matches_two_single_runs(sentiment):
    a, b = "The acting was good.", "The acting was not good."
    cmp = compare_sentiment(sentiment, a, b)
    ra, rb = sentiment(a), sentiment(b)
    assert cmp.a.probabilities == pytest.approx(ra.probabilities) and cmp.b.probabilities == pytest.approx(
        rb.probabilities
    )
    assert cmp.change()["positive"] == pytest.approx(rb.probabilities["positive"] - ra.probabilities["positive"])
    assert "".join(t.text for t in cmp.tokens if t.kind == "inserted") == "not"  # one or more subword pieces
    assert {t.kind for t in cmp.tokens} == {"shared", "inserted"}
    diff = aligned_diff(ra.attentions[1][2].numpy(), rb.attentions[1][2].numpy(), cmp.tokens, cmp.tokens)
    T = len(cmp.tokens)
    assert diff.shape == (T, T)
    shared = [n for n, t in enumerate(cmp.tokens) if t.kind == "shared"]
    i, j = shared[0], shared[-1]
    expected = (
        rb.attentions[1][2][cmp.tokens[i].b_index, cmp.tokens[j].b_index]
        - ra.attentions[1][2][cmp.tokens[i].a_index, cmp.tokens[j].a_index]
    )
    assert diff[i, j] == pytest.approx(float(expected), abs=1e-6)


def test_translation_comparison_aligns_source_and_output(translation):
    cmp = compare_translation(translation, "Zwei Hunde spielen im Schnee.", "Drei Hunde spielen im Schnee.", 1)
    assert cmp.source[-1].text == "</s>" and cmp.source[-1].kind == "shared"
    assert {t.kind for t in cmp.source} == {"shared", "deleted", "inserted"}
    assert [t.text for t in cmp.target if t.b_index is not None] == cmp.b.target_tokens
    a, b = cmp.a.cross_attentions[0][1].numpy(), cmp.b.cross_attentions[0][1].numpy()
    assert aligned_diff(a, b, cmp.target, cmp.source).shape == (len(cmp.target), len(cmp.source))


def test_compare_handler_shows_both_labels_and_redraws_without_running(sentiment):
    view, html_out, fig = compare_view.compare_reviews(sentiment, "A fine film.", "A <b>fine</b> film!", 1, 2)
    assert html_out.count('class="compare-label"') == 2 and "<b>fine</b>" not in html_out  # markup escaped
    assert "layer 2, head 3" in fig.layout.title.text
    labels = list(fig.data[0].x)
    assert len(set(labels)) == len(labels) and any(":+" in x for x in labels)
    redrawn = compare_view.diff_figure(view, 0, 0)
    assert "layer 1, head 1" in redrawn.layout.title.text
    assert compare_view.diff_figure(view, 99, -5).layout.title.text.startswith("Self-attention, layer 2, head 1")


def test_compare_handler_answers_bad_input_with_a_message(sentiment, translation):
    view, message, fig = compare_view.compare_reviews(sentiment, "A fine film.", "   ")
    assert view is None and fig is None and "second review" in message and "empty" in message
    view, message, fig = compare_view.compare_translations(translation, "", "Ein Hund.", "greedy", float("nan"))
    assert view is None and "first German sentence" in message
    view, out, fig = compare_view.compare_translations(translation, "Ein Hund.", "Zwei Hunde.", "greedy", float("nan"))
    assert out.count('class="compare-label"') == 2 and "Cross-attention" in fig.layout.title.text


def test_the_text_diff_shows_whole_words_not_word_pieces(sentiment, translation):
    """Issue 25 item 6: the comparison's diff showed tokenizer pieces ("dogs -> c ats", "Hunde -> Kat zen")."""
    _, out, _ = compare_view.compare_reviews(sentiment, "I love dogs, really.", "I love cats, really.")
    line = out.split('class="compare-tokens"', 1)[1]
    assert "<del>dogs</del> <ins>cats</ins>, really." in line and "71% of the words line up, in order" in line
    # The same words in another order: the share is of the words that line up, which it now says (it read "29% of
    # the words shared" for two reviews of the very same words)
    _, out, _ = compare_view.compare_reviews(
        sentiment, "The cast is great, but the story is hollow.", "The story is hollow, but the cast is great."
    )
    assert "of the words line up, in order" in out and "words shared" not in out
    _, out, _ = compare_view.compare_translations(
        translation, "Zwei Hunde spielen im Schnee.", "Zwei Katzen spielen im Schnee.", "greedy", 1
    )
    german = out.split('class="compare-tokens"')[1]
    assert "<del>Hunde</del> <ins>Katzen</ins>" in german and "Kat " not in german
    assert compare_view.words("Isn't it 3.5 times better?") == ["Isn't", "it", "3", ".", "5", "times", "better", "?"]


def test_two_prompts_are_continued_alike_and_their_causal_maps_diffed(lm):
    view, out, fig = compare_view.compare_prompts(lm, "This movie was", "This <b>film</b> was", max_new_tokens=3)
    a, b = lm("This movie was", max_new_tokens=3), lm("This <b>film</b> was", max_new_tokens=3)
    assert out.count('class="compare-label"') == 2 and "<b>film" not in out  # markup escaped
    assert f"at {a.steps[0].probability:.1%}" in out and f"at {b.steps[0].probability:.1%}" in out
    assert "<del>movie</del>" in out and "Continuations" in out
    assert view.kind == "causal" and [t.b_index for t in view.rows if t.b_index is not None] == list(
        range(len(b.sequence_ids))
    )  # the sequences, prompt and new tokens but the last, as the maps are
    assert "Causal" in fig.layout.title.text and "layer 1, head 1" in fig.layout.title.text
    assert "layer 2, head 4" in compare_view.diff_figure(view, 1, 3).layout.title.text


def test_two_prompts_sampled_with_one_seed_are_each_repeatable(lm):
    first = compare_view.compare_prompts(lm, "A", "B", "sampled", 1.0, 0.9, 11, 4)[1]
    again = compare_view.compare_prompts(lm, "A", "B", "sampled", 1.0, 0.9, 11, 4)[1]
    assert first == again


def test_prompt_comparison_answers_bad_input_with_a_message(lm):
    view, message, fig = compare_view.compare_prompts(lm, "This movie was", "  ")
    assert view is None and fig is None and "second prompt" in message and "empty" in message
    view, message, fig = compare_view.compare_prompts(lm, "A", "B", decoding="beam search")
    assert view is None and "“greedy” or “sampled”" in message
    view, message, fig = compare_view.compare_prompts(lm, "word " * 400, "B", max_new_tokens=64)
    assert view is None and "shorten the prompt" in message and message.startswith("⚠️ The prompt")
