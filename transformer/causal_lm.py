"""CausalLM: a decoder-only transformer (GPT, Llama) that returns its attention, read like nanoGPT's model.py.

Llama's choices by default: grouped key/value heads, rotary positions, RMSNorm, SwiGLU, pre-norm, tied embeddings.
`CausalLM.from_llama` loads a Llama-architecture checkpoint into it (transformer/llama.py);
tests/transformer/test_llama.py checks logits, hidden states and every head's attention against `transformers`.
"""

from dataclasses import dataclass

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from .config import CausalLMConfig
from .decoder import DecoderCache
from .embeddings import Positions, Rotary, on_meta
from .head_mask import StackMask, layer_mask
from .hooks import Hooked, HookPoint, HookRegistry
from .hub import HUB_KWARGS, ShardedWeights
from .layers import Block, norm
from .legacy_names import accept_old_names
from .stack import WeightViews


@dataclass
class CausalLMOutput:
    logits: torch.Tensor  # (B, T, V) the next token's logits after each position
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, T, Tk) every query head, when need_weights
    cache: DecoderCache | None = None  # per layer (k, v) (B, Hkv, Tk, hs) after rotation, when use_cache


class CausalLM(
    nn.Module, Hooked, WeightViews, ShardedWeights, PyTorchModelHubMixin, pipeline_tag="text-generation", **HUB_KWARGS
):
    """Token embeddings, n_layers pre-norm blocks of causal self-attention, a final norm and the output projection
    (tied to the embeddings). Hook points: hook_embed, blocks.{l}.* (transformer.layers.Block, its attn.* and
    mlp.hook_post), hook_final (the final norm's output)."""

    def __init__(self, config: CausalLMConfig):
        super().__init__()
        self.config = c = config
        # Built on the meta device (llama.from_state: the weights come from a checkpoint), nothing is initialised:
        # an embedding's random init there imports torch._dynamo (1 s), the rest is work thrown away.
        blank = on_meta()
        given = torch.empty(c.vocab_size, c.d_model) if blank else None  # (V, D), on the meta device
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model, _weight=given)
        self.positions = Positions(c.positions, c.max_len, c.d_model) if c.positions != "rotary" else None
        self.dropout = nn.Dropout(c.dropout)
        self.rotary = Rotary(c.head_dim, c.rope_base) if c.positions == "rotary" else None
        self.blocks = nn.ModuleList(Block(c, rotary=self.rotary) for _ in range(c.n_layers))
        self.final_norm = norm(c)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight
        if not blank:
            self.apply(self._init_weights)
            for name, p in self.named_parameters():  # GPT-2: residual projections scaled by the depth
                if name.endswith(("o_proj.weight", "down.weight")):
                    nn.init.normal_(p, std=0.02 / (2 * c.n_layers) ** 0.5)
        self.hook_embed, self.hook_final = HookPoint(), HookPoint()
        self.hook_registry = HookRegistry().bind(self)
        accept_old_names(self)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    @property
    def W_U(self) -> torch.Tensor:
        """(D, V) the unembedding."""
        return self.lm_head.weight.T

    def embed(self, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """ids (B, T) -> (B, T, D) what the first block reads (hook_embed): token vectors, plus positions unless they
        are rotary (those are applied inside each block)."""
        return self.from_token_vectors(self.tok_emb(ids), offset)

    def from_token_vectors(self, tok: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """tok (B, T, D) token vectors (what attribution differentiates) -> what the first block reads."""
        x = self.positions(tok, offset=offset) if self.positions is not None else tok
        return self.hook_embed(self.dropout(x))

    def forward(
        self,
        ids: torch.Tensor,
        need_weights: bool = False,
        head_mask: StackMask = None,
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        positions: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> CausalLMOutput:
        """ids (B, T): the whole sequence, or with a cache only the new tokens -> CausalLMOutput.
        head_mask: per layer (H,) or (B, H) multipliers on each query head's output, this call only.
        Rows decoded together, each at its own length (transformer.batch_decoding): positions (B, T) each new token's
        own position (default: the cache's length on), key_mask (B, Tk) bool, True = attend, over the cache's keys
        and the new ones (False: a row's left padding)."""
        past = cache.length if cache is not None else 0
        end = int(positions.max()) + 1 if positions is not None else past + ids.size(1)
        if end > self.config.max_len:
            raise ValueError(f"{end} positions: longer than max_len {self.config.max_len}")
        resid = self.embed(ids, past if positions is None else positions)
        return self.forward_from(0, resid, head_mask, cache, use_cache, need_weights, positions=positions,
                                 key_mask=key_mask)  # fmt: skip

    def forward_from(
        self,
        layer: int,
        resid: torch.Tensor,
        head_mask: StackMask = None,
        cache: DecoderCache | None = None,
        use_cache: bool = False,
        need_weights: bool = False,
        last_only: bool = False,
        positions: torch.Tensor | None = None,
        key_mask: torch.Tensor | None = None,
    ) -> CausalLMOutput:
        """resid (B, T, D): what block `layer` reads (blocks.{layer}.hook_resid_pre; hook_embed's for 0) -> the output
        of the blocks from `layer` on; the blocks below are not run (a cache, when given, holds these blocks only).
        head_mask is indexed by the model's layer numbers. last_only: logits (B, 1, V) after the last position alone,
        where the last block asks one query and the output projection reads one row (whole sequences, no cache).
        positions and key_mask: as forward's."""
        past = cache.length if cache is not None else 0
        rope = self.rotary_angles(resid.size(1), past, resid.device, positions)
        mask = key_mask[:, None, None, :] if key_mask is not None else None  # (B, 1, 1, Tk)
        out = CausalLMOutput(None, [], DecoderCache() if use_cache else None)
        last_alone = last_only and resid.size(1) > 1 and layer < len(self.blocks) and key_mask is None
        x, stop = resid, len(self.blocks) - 1 if last_alone else len(self.blocks)
        for i in range(layer, stop):
            past_kv = cache.self_kv[i - layer] if cache is not None else None
            modes = dict(mask=mask, need_weights=need_weights, past_kv=past_kv, head_mask=layer_mask(head_mask, i))
            step = self.blocks[i](x, causal=True, rope=rope, **modes)
            x = step.x
            out.attentions.append(step.weights)
            if use_cache:
                out.cache.self_kv.append(step.kv)
        if last_alone:
            x = last_query(self.blocks[-1], x, layer_mask(head_mask, len(self.blocks) - 1))  # (B, 1, D)
        elif last_only:
            x = x[:, -1:]
        out.logits = self.lm_head(self.hook_final(self.final_norm(x)))  # (B, T, V)
        out.attentions = out.attentions if need_weights else None
        return out

    def rotary_angles(self, T: int, past: int, device, positions: torch.Tensor | None = None):
        """The rotary (cos, sin) of T new tokens at positions past .. past + T - 1, (T, hs) each, or at each row's own
        positions (B, T) (then (B, 1, T, hs)); None without rotary positions."""
        if self.rotary is None:
            return None
        return self.rotary.cos_sin(T, past, device) if positions is None else self.rotary.cos_sin_at(positions)

    @classmethod
    def from_llama(cls, folder_or_repo_id: str, sha256: str | None = None) -> "CausalLM":
        """A Llama-architecture checkpoint (config.json + safetensors with `transformers`' names: SmolLM2, TinyLlama,
        Llama) in this model; `sha256` checks the weights file first. See transformer/llama.py."""
        from .llama import from_llama

        return from_llama(cls, folder_or_repo_id, sha256)


def last_query(block: Block, x: torch.Tensor, head_mask: torch.Tensor | None = None) -> torch.Tensor:
    """x (B, T, D) into `block` -> the block's output at the last position only (B, 1, D): the earlier positions give
    their keys and values (as a cache would), the last one alone asks its query and runs the feed-forward. The block's
    hook points see the last position only."""
    h = block.attn_norm(x[:, :-1])  # (B, T - 1, D)
    _, k, v = block.attn.keys_values(h)  # (B, Hkv, T - 1, hs) twice, the keys rotated: as a cache holds them
    # the last query's rotation follows the cached positions (Attention.keys_values)
    return block(x[:, -1:], past_kv=(k, v), head_mask=head_mask, causal=True).x  # (B, 1, D)
