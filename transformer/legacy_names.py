"""The parameter names of the models before the one-core rewrite, mapped to today's, so that the files already shipped
and published (assets/, the Hub, training checkpoints) keep loading: a load_state_dict pre-hook on each model renames
an old key before torch matches the keys."""

import re

import torch

# In order; each (pattern, replacement) runs on every key. Old: encoder and decoder layers (`layers.N.`) with
# self_attn / cross_attn (out_proj), res_attn / res_self / res_cross / res_ff norms and ff.net.0 / ff.net.3; the
# decoder-only model's `layers.N.` blocks, its `norm` and attn_norm / attn / mlp_norm / mlp (already today's names).
RULES = [
    (r"layers\.(\d+)\.", r"blocks.\1."),
    (r"\.self_attn\.out_proj\.", ".attn.o_proj."),
    (r"\.self_attn\.", ".attn."),
    (r"\.cross_attn\.out_proj\.", ".cross_attn.o_proj."),
    (r"\.res_attn\.norm\.", ".attn_norm."),
    (r"\.res_self\.norm\.", ".attn_norm."),
    (r"\.res_cross\.norm\.", ".cross_norm."),
    (r"\.res_ff\.norm\.", ".mlp_norm."),
    (r"\.ff\.net\.0\.", ".mlp.up."),
    (r"\.ff\.net\.3\.", ".mlp.down."),
    (r"\.mlp\.net\.0\.", ".mlp.up."),
    (r"\.mlp\.net\.3\.", ".mlp.down."),
    (r"^norm\.", "final_norm."),
    (r"^model\.norm\.", "model.final_norm."),  # the same inside the transformers wrapper (training/release)
]
# The same renames as `transformers`' from_pretrained(key_mapping=...) takes them (one capture group at most, \1)
KEY_MAPPING = dict(RULES)
COMPILED = [(re.compile(p), r) for p, r in RULES]
OLD_MARKS = ("layers.", "norm.")  # every old file has keys with one of these; today's have neither at the start


def today_name(key: str) -> str:
    for pattern, replacement in COMPILED:
        key = pattern.sub(replacement, key)
    return key


def is_old(state: dict) -> bool:
    return any(".layers." in k or k.startswith(OLD_MARKS) for k in state)


def rename_old_keys(module, state: dict[str, torch.Tensor], prefix: str, *args) -> None:
    """A load_state_dict pre-hook: old names in `state` (under `prefix`) renamed in place to today's."""
    if not is_old(state):
        return
    for key in [k for k in state if k.startswith(prefix)]:
        new = prefix + today_name(key[len(prefix) :])
        if new != key:
            state[new] = state.pop(key)


def accept_old_names(model: torch.nn.Module) -> None:
    model._register_load_state_dict_pre_hook(rename_old_keys, with_module=True)
