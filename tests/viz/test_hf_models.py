"""transformers models behind the adapter (pipelines/models/hf_adapter.py), on tiny random BERT, DistilBERT, RoBERTa and
Marian models built here: the pipeline's attention equals the model's own output_attentions for every layer and
head; switching a head off equals zeroing that head's slice of the output projection's input by hand; the
forward passes from embeddings equal the model's; every explanation method and faithfulness run; the app's
handlers work on them. Offline: every model and tokenizer is saved to a temporary folder."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.attention import attention_views as av
from pipelines.models.hf_adapter import HFClassifier, HFSeq2Seq, out_projections
from viz.attention import task_views
from viz.attention import view_handlers as views
from viz.explanations import explanation_panel as review_panel
from viz.explanations import translation_explanation_panel as translation_panel
from viz.heads.measure import head_table
from viz.heads.switch_off import switch_off
from viz.sentiment.handlers import analyze_review
from viz.share import downloads
from viz.translation.handlers import translate

REVIEW = "A wonderful film, but the ending was dull and far too long."
GERMAN = "Ein Mann fährt mit dem Fahrrad."


def test_a_translator_reads_words_it_has_never_seen(marian):
    """The tiny Marian tokenizer named its unknown token '[UNK]' while its vocabulary holds '<unk>': any unseen word
    ("Drei") raised a WordPiece error and the compare view showed "model failed"."""
    result = marian("Drei Hunde spielen.", beam_size=1)
    assert result.translation is not None and result.attention_maps().maps["cross"].shape[0] == 2


def own_attentions(model, **inputs):
    with torch.no_grad():
        return model(**inputs, output_attentions=True)


def zero_head_by_hand(model, projection_name: str, head: int, n_heads: int):
    """A copy of the model with the weight columns that read `head`'s slice set to zero."""
    off = copy.deepcopy(model)
    proj = dict(off.named_modules())[projection_name]
    hs = proj.in_features // n_heads
    with torch.no_grad():
        proj.weight[:, head * hs : (head + 1) * hs] = 0.0
    return off


def projection_name(model, kind: str, layer: int, encoder_kind: str) -> str:
    target = out_projections(model, encoder_kind)[kind][layer]
    return next(n for n, m in model.named_modules() if m is target)


# --- classifiers -----------------------------------------------------------------------------------------


def test_classifier_loads_behind_the_transformers_adapter(hf_classifier):
    assert isinstance(hf_classifier.adapter, HFClassifier)
    assert hf_classifier.labels == ["negative", "positive"] and hf_classifier.head_layers == {"self": 2}
    result = hf_classifier(REVIEW)
    assert result.tokens[0].text == "" and result.tokens[-1].text == ""  # [CLS] / <s> ... [SEP] / </s>
    assert REVIEW[result.tokens[1].start : result.tokens[1].end] == result.tokens[1].text == "A"


def test_classifier_attention_equals_the_models_own(hf_classifier):
    result = hf_classifier(REVIEW)
    ids = torch.tensor([[t.id for t in result.tokens]])
    own = own_attentions(hf_classifier.model, input_ids=ids, attention_mask=torch.ones_like(ids))
    assert len(result.attentions) == len(own.attentions) == hf_classifier.n_layers
    for layer, attn in enumerate(own.attentions):  # (1, H, T, T)
        for head in range(hf_classifier.n_heads):
            torch.testing.assert_close(result.attentions[layer][head], attn[0, head])
    maps = result.attention_maps()
    assert maps.maps["self"].shape == (hf_classifier.n_layers, hf_classifier.n_heads, len(ids[0]), len(ids[0]))


