"""The numbers behind the attention views (pipelines.attention.attention_views): colour scales, the cut marker of a long
review, hidden tokens with renormalised rows, ticks, token focus and thumbnails."""

import html

import numpy as np
import pytest

from pipelines.attention import attention_views as av
from pipelines.text import kept_positions


def rows(T: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(T, 0.3), size=T)


def test_linear_scale_is_proportional_and_its_ticks_are_weights():
    w = np.array([[0.0, 0.05, 0.2], [0.1, 0.1, 0.1]])
    s = av.color_scale("linear").apply(w)
    np.testing.assert_allclose(s.positions, w / 0.2)
    assert s.tick_labels[0] == "0" and all(0 <= p <= 1 for p in s.tick_positions)
    for pos, label in zip(s.tick_positions, s.tick_labels):
        assert pos * 0.2 == pytest.approx(float(label))


def test_log_scale_spreads_small_weights_and_places_decades():
    w = np.array([[1e-6, 1e-3, 1e-2, 0.1]])
    s = av.color_scale("log").apply(w)
    np.testing.assert_allclose(s.positions, [[0.0, 1 / 3, 2 / 3, 1.0]])  # three decades below the top
    assert s.tick_labels == ["0.0001", "0.001", "0.01", "0.1"]
    np.testing.assert_allclose(s.tick_positions, [0.0, 1 / 3, 2 / 3, 1.0])
    assert "log" in av.color_scale("log").label


def test_row_scale_gives_every_row_its_own_maximum():
    w = np.array([[0.5, 0.25, 0.25], [0.02, 0.01, 0.97], [0.0, 0.0, 0.0]])
    s = av.color_scale("row").apply(w)
    np.testing.assert_allclose(s.positions, [[1, 0.5, 0.5], [0.02 / 0.97, 0.01 / 0.97, 1], [0, 0, 0]])
    assert "row" in av.color_scale("row").label
    assert av.color_scale("no such scale").name == "linear"


def test_cut_marker_sits_between_the_kept_head_and_tail():
    n, max_len, head = 700, 512, 128
    kept = kept_positions(n, max_len, head)  # what the pipeline keeps: positions into the whole review
    marker = av.cut_marker(head, n - max_len, np.arange(len(kept)))
    assert marker.boundary == head - 0.5 and marker.n_skipped == 188 and "188 tokens skipped" in marker.text
    assert kept[head - 1] + 1 < kept[head]  # the positions on either side are not neighbours in the review


def test_cut_marker_follows_hidden_tokens_and_vanishes_without_a_cut():
    shown = np.array([0, 2, 3, 5, 6, 9])  # positions 1, 4, 7, 8 hidden
    assert av.cut_marker(6, 40, shown).boundary == 3.5  # 0, 2, 3, 5 are before the cut
    assert av.cut_marker(None, 0) is None and av.cut_marker(6, 0) is None
    assert av.cut_marker(1, 5, np.array([3, 4])) is None  # every shown token is on one side


def test_hiding_tokens_renormalises_the_rows_over_what_remains():
    tokens = ["The", "film", ",", "sadly", ".", "</s>"]
    hidden = av.hidden_positions(tokens)
    assert hidden.tolist() == [False, False, True, False, True, True]
    w = rows(6)[None]  # (1, 6, 6)
    shown, kept_q, kept_k = av.hide_tokens(w, hidden, hidden)
    assert kept_q.tolist() == kept_k.tolist() == [0, 1, 3]
    np.testing.assert_allclose(shown.sum(-1), 1.0)
    expected = w[0][np.ix_([0, 1, 3], [0, 1, 3])]
    np.testing.assert_allclose(shown[0], expected / expected.sum(-1, keepdims=True))


def test_tick_positions_show_every_token_when_they_fit():
    assert av.tick_positions(12, 30) == list(range(12))
    ticks = av.tick_positions(512, 30)
    assert ticks[:3] == [0, 20, 40] and len(ticks) <= 30


