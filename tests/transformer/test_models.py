import pytest
import torch

from transformer import (
    ClassifierConfig,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    TransformerClassifier,
    beam_search,
    greedy_decode,
)


def small_classifier(**kw):
    cfg = ClassifierConfig(vocab_size=50, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=128, **kw)
    return TransformerClassifier(cfg).eval()


def small_seq2seq(**kw):
    cfg = Seq2SeqConfig(
        vocab_size=40, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64, max_len=64, **kw
    )
    return Seq2SeqTransformer(cfg).eval()


@pytest.mark.parametrize("pooling", ["mean", "attention"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("ngram_buckets", [0, 101])
def test_padding_does_not_change_classifier_logits(pooling, norm_first, ngram_buckets):
    model = small_classifier(pooling=pooling, norm_first=norm_first, ngram_buckets=ngram_buckets)
    if model.pool_query is not None:
        torch.nn.init.normal_(model.pool_query)  # not the uniform start, so the test means something
    ids = torch.randint(3, 50, (2, 12))
    padded = torch.cat([ids, torch.zeros(2, 50, dtype=torch.long)], dim=1)
    a = model(ids, need_weights=True)
    b = model(padded, need_weights=True)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-5, rtol=1e-5)
    assert (b.pool_weights[:, 12:] == 0).all()
    torch.testing.assert_close(b.pool_weights.sum(-1), torch.ones(2))
    assert len(b.attentions) == 2 and b.attentions[0].shape == (2, 4, 62, 62)


def test_classifier_fast_and_explicit_paths_agree():
    model = small_classifier(ngram_buckets=97)
    ids = torch.randint(3, 50, (3, 20))
    ids[0, 15:] = 0
    torch.testing.assert_close(model(ids).logits, model(ids, need_weights=True).logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_cached_decoding_equals_full_recomputation(positions):
    model = small_seq2seq(positions=positions)
    src = torch.randint(3, 40, (2, 9))
    src[1, 6:] = 0
    tgt = torch.cat([torch.ones(2, 1, dtype=torch.long), torch.randint(3, 40, (2, 7))], dim=1)
    enc = model.encode(src)
    full = model.decode(tgt, enc, need_weights=True)
    cache, steps, cross = None, [], []
    for t in range(tgt.size(1)):
        out = model.decode(tgt[:, t : t + 1], enc, cache=cache, use_cache=True, need_weights=True)
        cache = out.cache
        steps.append(out.logits)
        cross.append(out.cross_attentions[-1])
    torch.testing.assert_close(torch.cat(steps, 1), full.logits, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat(cross, 2), full.cross_attentions[-1], atol=1e-5, rtol=1e-5)
    assert (full.cross_attentions[0][1, :, :, 6:] == 0).all()  # padded source keys


def test_beam_size_one_equals_greedy():
    model = small_seq2seq()
    src = torch.randint(3, 40, (4, 8))
    greedy = greedy_decode(model, src, max_len=12)
    beam = beam_search(model, src, beam_size=1, max_len=12)
    assert [g.tokens for g in greedy] == [b.tokens for b in beam]
    for g, b in zip(greedy, beam):
        assert g.score == pytest.approx(b.score, abs=1e-4)


@torch.no_grad()
def test_beam_search_scores_are_the_hypotheses_log_probs():
    model = small_seq2seq()
    src = torch.randint(3, 40, (3, 8))
    beam = beam_search(model, src, beam_size=5, alpha=0.0, max_len=10)
    enc = model.encode(src)
    for i, hyp in enumerate(beam):
        # Rescoring the hypothesis with teacher forcing gives the score beam search reported.
        ids = [model.config.bos_id] + hyp.tokens
        eos = len(hyp.tokens) < 10
        target = hyp.tokens + ([model.config.eos_id] if eos else [])
        logits = model.decode(torch.tensor([ids]), type(enc)(enc.memory[i : i + 1], enc.src_mask[i : i + 1])).logits
        logp = logits[0, : len(target)].log_softmax(-1).gather(1, torch.tensor(target)[:, None]).sum()
        assert hyp.score == pytest.approx(float(logp), abs=1e-4)


@pytest.mark.parametrize("make", [small_classifier, small_seq2seq])
def test_gradients_reach_every_parameter(make):
    model = make(ngram_buckets=31, pooling="attention") if make is small_classifier else make()
    model.train()
    if make is small_classifier:
        loss = model(torch.randint(3, 50, (2, 10))).logits.sum()
    else:
        loss = model(torch.randint(3, 40, (2, 7)), torch.randint(3, 40, (2, 5))).logits.sum()
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing, missing


def test_tied_embeddings_share_one_matrix():
    model = small_seq2seq()
    assert model.lm_head.weight is model.src_emb.weight is model.tgt_emb.weight


def test_ngram_dropout_acts_in_training_only():
    model = small_classifier(ngram_buckets=101, ngram_dropout=0.5)
    ids = torch.randint(3, 50, (2, 12))
    emb = model.ngram_emb
    torch.testing.assert_close(emb(ids), emb(ids))  # eval: deterministic, nothing dropped
    emb.train()
    a, b = emb(ids), emb(ids)
    assert not torch.allclose(a, b)
    assert (emb(ids) == 0).all(-1).any()  # some positions lose their n-grams entirely (orders 2 and 3 both dropped)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_hypotheses_say_whether_they_reached_eos(beam_size):
    model = small_seq2seq()
    src = torch.randint(3, 40, (4, 8))
    decode = greedy_decode if beam_size == 1 else lambda m, s, max_len: beam_search(m, s, beam_size, max_len=max_len)
    for max_len in (2, 30):
        for hyp in decode(model, src, max_len=max_len):
            # Stopped by EOS: fewer tokens than the limit; cut by the limit: exactly max_len tokens.
            assert hyp.finished == (len(hyp.tokens) < max_len)