def test_classifier_head_off_equals_zeroing_its_slice_by_hand(hf_classifier):
    ids, _, _ = hf_classifier.encode(REVIEW)
    x = torch.tensor([ids])
    for layer, head in [(0, 1), (1, 3)]:
        name = projection_name(hf_classifier.model, "self", layer, "self")
        by_hand = zero_head_by_hand(hf_classifier.model, name, head, hf_classifier.n_heads)
        with torch.no_grad():
            expected = by_hand(input_ids=x, attention_mask=torch.ones_like(x)).logits
        got = hf_classifier.raw_logits([REVIEW], head_mask={("self", layer, head): 0.0})[0]
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
        assert not torch.allclose(got, hf_classifier.raw_logits([REVIEW])[0])  # the head mattered
    assert hf_classifier.raw_logits([REVIEW], head_mask={("self", 0, 1): 1.0})[0].allclose(
        hf_classifier.raw_logits([REVIEW])[0]
    )


def test_classifier_padding_and_embeddings(hf_classifier):
    texts = [REVIEW, "Dull."]
    batch = hf_classifier.predict(texts)
    alone = [hf_classifier.predict([t])[0] for t in texts]
    for a, b in zip(batch, alone):
        assert a == pytest.approx(b, abs=1e-5)
    x = torch.tensor([hf_classifier.encode(REVIEW)[0]])
    a = hf_classifier.adapter
    with torch.no_grad():
        torch.testing.assert_close(a.logits_from_embeddings(a.embed(x), x), a.forward(x).logits)


def test_classifier_every_method_explains_and_is_measured(hf_classifier):
    n = hf_classifier.adapter.n_prefix
    for method in hf_classifier.explanation_methods:
        expl = hf_classifier.explain(REVIEW, method)
        assert expl.scores.shape == (len(expl.tokens),) and np.isfinite(expl.scores).all()
        assert expl.scores[:n].tolist() == [0.0] * n and expl.scores[-1] == 0.0  # special tokens: no score
        report = hf_classifier.faithfulness(expl)
        assert np.isfinite([report.method.comprehensiveness, report.method.sufficiency]).all()
        assert report.method.curve[0] == pytest.approx(expl.probability, abs=1e-5)


def test_classifier_in_the_app_handlers(hf_classifier, tmp_path):
    view, probabilities, status = analyze_review(hf_classifier, REVIEW)
    assert set(probabilities) == {"negative", "positive"} and "tokens read" in status
    assert "out-of-domain check is off" in status  # not fitted for this model: said so
    fig = task_views.heatmap(view, 1, 3)
    T = len(view.spans)
    assert np.asarray(fig.data[0].z).shape == (T, T)
    expl, html = review_panel.explain(hf_classifier, view, "gradient_x_input")
    assert "token-text" in html
    assert "comprehensiveness" in review_panel.faithfulness(hf_classifier, expl)[0]
    heads_view, _, _, status = head_table(hf_classifier, "sentiment", REVIEW)
    assert "8 heads measured" in status
    assert "Switching off" in switch_off(hf_classifier, heads_view, ["self:1:2"])
    path, _ = downloads.sentiment_download(hf_classifier, REVIEW, "attention")
    data = json.loads(Path(path).read_text())
    assert data["model"]["config"]["model_type"] in ("bert", "distilbert", "roberta")
    assert len(data["attentions"]["self"]) == 2 and data["explanation"]["method"] == "attention"


def thumbnails_by_head(fig) -> dict[tuple[int, int], np.ndarray]:
    """The model view's thumbnails (linear scale: weights in thousandths) by (layer, head), as weights."""
    return {(t.meta["layer"], t.meta["head"]): np.asarray(t.z, dtype=np.float64) / 1000 for t in fig.data}