def test_token_focus_reads_a_row_and_a_column_of_every_head():
    w = np.stack([rows(5, seed=h) for h in range(3)])  # (H, T, T)
    focus = av.token_focus(w, 2, 4)
    np.testing.assert_array_equal(focus.looks_at, w[:, 2, :])
    np.testing.assert_array_equal(focus.looked_at_by, w[:, :, 4])
    assert av.token_focus(w, None, 1).looks_at is None
    assert av.top_k(np.array([0.1, 0.5, 0.1, 0.3]), 2).tolist() == [1, 3]


def test_thumbnails_keep_every_row_a_distribution():
    layers = [np.stack([rows(100, seed=10 * layer + h) for h in range(4)]) for layer in range(2)]
    thumbs, starts_q, starts_k = av.thumbnails(layers, max_cells=24)
    assert thumbs.shape == (2, 4, 20, 20) and starts_q[1] == 5
    np.testing.assert_allclose(thumbs.sum(-1), 1.0, rtol=1e-5)


# --- the figures drawn from these numbers (viz/), on the tiny classifier --------------------------------


@pytest.fixture(scope="module")
def long_view(sentiment):
    from viz.examples import LONG_REVIEW
    from viz.sentiment.handlers import analyze_review

    view, _, _ = analyze_review(sentiment, LONG_REVIEW)
    assert view.cut_after == 16 and view.n_skipped > 0  # the tiny model reads 64 tokens: 16 + 48
    return view


@pytest.mark.parametrize("name", ["linear", "log", "row"])
def test_the_large_heatmap_names_its_scale_and_hovers_the_weights(long_view, name):
    from viz.attention import task_views

    fig = task_views.heatmap(long_view, 1, 2, name)
    scale = av.color_scale(name)
    assert scale.label in fig.layout.title.subtitle.text
    weights = long_view.maps.head("self", 1, 2).astype(np.float32)
    trace = fig.data[0]
    shown = np.asarray(trace.z) if scale.linear else np.asarray(trace.customdata)
    np.testing.assert_allclose(shown / 1000, np.minimum(weights, 0.999), atol=5e-4)  # hover: the weight itself
    if not scale.linear:
        expected = np.rint(scale.apply(weights.astype(np.float64)).positions * 250)
        np.testing.assert_array_equal(np.asarray(trace.z), expected)
        assert "%{customdata:03d}" in trace.hovertemplate


def test_the_cut_marker_is_drawn_where_the_pipeline_puts_it_with_tokens_hidden(long_view):
    from viz.attention import task_views

    fig = task_views.heatmap(long_view, 0, 0, "linear", True)
    labels = task_views.kinds(long_view)["self"].q_labels
    tokens = [label.split(":", 1)[1] for label in labels]
    kept = np.flatnonzero(~av.hidden_positions(tokens))
    marker = av.cut_marker(long_view.cut_after, long_view.n_skipped, kept)
    cuts = [s for s in fig.layout.shapes if s.name == "cut"]
    assert [cuts[0].x0, cuts[1].y0] == [marker.boundary, marker.boundary]
    assert any("tokens skipped" in a.text for a in fig.layout.annotations)
    assert len(fig.data[0].y) == len(kept) < len(labels)


# --- token focus on the translator: the views read its AttentionMaps, the decoder's keys one step behind ----------


@pytest.fixture(scope="module")
def translated(translation):
    from viz.attention import task_views
    from viz.examples import GERMAN
    from viz.translation.handlers import translate

    view, _, _ = translate(translation, GERMAN[0], "greedy", 4)
    assert len(view.steps) >= 3
    return view, task_views.kinds(view)


