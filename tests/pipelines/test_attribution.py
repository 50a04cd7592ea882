"""Sentiment attributions and their faithfulness: completeness, occlusion on a one-token model, signs
that flip with the target, comprehensiveness against random rankings."""

import numpy as np
import pytest
import torch

from pipelines import SentimentPipeline
from pipelines.explanations import default_method, is_signed, names
from pipelines.explanations.faithfulness import evaluate_rankings, faithfulness, n_top, variants
from pipelines.explanations.methods import GradientXInput, IntegratedGradients, Occlusion, log_odds
from pipelines.explanations.words import word_ids, word_scores
from pipelines.models.adapter import OurClassifier
from pipelines.text import TokenSpan
from transformer import ClassifierConfig, TransformerClassifier

METHODS = names("sentiment")
TEXT = "The acting was wooden and the plot was predictable, but the music was wonderful."


def linear_model(vocab_size: int) -> OurClassifier:
    """No layers, mean pooling, no n-grams: the log-odds are linear in the embeddings."""
    cfg = ClassifierConfig(vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=0, d_ff=16, max_len=64)
    return OurClassifier(TransformerClassifier(cfg), None)


def one_token_model(vocab_size: int, token: int) -> TransformerClassifier:
    """Reads only `token`: every other embedding is zero, and the pooling query picks that token out."""
    cfg = ClassifierConfig(
        vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=0, d_ff=16, max_len=64, pooling="attention"
    )
    model = TransformerClassifier(cfg).eval()
    with torch.no_grad():
        v = torch.zeros(16)
        v[0] = 1.0
        model.tok_emb.weight.zero_()
        model.tok_emb.weight[token] = v
        model.pool_query.copy_(200 * v)
        model.encoder.positions.table.zero_()
        model.head[1].weight.zero_()
        model.head[1].bias.zero_()
        model.head[1].weight[1] = v  # logit(positive) = v . pooled, logit(negative) = 0
    return model


def unique_token(ids: list[int], toks) -> int:
    """A token id that occurs once in ids and is a whole word."""
    words = word_ids(toks)
    return next(t for i, t in enumerate(ids) if i > 0 and ids.count(t) == 1 and (words == words[i]).sum() == 1)


def ids_of(sentiment, text=TEXT) -> torch.Tensor:
    return torch.tensor([sentiment.encode(text)[0]])


def test_embedding_forward_equals_the_model(sentiment):
    x = ids_of(sentiment)
    with torch.no_grad():
        ours = sentiment.adapter.logits_from_embeddings(sentiment.adapter.embed(x), x)
        assert torch.allclose(ours, sentiment.model(x).logits, atol=1e-5)


def test_log_odds_of_two_labels_are_opposite():
    logits = torch.randn(5, 2)
    lo = log_odds(logits)
    assert torch.allclose(lo[:, 1], logits[:, 1] - logits[:, 0], atol=1e-6) and torch.allclose(lo[:, 0], -lo[:, 1])
    p = logits.softmax(-1)
    three = torch.randn(4, 3)
    q = three.softmax(-1)
    assert torch.allclose(log_odds(three), (q / (1 - q)).log(), atol=1e-5) and p.shape == (5, 2)


def test_gradient_x_input_is_complete_on_a_linear_model(sentiment):
    model = linear_model(sentiment.model.config.vocab_size)
    x = ids_of(sentiment)
    scores = GradientXInput().review(model, x, target=1, words=None).scores
    emb = model.embed(x)
    with torch.no_grad():
        diff = log_odds(model.logits_from_embeddings(emb, x)) - log_odds(
            model.logits_from_embeddings(torch.zeros_like(emb), x)
        )
    assert scores.sum() == pytest.approx(float(diff[0, 1]), abs=1e-4)


def test_integrated_gradients_are_complete_within_the_reported_delta(sentiment):
    x = ids_of(sentiment)
    attr = IntegratedGradients().review(sentiment.adapter, x, target=1, words=None)
    emb = sentiment.adapter.embed(x).detach()
    with torch.no_grad():
        f = lambda e: float(log_odds(sentiment.adapter.logits_from_embeddings(e, x))[0, 1])  # noqa: E731
        diff = f(emb) - f(torch.zeros_like(emb))
    assert attr.steps == 32 and attr.delta is not None
    assert attr.scores.sum() - diff == pytest.approx(attr.delta, abs=1e-4)
    assert abs(attr.delta) < 0.05 * max(abs(diff), 1e-3) + 1e-3


def test_occlusion_on_a_model_that_reads_one_token_ranks_it_first(sentiment):
    ids, toks, _ = sentiment.encode(TEXT)
    token = unique_token(ids, toks)
    model = one_token_model(sentiment.model.config.vocab_size, token)
    scores = Occlusion().review(OurClassifier(model, None), torch.tensor([ids]), target=1, words=word_ids(toks)).scores
    first = [i for i, t in enumerate(ids) if t == token]
    assert int(np.argmax(scores)) in first
    others = np.delete(scores, first)
    assert np.abs(others).max() < 1e-3 and scores[first].sum() > 1.0


def test_comprehensiveness_of_the_true_ranking_beats_random(sentiment):
    ids, toks, _ = sentiment.encode(TEXT)
    token = unique_token(ids, toks)
    model = one_token_model(sentiment.model.config.vocab_size, token)
    one = SentimentPipeline(model, sentiment.tokenizer, sentiment.max_len, sentiment.head_tokens, sentiment.labels)
    expl = one.explain(TEXT, "gradient_x_input", target="positive")
    report = one.faithfulness(expl)
    assert report.method.comprehensiveness > report.random.comprehensiveness + 0.1
    assert report.method.sufficiency < report.random.sufficiency
    assert report.method.curve[0] == pytest.approx(expl.probability, abs=1e-5)
    assert report.method.curve[1] == pytest.approx(0.5, abs=1e-3)  # the token read is gone: no evidence left


