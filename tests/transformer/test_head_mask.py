"""The per-call head mask: a multiplier on each head's output before the output projection."""

import copy

import pytest
import torch
import torch.nn.functional as F

from transformer import (
    Attention,
    ClassifierConfig,
    HeadMasks,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    TransformerClassifier,
    beam_search,
    greedy_decode,
)

H = 4


def classifier(norm_first: bool = False) -> TransformerClassifier:
    torch.manual_seed(0)
    cfg = ClassifierConfig(vocab_size=50, d_model=16, n_heads=H, n_layers=2, d_ff=32, max_len=32, norm_first=norm_first)
    return TransformerClassifier(cfg).eval()


def seq2seq() -> Seq2SeqTransformer:
    torch.manual_seed(0)
    cfg = Seq2SeqConfig(vocab_size=50, d_model=16, n_heads=H, n_encoder_layers=2, n_decoder_layers=2, d_ff=32)
    return Seq2SeqTransformer(cfg).eval()


def ids(B: int = 2, T: int = 7) -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randint(4, 50, (B, T))


def zero_slice_of_out_proj_input(attn: Attention, head: int):
    """A forward pre-hook that zeroes head `head`'s slice of out_proj's input (the reference for a mask of 0)."""
    hs = attn.head_dim

    def hook(_module, args):
        x = args[0].clone()
        x[..., head * hs : (head + 1) * hs] = 0.0
        return (x,)

    return attn.o_proj.register_forward_pre_hook(hook)


@pytest.mark.parametrize("need_weights", [False, True])
def test_mask_of_ones_gives_exactly_the_intact_output(need_weights):
    attn = Attention(16, H).eval()
    x = torch.randn(2, 5, 16)
    assert torch.equal(attn(x, head_mask=torch.ones(H)).output, attn(x).output)
    assert torch.equal(attn(x, head_mask=torch.ones(2, H)).output, attn(x).output)
    model = classifier()
    intact = model(ids(), need_weights=need_weights)
    masked = model(ids(), need_weights=need_weights, head_mask=torch.ones(2, H))
    assert torch.equal(intact.logits, masked.logits)
    s2s = seq2seq()
    ones = HeadMasks(torch.ones(2, H), torch.ones(2, 2, H), torch.ones(2, H))  # (L, H), (L, B, H), (L, H)
    src, tgt = ids(), ids(T=5)
    assert torch.equal(s2s(src, tgt, need_weights).logits, s2s(src, tgt, need_weights, head_mask=ones).logits)


def residual_only_by_hand(layer, x: torch.Tensor) -> torch.Tensor:
    """An encoder block whose heads are all off: attention adds only o_proj's bias, then the feed-forward."""
    ff = layer.mlp
    ln = lambda norm, v: F.layer_norm(v, v.shape[-1:], norm.weight, norm.bias, norm.eps)  # noqa: E731
    mlp = lambda v: F.linear(F.relu(F.linear(v, ff.up.weight, ff.up.bias)), ff.down.weight, ff.down.bias)  # noqa: E731
    bias = layer.attn.o_proj.bias
    if layer.norm_first:
        y = x + bias
        return y + mlp(ln(layer.mlp_norm, y))
    y = ln(layer.attn_norm, x + bias)
    return ln(layer.mlp_norm, y + mlp(y))