def test_token_focus_on_the_decoder_reads_the_token_where_the_next_step_read_it(translated):
    from viz.attention import view_handlers as views

    view, kinds = translated
    maps = view.result.attention_maps()  # float32, straight from the pipeline
    dec = kinds["decoder"]
    s = views.shown(dec, 1, False)
    i = 1
    (_, looks, _, looks_mark), (_, by, _, by_mark) = views.focus_panels(dec, s, f"tgt:{i}")
    np.testing.assert_allclose(looks, maps.layer("decoder", 1)[:, i, :], atol=1e-3)  # its row: step i
    np.testing.assert_allclose(by, maps.layer("decoder", 1)[:, :, i + 1], atol=1e-3)  # read at step i + 1
    assert (looks_mark, by_mark) == (i + 1, i)  # itself, on the other axis
    last = views.focus_panels(dec, s, f"tgt:{len(view.steps) - 1}")  # the last output is never read
    assert [p[0].split(" ")[0] for p in last] == ["where"]


def test_token_focus_on_cross_attention_marks_no_german_token_for_an_english_one(translated):
    from viz.attention import view_handlers as views

    view, kinds = translated
    cross = kinds["cross"]
    s = views.shown(cross, 0, False)
    ((what, looks, labels, mark),) = views.focus_panels(cross, s, "tgt:1")
    assert what.startswith("where") and labels == cross.k_labels and mark is None
    np.testing.assert_allclose(looks, view.result.attention_maps().layer("cross", 0)[:, 1, :], atol=1e-3)
    ((what, by, labels, mark),) = views.focus_panels(cross, s, "src:2")
    assert what.startswith("what looks at") and labels == cross.q_labels and mark is None


def test_token_choices_name_each_token_once_with_its_own_position(translated):
    from viz.attention import view_handlers as views

    view, kinds = translated
    choices = views.token_choices(list(kinds.values()))
    values = [v for _, v in choices]
    Ts, Tt = len(kinds["encoder"].q_labels), len(view.steps)
    assert values == [f"src:{i}" for i in range(Ts)] + [f"tgt:{i}" for i in range(Tt)]
    assert [lab for lab, _ in choices][
        Ts
    ] == f"0:{html.unescape(kinds['cross'].q_labels[0].split(':', 1)[1])} (English)"


def test_model_view_draws_every_kind_even_with_weights_past_a_byte(translated):
    """The decoder's first step gives all its weight to '<s>' (1.0 > 0.255: the thousandths no longer fit a byte
    and come as lists); the model view indexed them as an array and failed for the decoder."""
    from viz.attention import view_handlers as views

    view, kinds = translated
    for km in kinds.values():
        fig = views.model_view(km)
        L, H = km.maps.shape[:2]
        assert len(fig.data) == L * H and {(t.meta["layer"], t.meta["head"]) for t in fig.data} == {
            (layer, h) for layer in range(L) for h in range(H)
        }
    first_step = [np.asarray(t.z)[0, 0] for t in views.model_view(kinds["decoder"]).data]
    assert first_step == [999] * len(first_step)  # step 1 reads only '<s>'


def test_token_focus_says_why_a_token_is_not_drawn(translated, long_view):
    """A German token in decoder self-attention (or a hidden one) drew an empty plot with no word of why."""
    from viz.attention import task_views
    from viz.attention import view_handlers as views

    _, kinds = translated
    cases = [
        ("decoder", "src:1", "no German tokens: pick an English token"),
        ("encoder", "tgt:0", "pick a German token"),
    ]
    for kind, token, words in cases:
        fig = views.token_focus(kinds[kind], 0, token)
        assert not fig.data and words in fig.layout.annotations[0].text
    assert views.token_focus(kinds["cross"], 0, "src:1").data  # on an axis: drawn
    assert views.token_focus(kinds["cross"], 0, None) is None  # no token chosen: nothing to say
    km = task_views.kinds(long_view)["self"]
    comma = next(i for i, text in enumerate(km.q.tokens) if text in {".", ","})
    fig = views.token_focus(km, 0, f"src:{comma}", hide=True)
    assert not fig.data and "is hidden" in fig.layout.annotations[0].text
    assert views.token_focus(km, 0, f"src:{comma}", hide=False).data


