"""Continuous batching (transformer.batch_decoding): rows joining and leaving between steps each compute what they
compute alone, whatever the others' lengths, positions or head masks."""

import pytest
import torch

from transformer.batch_decoding import DecodingBatch
from transformer.causal_lm import CausalLM
from transformer.config import CausalLMConfig
from transformer.generation import lm_steps

PROMPTS = [[1, 5, 7, 9], [1, 3], [1, 4, 4, 4, 4, 4, 4, 8], [1, 2, 3]]
JOINS = {0: [0, 1], 2: [2], 3: [3]}  # step -> the rows that join then (0 and 1 of different lengths, together)
N = 6  # tokens each row decodes


def tiny(positions: str) -> CausalLM:
    torch.manual_seed(0)
    c = CausalLMConfig(
        vocab_size=50, d_model=32, n_heads=4, n_kv_heads=2, n_layers=2, d_ff=64, max_len=64, positions=positions
    )
    return CausalLM(c).eval()


def decoded_together(model, masks=None) -> dict[int, list[torch.Tensor]]:
    """Each row's logits, step by step, decoded in one DecodingBatch: rows 0 and 1 first, 2 and 3 joining later,
    each leaving after N tokens (greedy)."""
    batch, got, last = DecodingBatch(model), {k: [] for k in range(len(PROMPTS))}, {}
    for t in range(3 * N):
        if len(batch):
            for k, logits in batch.step({k: last[k] for k in batch.keys}).items():
                got[k].append(logits)
                last[k] = int(logits.argmax())
        joining = JOINS.get(t, [])
        if joining:
            logits = batch.join({k: PROMPTS[k] for k in joining}, masks)
            for k in joining:
                got[k].append(logits[k])
                last[k] = int(logits[k].argmax())
        for k in [k for k in batch.keys if len(got[k]) == N]:
            batch.leave(k)
    assert len(batch) == 0 and batch.cache is None
    return got


@pytest.mark.parametrize("positions", ["rotary", "learned"])
def test_each_row_decodes_as_it_does_alone_whoever_joins_or_leaves(positions):
    model = tiny(positions)
    got = decoded_together(model)
    for k, prompt in enumerate(PROMPTS):
        alone = [s.logits for s in lm_steps(model, prompt, N, stop_ids=())]
        assert [int(x.argmax()) for x in got[k]] == [int(x.argmax()) for x in alone]
        for together, by_itself in zip(got[k], alone, strict=True):
            torch.testing.assert_close(together, by_itself, atol=1e-5, rtol=0)


def test_a_rows_head_mask_switches_its_heads_off_and_no_one_elses():
    model = tiny("rotary")
    masks = {k: None for k in range(len(PROMPTS))}
    masks[1], masks[2] = torch.ones(2, 4), torch.ones(2, 4)  # row 1 joins beside row 0 (no mask), row 2 alone
    masks[1][0, 1] = masks[2][1, 0] = masks[2][0, 3] = 0.0
    got = decoded_together(model, masks)
    for k, prompt in enumerate(PROMPTS):
        alone = [s.logits for s in lm_steps(model, prompt, N, stop_ids=(), head_mask=masks[k])]
        for together, by_itself in zip(got[k], alone, strict=True):
            torch.testing.assert_close(together, by_itself, atol=1e-5, rtol=0)
    for k in (1, 2):
        unmasked = [s.logits for s in lm_steps(model, PROMPTS[k], N, stop_ids=())]
        assert (got[k][0] - unmasked[0]).abs().max() > 1e-3  # the mask did something


def test_the_padding_no_row_reads_goes_with_the_row_that_needed_it():
    model = tiny("rotary")
    batch = DecodingBatch(model)
    batch.join({"short": [1, 2], "long": [1, 2, 3, 4, 5, 6, 7]})
    batch.join({"middle": [1, 2, 3, 4]})
    assert batch.key_mask.tolist() == [[False] * 5 + [True] * 2, [True] * 7, [False] * 3 + [True] * 4]
    assert batch.next_position.tolist() == [2, 7, 4]
    batch.step({"short": 3, "long": 8, "middle": 5})
    batch.leave("middle")
    batch.leave("long")
    assert batch.key_mask.tolist() == [[True] * 3] and batch.cache.self_kv[0][0].shape[2] == 3
    assert batch.next_position.tolist() == [3]
    with pytest.raises(KeyError, match="every row steps together"):
        batch.join({"other": [1]})
        batch.step({"short": 4})
