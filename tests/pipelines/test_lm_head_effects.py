"""The language model's head table, made cheaper: its effects (pipelines.attention.heads.lm_effects), measured from
each head's layer on, at the last position only, a layer's heads in one batch, are the numbers of a whole pass with
that head off; its induction scores, measured in parts at once, are those of one pass."""

import numpy as np
import pytest
import torch

from pipelines.attention import heads
from pipelines.attention.passes import run_passes
from pipelines.models.adapter import OurCausalLM
from transformer import CausalLM, CausalLMConfig

IDS = [1, 7, 9, 9, 23, 4, 17, 30, 8, 7, 9, 12]


def tiny_adapter(**fields) -> OurCausalLM:
    """A random CausalLM of 3 layers x 4 query heads (2 key/value heads), its weights large enough that switching a
    head off moves the next token's log-probability by more than float noise."""
    torch.manual_seed(0)
    cfg = dict(vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, d_ff=48, n_layers=3, max_len=40) | fields
    model = CausalLM(CausalLMConfig(**cfg))
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.3)
    return OurCausalLM(model, None)


def whole_pass_effects(adapter, ids: list[int], token: int) -> tuple[float, dict]:
    """The head table's first method: every head off in a whole pass over all positions, all logits computed."""
    score = lambda masks, rows: heads.next_token_log_prob(adapter, ids, token, masks, rows)  # noqa: E731
    return heads.masked_effects(adapter, len(ids), score)


@pytest.mark.parametrize("fields", [{}, {"positions": "learned", "norm": "layernorm", "activation": "gelu"}])
def test_effects_equal_a_whole_pass_with_that_head_off(fields):
    adapter = tiny_adapter(**fields)
    token = 5
    slow_intact, slow = whole_pass_effects(adapter, IDS, token)
    reported = []
    intact, fast = heads.lm_effects(adapter, IDS, token, progress=lambda done, total: reported.append((done, total)))
    assert intact == pytest.approx(slow_intact, abs=1e-6)
    assert list(fast) == list(slow) == heads.head_keys({"causal": 3}, 4)
    for key, effect in slow.items():
        assert fast[key] == pytest.approx(effect, abs=1e-5), key
    assert sum(abs(e) > 1e-2 for e in slow.values()) >= 6  # the comparison is not of zeros
    done = [d for d, _ in reported]
    assert done == sorted(done) and reported[-1] == (12, 12) and {t for _, t in reported} == {12}


def test_a_one_token_prompt_and_the_last_layer_alone():
    adapter = tiny_adapter()
    slow_intact, slow = whole_pass_effects(adapter, IDS[:1], 3)
    intact, fast = heads.lm_effects(adapter, IDS[:1], 3)
    assert intact == pytest.approx(slow_intact, abs=1e-6)
    assert [fast[k] for k in slow] == pytest.approx(list(slow.values()), abs=1e-5)


def test_run_passes_reports_progress_in_order_on_threads():
    reported = []
    out = run_passes(lambda n: n * n, [3, 1, 2, 5], passes=2, progress=lambda d, t: reported.append((d, t)))
    assert out == [9, 1, 4, 25] and reported == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_induction_scores_in_parts_equal_one_pass():
    """The head table's induction column runs its sequences in parts at once: the same means as one pass."""
    from pipelines.attention import head_roles as roles

    model = tiny_adapter().model.eval()
    ids = roles.repeated_random_ids(50, 19, 5, 0, 1, 4)  # n = (max_len - 1) // 2 = 19
    with torch.no_grad():
        maps = model(ids, need_weights=True).attentions
    one = torch.tensor(np.stack([roles.induction_share(a, 19).mean(0) for a in maps]), dtype=torch.float32)  # (L, H)
    for passes in (1, 2, 3):
        with patch_passes(passes):
            torch.testing.assert_close(roles.induction_scores(model, n=50, batch=5), one)


def patch_passes(n: int):
    """pipelines.attention.head_roles running n passes at once, whatever the cores."""
    from unittest import mock

    return mock.patch("pipelines.attention.head_roles.at_once", lambda device: n)