def test_classifier_model_view_shows_the_models_own_attention(hf_classifier):
    """The views draw from AttentionMaps for a transformers model too: every layer x head thumbnail is the model's
    own output_attentions, pooled to token blocks as the views pool them (a review longer than a thumbnail)."""
    review = " ".join([REVIEW] * 3)
    view, _, _ = analyze_review(hf_classifier, review)
    result = hf_classifier(review)
    ids = torch.tensor([[t.id for t in result.tokens]])
    assert ids.size(1) > 24  # pooled into blocks
    own = own_attentions(hf_classifier.model, input_ids=ids, attention_mask=torch.ones_like(ids)).attentions
    fig = views.model_view(task_views.kinds(view)["self"])
    thumbs = thumbnails_by_head(fig)
    assert len(thumbs) == hf_classifier.n_layers * hf_classifier.n_heads == len(own) * own[0].shape[1]
    for (layer, head), z in thumbs.items():
        expected, _, _ = av.pool_blocks(own[layer][0, head].numpy(), 24)
        assert z.shape == expected.shape and z.shape[0] < ids.size(1)
        np.testing.assert_allclose(z, np.minimum(expected, 0.999), atol=1.5e-3)


# --- a Marian translator ---------------------------------------------------------------------------------


def test_translator_attention_equals_the_models_own(marian):
    assert isinstance(marian.adapter, HFSeq2Seq)
    result = marian(GERMAN, beam_size=2)
    src = torch.tensor([[t.id for t in result.source_tokens]])
    tgt_in = torch.tensor([[marian.adapter.bos_id] + result.target_ids[:-1]])
    own = own_attentions(marian.model, input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt_in)
    pairs = [
        (result.encoder_attentions, own.encoder_attentions),
        (result.decoder_attentions, own.decoder_attentions),
        (result.cross_attentions, own.cross_attentions),
    ]
    for ours, theirs in pairs:
        assert len(ours) == len(theirs) == 2
        for layer, attn in enumerate(theirs):
            for head in range(marian.n_heads):
                torch.testing.assert_close(ours[layer][head], attn[0, head])


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_translator_head_off_equals_zeroing_its_slice_by_hand(marian, kind):
    result = marian(GERMAN, beam_size=1)
    src = torch.tensor([[t.id for t in result.source_tokens]])
    tgt_in = torch.tensor([[marian.adapter.bos_id] + result.target_ids[:-1]])
    name = projection_name(marian.model, kind, 1, "encoder")
    by_hand = zero_head_by_hand(marian.model, name, 2, marian.n_heads)
    with torch.no_grad():
        expected = by_hand(input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt_in).logits
        got = marian.adapter.forward(src, tgt_in, head_mask=marian.head_masks({(kind, 1, 2): 0.0})).logits
        intact = marian.adapter.forward(src, tgt_in).logits
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(got, intact)
    off = marian(GERMAN, beam_size=1, head_mask={(kind, 1, 2): 0.0})  # decoding runs with the head off too
    assert off.target_ids and np.isfinite(off.score)


def test_translator_step_log_probs_equal_the_model(marian):
    result = marian(GERMAN, beam_size=1)
    a = marian.adapter
    src = torch.tensor([[t.id for t in result.source_tokens]])
    tgt = torch.tensor([[a.bos_id] + result.target_ids[:-1]])
    T = tgt.size(1)
    with torch.no_grad():
        full = a.forward(src, tgt).logits[0].log_softmax(-1)
        ours = a.step_log_probs(
            a.embed_source(src.expand(T, -1)), src.expand(T, -1), a.embed_target(tgt.expand(T, -1)), torch.arange(T)
        )
    torch.testing.assert_close(ours, full, rtol=1e-4, atol=1e-5)
    assert result.score == pytest.approx(float(full[torch.arange(T), torch.tensor(result.target_ids)].sum()), abs=1e-3)


def test_translator_every_method_explains_and_is_measured(marian):
    result = marian(GERMAN, beam_size=2)
    for method in marian.explanation_methods:
        expl = marian.explain(GERMAN, method, result=result)
        assert expl.scores.shape == (len(result.target_tokens), len(result.source_tokens))
        assert np.isfinite(expl.scores).all() and expl.head_agreement.shape == (2, 4)
        report = marian.faithfulness(expl)
        assert report.per_step.shape == (len(result.target_tokens),)