@pytest.mark.parametrize("method", ["gradient_x_input", "integrated_gradients", "occlusion"])
def test_signs_flip_when_the_target_label_flips(sentiment, method):
    pos = sentiment.explain(TEXT, method, target="positive")
    neg = sentiment.explain(TEXT, method, target="negative")
    assert pos.target == "positive" and neg.target == "negative"
    assert np.abs(pos.scores).max() > 0
    np.testing.assert_allclose(pos.scores, -neg.scores, atol=1e-4)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_scores_every_token_read(sentiment, method):
    expl = sentiment.explain(TEXT, method)
    assert expl.method == method and expl.target in sentiment.labels
    assert expl.scores.shape == (len(expl.tokens),) and np.isfinite(expl.scores).all()
    assert all(isinstance(t, TokenSpan) for t in expl.tokens)
    if not is_signed(method):  # attention, rollout, attention norm: weights that sum to 1
        assert (expl.scores >= 0).all() and expl.scores.sum() == pytest.approx(1.0, abs=1e-5)


def test_methods_default_and_errors(sentiment):
    assert set(METHODS) <= set(sentiment.explanation_methods)
    assert sentiment.explain(TEXT).method == default_method("sentiment")["method"] in METHODS
    with pytest.raises(ValueError, match="unknown method"):
        sentiment.explain(TEXT, "lime")
    with pytest.raises(ValueError):
        sentiment.explain("", "gradient_x_input")


def test_words_merge_subword_pieces_and_scores_add_up():
    toks = [
        TokenSpan(0, "recog", 0, 5),
        TokenSpan(1, "nises", 5, 10),
        TokenSpan(2, "it", 11, 13),
        TokenSpan(3, ",", 13, 14),
        TokenSpan(4, "wasn", 15, 19),
        TokenSpan(5, "'t", 19, 21),
    ]
    words = word_ids(toks)
    assert words.tolist() == [0, 0, 1, 2, 3, 3]
    np.testing.assert_allclose(word_scores(np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), words), [3, 3, 4, 11])
    # Byte-level pieces of one emoji share its span: one word, shown once.
    emoji = [TokenSpan(0, "it", 0, 2), TokenSpan(1, "😀", 3, 4), TokenSpan(2, "😀", 3, 4), TokenSpan(3, "😀", 3, 4)]
    assert word_ids(emoji).tolist() == [0, 1, 1, 1]


def test_variants_delete_and_keep_the_top_tokens_in_order():
    ids = list(range(100, 120))  # 20 tokens
    order = np.arange(19, -1, -1)  # the last token is the most important
    without, only = variants(ids, order, levels=(1, 50))
    assert only[0] == [119] and without[0] == ids[:-1]
    assert only[1] == ids[10:] and without[1] == ids[:10]
    assert n_top(20, 1) == 1 and n_top(20, 50) == 10 and n_top(3, 50) == 2 and n_top(1, 50) == 1


def test_faithfulness_is_scored_in_one_batched_call():
    calls = []

    def prob_fn(batch):  # p(target) = share of the key token 7 kept, over a base of 0.5
        calls.append(len(batch))
        return np.array([0.5 + 0.5 * (7 in seq) for seq in batch])

    ids = [1, 2, 3, 7, 5, 6, 8, 9, 4, 10]
    scores = np.array([0, 0, 0, 5.0, 0, 0, 0, 0, 0, 0])
    ours, rand = faithfulness(prob_fn, ids, scores)
    assert calls == [1 + 2 * 5 * 4]  # the input, and 5 levels x (without, only) for ours + 3 random rankings
    assert ours.comprehensiveness == pytest.approx(0.5) and ours.sufficiency == pytest.approx(0.0)
    assert rand.comprehensiveness < ours.comprehensiveness and rand.sufficiency > ours.sufficiency
    assert ours.curve.tolist() == [1.0, 0.5, 0.5, 0.5, 0.5, 0.5]
    (same,) = evaluate_rankings(prob_fn, ids, [np.argsort(-scores)])
    assert same.score == pytest.approx(ours.score)


def test_occlusion_equals_captums_feature_ablation_and_reports_progress(sentiment):
    """Occlusion runs its own batches (to report progress on a long review); the numbers are captum's."""
    from captum.attr import FeatureAblation

    ids, toks, _ = sentiment.encode(TEXT)
    words = word_ids(toks)
    x = torch.tensor([ids])
    seen = []
    report = lambda done, total: seen.append((done, total))  # noqa: E731
    ours = Occlusion().review(sentiment.adapter, x, target=1, words=words, progress=report).scores
    f = lambda batch: log_odds(sentiment.model(batch).logits)  # noqa: E731
    ref = FeatureAblation(f).attribute(x, baselines=0, target=1, feature_mask=torch.as_tensor(words)[None])
    pieces = np.bincount(words)[words]
    np.testing.assert_allclose(ours, ref[0].float().numpy() / pieces, atol=1e-5)
    n_words = int(words.max()) + 1
    assert seen and seen[-1] == (n_words, n_words) and [d for d, _ in seen] == sorted(d for d, _ in seen)