@pytest.mark.parametrize("norm_first", [False, True])
def test_every_head_off_leaves_only_the_residual_path(norm_first):
    model = classifier(norm_first)
    enc = model.encoder
    x0 = enc.positions(model.tok_emb(ids()) * enc.scale)  # what the first layer reads (eval: no dropout)
    expected = x0
    for layer in enc.blocks:
        expected = residual_only_by_hand(layer, expected)
    expected = enc.final_norm(expected)
    off = torch.zeros(len(enc.blocks), H)
    out = enc(model.tok_emb(ids()), None, head_mask=off)
    hidden = out.memory if hasattr(out, "memory") else out[0]
    torch.testing.assert_close(hidden, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layer,head", [(0, 1), (1, 3)])
def test_one_head_off_equals_zeroing_its_slice_of_the_output_projection_input(layer, head):
    model = classifier()
    mask = torch.ones(2, H)
    mask[layer, head] = 0.0
    masked = model(ids(), head_mask=mask).logits
    handle = zero_slice_of_out_proj_input(model.encoder.blocks[layer].attn, head)
    try:
        reference = model(ids()).logits
    finally:
        handle.remove()
    torch.testing.assert_close(masked, reference, rtol=0, atol=1e-6)
    assert not torch.allclose(masked, model(ids()).logits)  # the head mattered, and nothing stayed off


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_one_head_off_in_the_translator(kind):
    model = seq2seq()
    mask = torch.ones(2, H)
    mask[1, 2] = 0.0
    masked = model(ids(), ids(T=5), head_mask=HeadMasks(**{kind: mask})).logits
    module = {
        "encoder": model.encoder.blocks[1].attn,
        "decoder": model.decoder.blocks[1].attn,
        "cross": model.decoder.blocks[1].cross_attn,
    }[kind]
    handle = zero_slice_of_out_proj_input(module, 2)
    try:
        reference = model(ids(), ids(T=5)).logits
    finally:
        handle.remove()
    torch.testing.assert_close(masked, reference, rtol=0, atol=1e-6)


def test_a_mask_per_row_equals_running_each_row_alone():
    model = classifier()
    batch = ids(B=2)
    per_row = torch.ones(2, 2, H)  # (L, B, H)
    per_row[0, 0, 1] = 0.0  # row 0: layer 1 head 2 off
    per_row[1, 1, 3] = 0.0  # row 1: layer 2 head 4 off
    together = model(batch, head_mask=per_row).logits
    for b in range(2):
        alone = model(batch[b : b + 1], head_mask=per_row[:, b]).logits
        torch.testing.assert_close(together[b : b + 1], alone, rtol=0, atol=1e-6)


def test_a_mask_scales_a_head_and_rejects_the_wrong_shape():
    attn = Attention(16, H).eval()
    x = torch.randn(1, 5, 16)
    half = attn(x, head_mask=torch.tensor([0.5, 1.0, 1.0, 1.0])).output
    off = attn(x, head_mask=torch.tensor([0.0, 1.0, 1.0, 1.0])).output
    torch.testing.assert_close(half, (attn(x).output + off) / 2, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="head mask"):
        attn(x, head_mask=torch.ones(3))


@pytest.mark.parametrize("beam", [1, 3])
def test_decoding_with_heads_off_follows_the_masked_model(beam):
    """Cached step-by-step decoding applies the mask at every step: greedy output is the argmax of the
    masked model under teacher forcing, and beam search with a mask differs from without only through it."""
    model = seq2seq()
    off = torch.ones(2, H)
    off[0, :3] = 0.0
    masks = HeadMasks(encoder=off, decoder=off, cross=off)
    src = ids(B=2)
    if beam == 1:
        hyps = greedy_decode(model, src, max_len=6, head_mask=masks)
        for b, hyp in enumerate(hyps):
            tgt_in = torch.tensor([[model.config.bos_id] + hyp.tokens])
            logits = model(src[b : b + 1], tgt_in, head_mask=masks).logits[0, : len(hyp.tokens)]
            assert logits.argmax(-1).tolist() == hyp.tokens
    else:
        masked = beam_search(model, src, beam_size=beam, max_len=6, head_mask=masks)
        ones = beam_search(model, src, beam_size=beam, max_len=6, head_mask=HeadMasks(torch.ones(2, H)))
        intact = beam_search(model, src, beam_size=beam, max_len=6)
        assert [h.tokens for h in ones] == [h.tokens for h in intact]
        eos = model.config.eos_id
        for b, hyp in enumerate(masked):  # the score is the masked model's log-probability of its output
            produced = hyp.tokens + ([eos] if hyp.finished else [])
            tgt_in = torch.tensor([[model.config.bos_id] + produced[:-1]])
            with torch.no_grad():
                logp = model(src[b : b + 1], tgt_in, head_mask=masks).logits.log_softmax(-1)[0]
            expected = logp.gather(-1, torch.tensor(produced)[:, None]).sum()
            assert hyp.score == pytest.approx(float(expected), abs=1e-4)


def test_beam_search_with_a_mask_per_row_equals_each_row_alone():
    model = seq2seq()
    src = ids(B=2)
    per_row = torch.ones(2, 2, H)  # (L, B, H): row 0 loses three heads of layer 1, row 1 keeps all
    per_row[0, 0, :3] = 0.0
    masks = HeadMasks(encoder=per_row, decoder=per_row, cross=per_row)
    together = beam_search(model, src, beam_size=3, max_len=6, head_mask=masks)
    row0 = HeadMasks(*(per_row[:, 0] for _ in range(3)))
    alone = beam_search(model, src[:1], beam_size=3, max_len=6, head_mask=row0)[0]
    assert together[0].tokens == alone.tokens and together[0].score == pytest.approx(alone.score, abs=1e-4)
    intact = beam_search(model, src[1:], beam_size=3, max_len=6)[0]
    assert together[1].tokens == intact.tokens and together[1].score == pytest.approx(intact.score, abs=1e-4)


def test_the_mask_is_not_stored_in_the_model():
    model = classifier()
    before = copy.deepcopy(model.state_dict())
    intact = model(ids()).logits
    model(ids(), head_mask=torch.zeros(2, H))
    assert torch.equal(model(ids()).logits, intact)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


@pytest.mark.parametrize("layer", [0, 1])
def test_running_again_from_a_layer_equals_the_whole_pass(layer):
    """Heads off in layer `layer` change nothing before it: the layers from it on, run on what it read in the intact
    pass (blocks.{l}.hook_resid_pre), give the logits of the whole masked pass, padding included."""
    model = classifier()
    batch = ids(B=2)
    batch[1, -2:] = model.config.pad_id
    out, cache = model.run_with_cache(batch, names=lambda n: n.endswith(("hook_resid_pre", "attn.hook_z")))
    hidden = [cache[f"blocks.{i}.hook_resid_pre"] for i in range(2)]
    heads = [cache[f"blocks.{i}.attn.hook_z"] for i in range(2)]
    assert len(cache) == 4 and hidden[0].shape == (2, 7, 16)
    mask = torch.ones(2, 2, H)  # (L, B, H)
    mask[layer, 0, 1] = 0.0
    mask[layer, 1, 3] = 0.0
    again = model.forward_from(layer, hidden[layer], batch, head_mask=mask).logits
    whole = model(batch, head_mask=mask).logits
    torch.testing.assert_close(again, whole, rtol=0, atol=1e-6)
    # and it is not the intact result: the masked heads were applied
    assert not torch.allclose(again, out.logits, atol=1e-4)
    # The layer's own heads need not attend again either: mixing what they computed in the intact pass is the same
    assert heads[layer].shape == (2, 7, H, 16 // H)
    mixed = model.forward_from(layer, hidden[layer], batch, head_mask=mask, z=heads[layer]).logits
    torch.testing.assert_close(mixed, whole, rtol=0, atol=1e-6)
    # what is mixed is what counts: another layer's heads in their place give another answer
    other = model.forward_from(layer, hidden[layer], batch, head_mask=mask, z=heads[1 - layer]).logits
    assert not torch.allclose(other, whole, atol=1e-4)