def test_translator_in_the_app_handlers(marian):
    view, english, status = translate(marian, GERMAN, "beam search", 2)
    assert view is not None and english == view.result.translation and "beam search" in status
    figs = task_views.task_figures("translation", view, 1, 3)
    assert all(f is not None for f in figs)
    expl, heat, agree = translation_panel.explain(marian, view, "gradient_x_input")
    assert heat is not None and agree is not None
    assert "comprehensiveness" in translation_panel.faithfulness(marian, expl)
    heads_view, _, _, status = head_table(marian, "translation", GERMAN, "beam search", 2, result=view.result)
    assert "24 heads measured" in status
    assert "Switching off" in switch_off(marian, heads_view, ["cross:0:1"])
    path, _ = downloads.translation_download(marian, GERMAN, "greedy", 2)
    assert json.loads(Path(path).read_text())["model"]["config"]["model_type"] == "marian"


def test_translator_model_view_and_token_focus_read_the_models_own_attention(marian):
    view, _, _ = translate(marian, GERMAN, "greedy", 2)
    result = view.result
    src = torch.tensor([[t.id for t in result.source_tokens]])
    tgt_in = torch.tensor([[marian.adapter.bos_id] + result.target_ids[:-1]])
    own = own_attentions(marian.model, input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt_in)
    own = {"encoder": own.encoder_attentions, "decoder": own.decoder_attentions, "cross": own.cross_attentions}
    kinds = task_views.kinds(view)
    for kind, attentions in own.items():
        thumbs = thumbnails_by_head(views.model_view(kinds[kind]))
        assert len(thumbs) == len(attentions) * marian.n_heads
        for (layer, head), z in thumbs.items():
            expected, _, _ = av.pool_blocks(attentions[layer][0, head].numpy(), 24)
            np.testing.assert_allclose(z, np.minimum(expected, 0.999), atol=1.5e-3)
    maps = result.attention_maps()
    t, s = len(result.target_tokens) // 2, 1
    for token, weights in [
        (f"tgt:{t}", maps.layer("cross", 1)[:, t, :]),
        (f"src:{s}", maps.layer("cross", 1)[:, :, s]),
    ]:
        fig = views.token_focus(kinds["cross"], 1, token)
        assert len(fig.data) == marian.n_heads  # one panel: an English token is no key, a German one no query
        np.testing.assert_allclose(np.array([bar.y for bar in fig.data]), weights, atol=1e-3)


def test_translator_runs_in_a_model_process(marian):
    """A model process gets the pipeline pickled; a transformers model loads again there (unpickled as it is, it
    returned no attention weights in the child)."""
    from pipelines.hosting.processes import ModelProcess

    here = marian(GERMAN, beam_size=1)
    process = ModelProcess(marian).start()
    try:
        source = [marian.source_input(GERMAN)]
        batch = TranslationPipeline.explain_inputs
        (there,) = process.call("run_batch", source, batch, beam_size=1, alpha=0.6, top_k=5)
    finally:
        process.close()
    assert there.translation == here.translation and len(there.cross_attentions) == 2
    torch.testing.assert_close(there.cross_attentions[1], here.cross_attentions[1])


def test_two_models_side_by_side(hf_classifier, sentiment):
    from viz.compare.model_compare import compare_models

    html, first, second = compare_models(hf_classifier, sentiment, REVIEW, layer=1, head=3)
    assert html.count("compare-side") >= 2 and ("agree" in html)
    assert first is not None and second is not None
    assert compare_models(hf_classifier, sentiment, "")[1:] == (None, None)


def test_compare_views_on_transformers_models(hf_classifier, marian):
    from viz.compare import input_compare as compare

    view, html, diff = compare.compare_reviews(hf_classifier, REVIEW, REVIEW.replace("wonderful", "dreadful"), 1, 2)
    assert view is not None and diff is not None and "First" in html
    view, html, diff = compare.compare_translations(marian, GERMAN, "Eine Frau fährt mit dem Fahrrad.", "greedy")
    assert view is not None and diff is not None


