"""Links that restore a view: the URL round trip (Unicode, markup, length limit) and forgiving parsing."""

from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from viz.share.links import MAX_QUERY_CHARS, ViewLink, from_query, share_url, to_query

BASE = "http://127.0.0.1:7860/"


def round_trip(link: ViewLink) -> ViewLink:
    url, _ = share_url(BASE, link)
    assert url is not None and url.startswith(BASE + "?")
    return from_query(urlsplit(url).query)


@pytest.mark.parametrize(
    "text",
    [
        "Überraschend gut: „Die Brücke“ – 5/5 ★ 🎬",  # German, typographic quotes, symbols, emoji
        "<script>alert('x')</script> & <img src=x onerror=alert(1)> %20 + ? # = ;",  # markup and URL syntax
        "line one\nline two\ttabbed  double  spaces ",
        "日本語のレビュー、とても良い。",
    ],
)
def test_text_and_view_survive_the_round_trip(text):
    link = ViewLink("translation", text, layer=1, head=3, step=4, decoding="greedy", beam=5)
    assert round_trip(link) == link
    link = ViewLink("sentiment", text, layer=0, head=2, method="rollout")
    assert round_trip(link) == link


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=300).filter(str.strip))
def test_any_text_round_trips(text):
    assert round_trip(ViewLink("sentiment", text)).text == text


def test_indices_are_one_based_in_the_link():
    query = to_query(ViewLink("translation", "Ein Hund.", layer=0, head=3, step=2))
    assert "layer=1" in query and "head=4" in query and "step=3" in query
    assert "decoding" not in query and "beam" not in query  # defaults are left out


def test_markup_is_encoded_in_the_link():
    url, _ = share_url(BASE, ViewLink("sentiment", '<b onclick="x">hi</b>'))
    assert "<" not in url and '"' not in url and " " not in url


def test_too_long_text_is_refused_with_the_reason():
    fits = "a" * (MAX_QUERY_CHARS - 30)
    url, _ = share_url(BASE, ViewLink("sentiment", fits))
    assert url is not None and len(urlsplit(url).query) <= MAX_QUERY_CHARS
    url, message = share_url(BASE, ViewLink("sentiment", "ü" * 1_500))  # 1,500 characters, 9,000 encoded
    assert url is None
    assert "too long for a link" in message and f"{MAX_QUERY_CHARS:,}" in message and "Download data" in message


def test_a_lone_surrogate_does_not_break_the_link():
    assert round_trip(ViewLink("sentiment", "bad \ud800 half")).text == "bad ? half"


def test_nothing_to_share_says_so():
    url, message = share_url(BASE, ViewLink("sentiment", "   "))
    assert url is None and "Type or pick" in message


def test_the_page_address_loses_its_old_query():
    url, _ = share_url("http://host/app/?tab=translation&text=old#frag", ViewLink("sentiment", "new"))
    assert url == "http://host/app/?tab=sentiment&text=new"


def test_the_colour_scale_travels_and_linear_is_left_out():
    assert "scale=norm" in to_query(ViewLink("translation", "Zwei Hunde.", scale="norm"))
    assert from_query(to_query(ViewLink("sentiment", "Fine film", scale="row"))).scale == "row"
    assert "scale" not in to_query(ViewLink("sentiment", "Fine film", scale="linear"))
    broken = from_query("text=Fine+film&scale=rainbow")
    assert broken.scale is None and broken.ignored == ["colour scale"]


def test_hidden_tokens_travel_and_the_default_is_left_out():
    assert "hide=1" in to_query(ViewLink("translation", "Zwei Hunde.", hide=True))
    assert "hide" not in to_query(ViewLink("sentiment", "Fine film"))
    assert from_query(to_query(ViewLink("sentiment", "Fine film", hide=True))).hide is True
    assert from_query("text=Fine+film&hide=0").hide is False and from_query("text=Fine+film").hide is False


def test_broken_values_fall_back_to_defaults():
    link = from_query("tab=evil&text=Fine+film&layer=abc&head=0&step=-3&beam=9999&decoding=sampling&method=")
    assert link == ViewLink("sentiment", "Fine film")
    assert from_query({"tab": "translation", "layer": "2"}) is None  # no text: nothing to restore
    assert from_query("") is None
    assert from_query({"text": "x", "layer": " 3 "}).layer == 2


def test_the_model_and_the_training_step_travel_and_defaults_are_left_out():
    link = ViewLink("sentiment", "Fine film", model="from scratch (2 × 4 heads)", training_step=0)
    assert round_trip(link) == link
    assert "model" not in to_query(ViewLink("sentiment", "Fine film"))
    assert "training_step" not in to_query(ViewLink("translation", "Zwei Hunde.", step=2))
    for raw in ("-1", "ten", "1.5"):
        broken = from_query(f"text=Fine+film&training_step={raw}")
        assert broken.training_step is None and broken.ignored == ["training step"]
    assert len(from_query("text=x&model=" + "m" * 500).model) == 120  # a name, not a payload


def test_a_next_word_link_carries_the_prompt_decoding_seed_and_step():
    link = ViewLink(
        "lm", "Mr. and Mrs. Dursley „wunderbar“ <b>", layer=1, head=3, step=4, decoding="sampled", method="occlusion",
        temperature=0.7, top_p=0.9, seed=1234, max_new_tokens=12, chat=True, model="ours (6 × 8 heads)",
    )  # fmt: skip
    assert round_trip(link) == link
    query = to_query(link)
    assert "tab=lm" in query and "seed=1234" in query and "max_new=12" in query and "chat=1" in query
    assert "step=5" in query and "temperature=0.7" in query and "top_p=0.9" in query
    plain = to_query(ViewLink("lm", "This movie was", decoding="greedy"))
    assert not any(name in plain for name in ("temperature", "top_p", "seed", "max_new", "chat"))


def test_next_word_decodings_are_the_tabs_own():
    assert from_query("tab=lm&text=Hi&decoding=sampled").decoding == "sampled"
    assert from_query("tab=translation&text=Hi&decoding=sampled").decoding is None  # the translator does not sample
    assert from_query("tab=lm&text=Hi&decoding=beam+search").decoding is None


def test_broken_next_word_options_fall_back_and_are_named():
    link = from_query("tab=lm&text=Hi&temperature=nan&top_p=2&seed=-4&max_new=0&chat=0")
    assert (link.temperature, link.top_p, link.seed, link.max_new_tokens, link.chat) == (None, None, None, None, False)
    assert link.ignored == ["temperature", "top-p", "seed", "number of new tokens"]
    assert from_query("tab=lm&text=Hi&seed=+7+&temperature=1e-9").seed == 7


def test_a_link_that_reads_the_result_layer_by_layer_opens_that_section():
    from viz.page.layout import LINKED

    link = from_query(to_query(ViewLink("lm", "The capital of France is", layers=True)))
    assert link.layers and not from_query(to_query(ViewLink("lm", "The capital of France is"))).layers
    assert LINKED["layers"] == "Layer by layer"  # opened as the page loads (open_linked_section.js)
