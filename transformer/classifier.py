"""TransformerClassifier: an encoder with pooling over real tokens and a linear head."""

from dataclasses import dataclass

import torch
from huggingface_hub import PyTorchModelHubMixin
from torch import nn

from .config import ClassifierConfig
from .embeddings import HashedNgramEmbedding, token_embedding
from .encoder import Encoder
from .head_mask import StackMask
from .hub import HUB_KWARGS, ShardedWeights
from .masks import padding_mask


@dataclass
class ClassifierOutput:
    logits: torch.Tensor  # (B, num_labels)
    attentions: list[torch.Tensor] | None = None  # per layer (B, H, T, T), when need_weights
    pool_weights: torch.Tensor | None = None  # (B, T): how much each token contributes to the pooled vector
    hidden: list[torch.Tensor] | None = None  # per layer (B, T, D) what it read, when need_hidden
    heads: list[torch.Tensor] | None = None  # per layer (B, T, D) its heads' outputs before the mix, when need_hidden


class TransformerClassifier(
    nn.Module, ShardedWeights, PyTorchModelHubMixin, pipeline_tag="text-classification", **HUB_KWARGS
):
    """Sequence classifier. Padding never changes a prediction: keys and the pooling both skip it."""

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

    def forward(
        self, ids: torch.Tensor, need_weights: bool = False, head_mask: StackMask = None, need_hidden: bool = False
    ) -> ClassifierOutput:
        """ids (B, T), right- or left-padded with pad_id -> ClassifierOutput.
        head_mask: (L, H) or (L, B, H) multipliers on each layer's heads (0 = off), this call only."""
        mask = padding_mask(ids, self.config.pad_id)  # (B, 1, 1, T)
        tok = self.tok_emb(ids)  # (B, T, D)
        if self.ngram_emb is not None:
            # The encoder scales by sqrt(D); divide so n-gram vectors enter at their own scale.
            tok = tok + self.ngram_emb(ids) / self.encoder.scale
        enc = self.encoder(tok, mask, need_weights=need_weights, head_mask=head_mask, need_hidden=need_hidden)
        return self._output(enc, mask)

    def logits_from_layer(
        self,
        layer: int,
        x: torch.Tensor,
        ids: torch.Tensor,
        head_mask: StackMask = None,
        heads: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x (B, T, D), what layer `layer` read in a pass on ids (B, T) (ClassifierOutput.hidden[layer]) -> logits
        (B, num_labels) of the layers from `layer` on, run again (head_mask as in forward; earlier layers' unused).
        heads: (B, T, D) that layer's heads' outputs in the same pass (ClassifierOutput.heads[layer]): it mixes them
        again instead of attending (Encoder.layers_from)."""
        mask = padding_mask(ids, self.config.pad_id)  # (B, 1, 1, T)
        enc = self.encoder.layers_from(layer, x, mask, head_mask=head_mask, heads=heads)
        return self._output(enc, mask).logits

    def _output(self, enc, mask: torch.Tensor) -> ClassifierOutput:
        """The encoder's output pooled over the real tokens of mask (B, 1, 1, T) and classified."""
        x = enc.memory  # (B, T, D)
        pool_weights = self.pool_weights(x, mask[:, 0, 0, :])  # (B, T)
        return ClassifierOutput(self.classify(x, pool_weights), enc.attentions, pool_weights, enc.hidden, enc.heads)

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