def test_calibration_where_fitted(tmp_path):
    """A preprocessing.json beside a transformers model (what training/calibrate.py writes) calibrates it."""
    from tiny_hf_models import make_distilbert_dir

    folder = make_distilbert_dir(tmp_path / "distilbert")
    plain = SentimentPipeline.from_pretrained(str(folder))
    (folder / "preprocessing.json").write_text(json.dumps({"temperature": 0.05, "labels": ["neg", "pos"]}))
    fitted = SentimentPipeline.from_pretrained(str(folder))
    assert plain.calibration.temperature == 1.0 and fitted.labels == ["neg", "pos"]
    logits, _ = plain.raw_logits([REVIEW])
    expected = (logits[0] / 0.05).softmax(-1)
    assert list(fitted.predict([REVIEW])[0].values()) == pytest.approx(expected.tolist(), abs=1e-5)


def test_faithfulness_benchmark_on_a_transformers_classifier(hf_classifier):
    """The faithfulness benchmark's scoring ranks the review's own tokens: [CLS] and [SEP] stay in place."""
    from pipelines.explanations.faithfulness import sentiment_input

    row = sentiment_input(hf_classifier, REVIEW, seed=0)
    assert set(row["methods"]) == set(hf_classifier.explanation_methods)
    assert all(np.isfinite(f.comprehensiveness) for f in row["methods"].values())


def expected_diff(maps_a, maps_b, kind: str, layer: int, head: int, rows, cols) -> np.ndarray:
    """B's AttentionMaps head minus A's on every query/key pair both inputs share; NaN where either is missing."""
    a, b = maps_a.head(kind, layer, head), maps_b.head(kind, layer, head)
    out = np.full((len(rows), len(cols)), np.nan)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            if r.kind == "shared" and c.kind == "shared":
                out[i, j] = b[r.b_index, c.b_index] - a[r.a_index, c.a_index]
    return out


def test_compare_diff_is_the_difference_of_the_two_inputs_attention_maps(hf_classifier, marian):
    """The compare view's diff on a transformers model is B's AttentionMaps minus A's for the shared tokens (the
    view keeps float16 maps), and its rows and columns are the maps' tokens."""
    from viz.compare import input_compare as compare

    other = REVIEW.replace("wonderful", "dreadful")
    view, _, fig = compare.compare_reviews(hf_classifier, REVIEW, other, 1, 2)
    ma, mb = hf_classifier(REVIEW).attention_maps(), hf_classifier(other).attention_maps()
    assert {t.kind for t in view.rows} == {"shared", "deleted", "inserted"}
    assert [t.text for t in view.rows if t.b_index is not None] == mb.queries["self"]
    assert [t.text for t in view.rows if t.a_index is not None] == ma.queries["self"]
    np.testing.assert_allclose(
        np.array(fig.data[0].z, dtype=float), expected_diff(ma, mb, "self", 1, 2, view.rows, view.cols), atol=2e-3
    )

    second = "Eine Frau fährt mit dem Fahrrad."
    view, _, fig = compare.compare_translations(marian, GERMAN, second, "greedy", 1, 1, 3)
    ma = marian(GERMAN, beam_size=1).attention_maps()
    mb = marian(second, beam_size=1).attention_maps()
    assert [t.text for t in view.cols if t.b_index is not None] == mb.keys["cross"]
    assert [t.text for t in view.rows if t.b_index is not None] == mb.queries["cross"]
    assert any(t.kind == "shared" for t in view.cols) and any(t.kind == "shared" for t in view.rows)
    z = np.array(fig.data[0].z, dtype=float)
    np.testing.assert_allclose(z, expected_diff(ma, mb, "cross", 1, 3, view.rows, view.cols), atol=2e-3)
    assert np.isfinite(z).any() and "Cross-attention, layer 2, head 4" in fig.layout.title.text
