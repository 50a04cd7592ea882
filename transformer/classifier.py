"""TransformerClassifier: an encoder with pooling over real tokens and a linear head."""

from dataclasses import dataclass

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from .config import ClassifierConfig
from .embeddings import HashedNgramEmbedding, token_embedding
from .encoder import Encoder
from .head_mask import StackMask
from .hooks import Hooked, HookRegistry
from .hub import HUB_KWARGS, ShardedWeights
from .legacy_names import accept_old_names
from .masks import padding_mask


@dataclass
class ClassifierOutput:
    logits: torch.Tensor  # (B, num_labels)
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, T, T), when need_weights
    pool_weights: torch.Tensor | None = None  # (B, T): how much each token contributes to the pooled vector


class TransformerClassifier(
    nn.Module, Hooked, ShardedWeights, PyTorchModelHubMixin, pipeline_tag="text-classification", **HUB_KWARGS
):
    """Sequence classifier. Padding never changes a prediction: keys and the pooling both skip it.
    Hook points: hook_embed, blocks.{l}.* (transformer.layers.Block), hook_final (the encoder's output)."""

    def __init__(self, config: ClassifierConfig):
        super().__init__()
        self.config = c = config
        self.tok_emb = token_embedding(c.vocab_size, c.d_model, c.pad_id)
        self.ngram_emb = None
        if c.ngram_buckets:
            self.ngram_emb = HashedNgramEmbedding(
                c.ngram_buckets, c.ngram_order, c.ngram_dim, c.d_model, c.ngram_dropout
            )
        self.encoder = Encoder(c, c.n_layers)
        self.pool_query = nn.Parameter(torch.zeros(c.d_model)) if c.pooling == "attention" else None
        # BERT's pooler: the first token ([CLS]) through a dense layer and tanh, before the head.
        self.pooler = nn.Sequential(nn.Linear(c.d_model, c.d_model), nn.Tanh()) if c.pooling == "cls" else None
        self.head = nn.Sequential(nn.Dropout(c.dropout), nn.Linear(c.d_model, c.num_labels))
        self.hook_registry = HookRegistry().bind(self, strip="encoder.")
        accept_old_names(self)

    # Weight views (TransformerLens's names): the encoder's, and the classifier's output weights as W_U (D, C), b_U (C,)
    W_Q = property(lambda self: self.encoder.W_Q)
    W_K = property(lambda self: self.encoder.W_K)
    W_V = property(lambda self: self.encoder.W_V)
    W_O = property(lambda self: self.encoder.W_O)
    b_O = property(lambda self: self.encoder.b_O)
    W_U = property(lambda self: self.head[1].weight.T)
    b_U = property(lambda self: self.head[1].bias)
    blocks = property(lambda self: self.encoder.blocks)

    def forward(self, ids: torch.Tensor, need_weights: bool = False, head_mask: StackMask = None) -> ClassifierOutput:
        """ids (B, T), right- or left-padded with pad_id -> ClassifierOutput.
        head_mask: (L, H) or (L, B, H) multipliers on each layer's heads (0 = off), this call only."""
        mask = padding_mask(ids, self.config.pad_id)  # (B, 1, 1, T)
        tok = self.tok_emb(ids)  # (B, T, D)
        if self.ngram_emb is not None:
            # The encoder scales by sqrt(D); divide so n-gram vectors enter at their own scale.
            tok = tok + self.ngram_emb(ids) / self.encoder.scale
        enc = self.encoder(tok, mask, need_weights=need_weights, head_mask=head_mask)
        return self._output(enc, mask)

    def forward_from(
        self,
        layer: int,
        resid: torch.Tensor,
        ids: torch.Tensor,
        head_mask: StackMask = None,
        z: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> ClassifierOutput:
        """resid (B, T, D), what block `layer` read in a pass on ids (B, T) (blocks.{layer}.hook_resid_pre) -> the
        output of the blocks from `layer` on, run again (head_mask as in forward; the earlier blocks are not run).
        z: (B, T, H, hs) that block's heads' outputs in the same pass (blocks.{layer}.attn.hook_z): it mixes them
        again instead of attending (Encoder.forward_from)."""
        mask = padding_mask(ids, self.config.pad_id)  # (B, 1, 1, T)
        enc = self.encoder.forward_from(layer, resid, mask, need_weights, head_mask, z)
        return self._output(enc, mask)

    def _output(self, enc, mask: torch.Tensor) -> ClassifierOutput:
        """The encoder's output pooled over the real tokens of mask (B, 1, 1, T) and classified."""
        x = enc.memory  # (B, T, D)
        pool_weights = self.pool_weights(x, mask[:, 0, 0, :])  # (B, T)
        return ClassifierOutput(self.classify(x, pool_weights), enc.attentions, pool_weights)

    def classify(self, x: torch.Tensor, pool_weights: torch.Tensor) -> torch.Tensor:
        """The last layer's output (B, T, D) pooled by pool_weights (B, T) -> logits (B, num_labels)."""
        pooled = (pool_weights.unsqueeze(-1) * x).sum(dim=1)  # (B, D)
        return self.head(pooled if self.pooler is None else self.pooler(pooled))

    @classmethod
    def from_bert(cls, folder_or_repo_id: str, **kwargs) -> "TransformerClassifier":
        """A BERT-architecture checkpoint (config.json + safetensors: BertModel or BertForSequenceClassification)
        mapped onto this class, as nanoGPT maps GPT-2's weights; keyword arguments as transformer.bert.from_bert."""
        from .bert import from_bert

        return from_bert(cls, folder_or_repo_id, **kwargs)

    def pool_weights(self, x: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        """(B, T, D), (B, T) bool -> (B, T) weights over real tokens that sum to 1."""
        if self.pooler is not None:  # the first token alone
            return torch.zeros_like(real, dtype=x.dtype).index_fill_(1, torch.tensor([0], device=x.device), 1.0)
        if self.pool_query is None:
            w = real.float()
            return w / w.sum(dim=1, keepdim=True).clamp(min=1.0)
        scores = (x @ self.pool_query) * x.size(-1) ** -0.5  # (B, T)
        return scores.masked_fill(~real, float("-inf")).softmax(dim=-1).nan_to_num(0.0)
