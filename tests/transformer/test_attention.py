import pytest
import torch
from torch import nn

from transformer import Attention, causal_mask, padding_mask

D, H = 32, 4


def _copy_from_torch(mha: Attention, ref: nn.MultiheadAttention) -> None:
    wq, wk, wv = ref.in_proj_weight.chunk(3)
    bq, bk, bv = ref.in_proj_bias.chunk(3)
    with torch.no_grad():
        for lin, w, b in ((mha.q_proj, wq, bq), (mha.k_proj, wk, bk), (mha.v_proj, wv, bv)):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
        mha.o_proj.weight.copy_(ref.out_proj.weight)
        mha.o_proj.bias.copy_(ref.out_proj.bias)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("kind", ["self", "cross", "causal"])
def test_matches_torch_multihead_attention(kind, need_weights):
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    mha = Attention(D, H).eval()
    _copy_from_torch(mha, ref)
    B, Tq = 3, 5
    Tk = 7 if kind == "cross" else Tq
    q = torch.randn(B, Tq, D)
    kv = torch.randn(B, Tk, D) if kind == "cross" else q
    lengths = torch.tensor([Tk, Tk - 2, 1])
    keep = torch.arange(Tk)[None] < lengths[:, None]  # (B, Tk) True = real key
    mask = keep[:, None, None, :]
    torch_attn_mask = None
    if kind == "causal":
        mask = mask & causal_mask(Tq, Tk)
        torch_attn_mask = ~causal_mask(Tq, Tk)[0, 0]  # torch: True = NOT allowed
    out = mha(q, None if kind != "cross" else kv, mask=mask, need_weights=need_weights)
    ref_out, ref_w = ref(q, kv, kv, key_padding_mask=~keep, attn_mask=torch_attn_mask, average_attn_weights=False)
    # torch gives NaN for rows with no visible key; none here since every row sees key 0.
    torch.testing.assert_close(out.output, ref_out, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(out.weights, ref_w, atol=1e-5, rtol=1e-5)


def _inputs(B=2, T=6):
    x = torch.randn(B, T, D)
    ids = torch.tensor([[5, 6, 7, 8, 0, 0], [5, 6, 7, 8, 9, 10]])[:B, :T]
    return x, padding_mask(ids, 0)


def test_fast_path_equals_explicit_path():
    mha = Attention(D, H).eval()
    x, mask = _inputs()
    mask = mask & causal_mask(6, 6)
    fast = mha(x, mask=mask)
    slow = mha(x, mask=mask, need_weights=True)
    assert fast.weights is None
    torch.testing.assert_close(fast.output, slow.output, atol=1e-5, rtol=1e-5)


def test_weights_rows_sum_to_one_and_masked_keys_get_exactly_zero():
    mha = Attention(D, H).eval()
    x, mask = _inputs()
    w = mha(x, mask=mask, need_weights=True).weights  # (B, H, T, T)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, H, 6))
    assert (w[0, :, :, 4:] == 0).all()  # padding keys of the first row
    assert (w[1] > 0).all()


def test_causal_rows_never_see_the_future():
    mha = Attention(D, H).eval()
    x = torch.randn(1, 6, D)
    w = mha(x, mask=causal_mask(6, 6), need_weights=True).weights[0]  # (H, T, T)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    assert (w[:, future] == 0).all()
    # Changing a future token does not change earlier outputs.
    x2 = x.clone()
    x2[0, 4] += 1.0
    a = mha(x, mask=causal_mask(6, 6)).output
    b = mha(x2, mask=causal_mask(6, 6)).output
    torch.testing.assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4], b[:, 4])


def test_fully_masked_row_gives_zeros_not_nan():
    mha = Attention(D, H).eval()
    x = torch.randn(1, 4, D)
    mask = torch.zeros(1, 1, 4, 4, dtype=torch.bool)
    mask[..., 1:, :] = True  # query 0 sees nothing
    for need in (False, True):
        out = mha(x, mask=mask, need_weights=need)
        assert not torch.isnan(out.output).any()
        if need:
            assert (out.weights[0, :, 0] == 0).all()
    torch.testing.assert_close(mha(x, mask=mask).output, mha(x, mask=mask, need_weights=True).output)


def test_causal_mask_with_cache_offset():
    m = causal_mask(2, 5)[0, 0]  # the last two of five positions
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_explicit_path_gradients_equal_the_fast_path():
    """The explicit path works partly in place (less memory for long batches); gradients must not notice."""
    attn = Attention(16, 4).eval()
    x = torch.randn(2, 5, 16)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None, :]
    grads = []
    for need_weights in (False, True):
        xi = x.clone().requires_grad_()
        attn(xi, mask=mask, need_weights=need_weights).output.square().sum().backward()
        grads.append(xi.grad)
    torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=1e-5)


class _Calls(torch.overrides.TorchFunctionMode):
    """Records the name of every torch function called inside the block."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def test_an_unpadded_input_fills_no_mask_and_gives_the_same_weights():
    """With every key real, the maps come without filling the all-True padding mask (it took a third of the
    forward that returns the maps); a padded batch is still masked."""
    mha = Attention(D, H).eval()
    x = torch.randn(2, 6, D)
    full = padding_mask(torch.ones(2, 6, dtype=torch.long), 0)  # (B, 1, 1, T) all True
    with torch.no_grad(), _Calls() as calls:
        out = mha(x, mask=full, need_weights=True)
    assert not [n for n in calls.names if n.startswith("masked_fill")]
    plain = mha(x, mask=None, need_weights=True)
    torch.testing.assert_close(out.weights, plain.weights)
    torch.testing.assert_close(out.output, plain.output)
    padded = padding_mask(torch.tensor([[1, 1, 1, 1, 0, 0]] * 2), 0)
    with torch.no_grad():
        weights = mha(x, mask=padded, need_weights=True).weights
    assert (weights[..., 4:] == 0).all()
