"""Forward passes that start from embedding vectors, so attribution methods can differentiate them.

The token ids still give the padding mask (and the positions), so interpolating or zeroing the vectors
changes what a token *says*, never which tokens are there. Tests hold both functions equal to the
models' own forward passes.
"""

import torch

from transformer import Seq2SeqTransformer, TransformerClassifier
from transformer.masks import padding_mask


def classifier_embeddings(model: TransformerClassifier, ids: torch.Tensor) -> torch.Tensor:
    """(B, T) ids -> (B, T, D): token plus hashed n-gram embeddings, what the encoder scales and positions."""
    tok = model.tok_emb(ids)
    if model.ngram_emb is not None:
        tok = tok + model.ngram_emb(ids) / model.encoder.scale
    return tok


def classifier_logits(model: TransformerClassifier, emb: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """emb (B, T, D) in place of classifier_embeddings(ids), ids (B, T) for the mask -> logits (B, C)."""
    mask = padding_mask(ids, model.config.pad_id)  # (B, 1, 1, T)
    x = model.encoder(emb, mask).memory  # (B, T, D)
    weights = model.pool_weights(x, mask[:, 0, 0, :])  # (B, T)
    return model.head((weights.unsqueeze(-1) * x).sum(dim=1))


def log_odds(logits: torch.Tensor) -> torch.Tensor:
    """(B, C) logits -> (B, C) log p(c) / (1 - p(c)). With two labels the two columns are exact opposites,
    so an attribution toward one label is minus the attribution toward the other."""
    C = logits.size(-1)
    if C == 1:
        return logits
    others = logits.unsqueeze(1).expand(-1, C, -1)  # (B, C, C): row c lists every logit
    eye = torch.eye(C, dtype=torch.bool, device=logits.device)
    return logits - others.masked_fill(eye, float("-inf")).logsumexp(-1)


def seq2seq_step_log_probs(
    model: Seq2SeqTransformer, src_emb: torch.Tensor, src_ids: torch.Tensor, tgt_emb: torch.Tensor, pos: torch.Tensor
) -> torch.Tensor:
    """src_emb (B, Ts, D) and tgt_emb (B, Tt, D) in place of the embeddings of src_ids and the target
    prefix, pos (B,) -> log-probabilities (B, V) of the next token after position pos[b] of row b.

    Only the rows' own positions go through the output layer (its vocabulary is the expensive part)."""
    src_mask = padding_mask(src_ids, model.config.pad_id)  # (B, 1, 1, Ts)
    memory = model.encoder(src_emb, src_mask).memory  # (B, Ts, D)
    x = model.decoder(tgt_emb, memory, src_mask=src_mask).hidden  # (B, Tt, D)
    rows = torch.arange(x.size(0), device=x.device)
    return model.lm_head(x[rows, pos]).log_softmax(-1)  # (B, V)