def test_maps_in_float16_are_numpys_rounding_bit_for_bit():
    """AttentionMaps.astype converts float32 to float16 through torch (numpy is slow on float16's subnormal range,
    where a third of a long review's weights fall): every value, tiny, huge, signed zero, inf and NaN included,
    rounds as numpy's astype does."""
    from pipelines.attention.attention_maps import AttentionMaps

    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.full(300, 0.05), size=(2, 3, 300)).astype(np.float32)  # (L, H, T, T), many tiny
    edge = np.array([1e-8, 2.98e-8, 5.96e-8, 6.1e-5, 65504, 70000, np.inf, -0.0, np.nan, -3e-7], dtype=np.float32)
    weights[0, 0, 0, : len(edge)] = edge
    maps = AttentionMaps({"self": weights}, {"self": []}, {"self": []}, {"self": weights[:, :, 0]})
    with np.errstate(over="ignore"):
        expected = weights.astype(np.float16)
    half = maps.astype(np.float16)
    assert half.maps["self"].dtype == np.float16 and (expected < 6.1e-5).mean() > 0.3
    np.testing.assert_array_equal(half.maps["self"].view(np.uint16), expected.view(np.uint16))
    np.testing.assert_array_equal(half.carried["self"].view(np.uint16), expected[:, :, 0].view(np.uint16))
    assert maps.astype(np.float32).maps["self"] is not weights  # a copy, as numpy's


def test_token_focus_names_bars_apart_from_each_other():
    """The three largest bars of a head are named, but not two whose names would run into each other on a phone,
    and every head's axis spans the same tokens (the focus line aligned)."""
    from viz.attention.view_figures import named_bars, token_focus

    weights = np.zeros(40)
    weights[[10, 11, 12, 30, 4]] = [0.5, 0.4, 0.3, 0.2, 0.1]  # three neighbours, and two far off
    names = ["word"] * 40
    assert named_bars(weights, names) == [10, 30, 4]  # 11 and 12 (0.4, 0.3) sit next to 10: skipped
    names[4] = "cinematography"  # a long name reaches as far as position 10's
    assert named_bars(weights, names) == [10, 30]  # and a bar of weight 0 is not named
    assert named_bars(np.array([0.2, 0.5, 0.3]), ["a", "b", "c"]) == [1, 2, 0]  # a short input: wide bars
    # a name at the start leans right, over the bars after it: "Meadow" (at 8 of 512) ran into "Brody" (at 92)
    long = np.zeros(512)
    long[[8, 92, 323]] = [0.3, 0.2, 0.1]
    long_names = ["w"] * 512
    long_names[8], long_names[92], long_names[323] = "Meadow", "Brody", "film"
    assert named_bars(long, long_names) == [8, 323]
    labels = [f"{i}:{n}" for i, n in enumerate(names)]
    edge = np.zeros(40)
    edge[39] = 0.5  # the last token
    heads = np.stack([weights, edge])  # (H, T)
    fig = token_focus([("where 5:word looks", heads, labels, 5)], "focus")
    assert {tuple(ax.range) for ax in (fig.layout[k] for k in fig.layout if k.startswith("xaxis"))} == {(-0.5, 39.5)}
    bar_names = [a for a in fig.layout.annotations if a.font.size == 9]
    assert {a.xanchor for a in bar_names if a.x == "39:word"} == {"right"}  # at the edge it leans inwards
    assert {a.xanchor for a in bar_names if a.x == "10:word"} == {"center"}


def test_the_next_word_tabs_norm_scale_draws_the_value_norms(lm):
    """The language model's results carry value norms, so 'weight × value norm' draws another heatmap."""
    from viz.attention.view_handlers import kinds_of, layer_maps

    result = lm("The film was a", max_new_tokens=3)
    km = kinds_of(result.attention_maps())["causal"]
    assert km.carried is not None and km.carried.shape[:2] == (lm.n_layers, lm.n_heads)
    plain, weighed = layer_maps(km, 1), layer_maps(km, 1, scale="norm")
    assert plain.shape == weighed.shape and np.abs(plain - weighed).max() > 1e-3
