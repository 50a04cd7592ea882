"""What pre-training teaches the sentiment encoder, one registered objective a name (`pretrain --objective`):

- `mlm`: BERT's masked-language model. 15% of the real tokens are predicted; of those 80% become the mask token
  (`<unk>`, which byte-level BPE never produces), 10% a random token, 10% stay as they are.
- `electra`: ELECTRA's replaced-token detection (Clark et al., 2020). A small generator (the same width, fewer
  layers, the token embeddings shared) fills the masked places with tokens it samples; the encoder being trained
  (the discriminator) tells, for every real token, whether it is the original. It learns from every token
  rather than the 15% that are masked, which is what makes it cheaper per point of accuracy in the paper.

Both keep the encoder as `model.backbone`, a TransformerClassifier whose pooling and head take no part (frozen,
so that DistributedDataParallel does not wait for gradients they never get); `pretrain` exports that backbone.
"""

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from pipelines.models.tokenizers_io import PAD, UNK
from transformer import TransformerClassifier
from transformer.masks import padding_mask

MASK = UNK
N_SPECIAL = 4


def mask_tokens(ids: torch.Tensor, seed: int, vocab_size: int, rate: float = 0.15):
    """(corrupted ids, where (B, T) bool, targets (N,)), on the device of ids, reproducible from `seed`.

    The draws come from a CPU generator and then move to ids' device: a resumed run, or one on another device,
    masks the same tokens."""
    g = torch.Generator().manual_seed(seed)
    pick = torch.rand(ids.shape, generator=g).to(ids.device)  # (B, T) which tokens are predicted
    roll = torch.rand(ids.shape, generator=g).to(ids.device)  # (B, T) and how each is corrupted
    random_ids = torch.randint(N_SPECIAL, vocab_size, ids.shape, generator=g).to(ids.device)  # (B, T)
    real = ids >= N_SPECIAL
    where = (pick < rate) & real
    corrupted = ids.clone()
    corrupted[where & (roll < 0.8)] = MASK
    rand_pos = where & (roll >= 0.8) & (roll < 0.9)
    corrupted[rand_pos] = random_ids[rand_pos]
    return corrupted, where, ids[where]


def freeze_pooling_and_head(backbone: TransformerClassifier) -> None:
    for p in [*backbone.head.parameters(), *([backbone.pool_query] if backbone.pool_query is not None else [])]:
        p.requires_grad_(False)


def encode(m: TransformerClassifier, ids: torch.Tensor) -> torch.Tensor:
    """ids (B, T) -> the encoder's output (B, T, D), as the classifier computes it before pooling."""
    tok = m.tok_emb(ids)  # (B, T, D)
    if m.ngram_emb is not None:
        tok = tok + m.ngram_emb(ids) / m.encoder.scale
    return m.encoder(tok, padding_mask(ids, m.config.pad_id)).memory


class MaskedLM(nn.Module):
    """A TransformerClassifier's embeddings and encoder, plus an output layer tied to the token embeddings."""

    def __init__(self, backbone: TransformerClassifier):
        super().__init__()
        self.backbone = backbone
        d = backbone.config.d_model
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
        self.bias = nn.Parameter(torch.zeros(backbone.config.vocab_size))
        freeze_pooling_and_head(backbone)

    def forward(self, ids: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
        """ids (B, T) with masked tokens, where (B, T) bool -> logits (N, V) at the N positions in `where`."""
        h = self.transform(encode(self.backbone, ids)[where])  # (N, D)
        return h @ self.backbone.tok_emb.weight.T + self.bias  # (N, V)


class ReplacedTokenDetection(nn.Module):
    """ELECTRA: a generator (a MaskedLM of `generator_layers` layers sharing the token embeddings) fills the masked
    places by sampling; the backbone scores every token: was it replaced?"""

    def __init__(self, backbone: TransformerClassifier, generator_layers: int = 1):
        super().__init__()
        self.backbone = backbone
        small = replace(backbone.config, n_layers=generator_layers, ngram_buckets=0)
        self.generator = MaskedLM(TransformerClassifier(small))
        self.generator.backbone.tok_emb = backbone.tok_emb  # one embedding table, as in the paper
        self.detect = nn.Linear(backbone.config.d_model, 1)
        freeze_pooling_and_head(backbone)

    def forward(self, corrupted: torch.Tensor, where: torch.Tensor, ids: torch.Tensor):
        """corrupted, where, ids (B, T) -> (generator logits (N, V), replaced-token logits (B, T), replaced (B, T)
        bool). A sampled token that equals the original counts as original, as in the paper."""
        gen_logits = self.generator(corrupted, where)  # (N, V)
        with torch.no_grad():  # Gumbel-max: a sample of each softmax row; no gradient flows through the choice
            u = torch.rand_like(gen_logits, dtype=torch.float32).clamp_(1e-9, 1.0)  # (N, V)
            sampled = (gen_logits.float() - torch.log(-torch.log(u))).argmax(-1)  # (N,)
        filled = ids.clone()
        filled[where] = sampled
        replaced = filled != ids  # (B, T)
        disc_logits = self.detect(encode(self.backbone, filled)).squeeze(-1)  # (B, T)
        return gen_logits, disc_logits, replaced


class MLMObjective:
    """Masked-token prediction: the loss and the sums a validation adds up (correct, count, loss_sum)."""

    @classmethod
    def from_args(cls, args) -> "MLMObjective":
        return cls()

    def build(self, backbone: TransformerClassifier) -> nn.Module:
        return MaskedLM(backbone)

    def losses(self, model, ids: torch.Tensor, seed: int, vocab_size: int, rate: float):
        """(loss, sums) for a (B, T) batch of token ids."""
        corrupted, where, targets = mask_tokens(ids, seed, vocab_size, rate)
        logits = model(corrupted, where)
        loss = F.cross_entropy(logits, targets)
        return loss, {
            "correct": int((logits.argmax(-1) == targets).sum()),
            "count": len(targets),
            "mlm_loss_sum": float(loss.detach()) * len(targets),
        }

    def scores(self, sums: dict) -> dict:
        n = max(sums["count"], 1)
        return {"mlm_accuracy": sums["correct"] / n, "mlm_loss": sums["mlm_loss_sum"] / n}


class ReplacedTokenObjective(MLMObjective):
    """ELECTRA's loss: the generator's masked-token loss plus `rtd_weight` x the detection loss over real tokens.
    Validation reports the generator's masked-token accuracy (the score that picks the best epoch) and the
    detector's accuracy over real tokens."""

    def __init__(self, rtd_weight: float = 50.0, generator_layers: int = 1):
        self.rtd_weight, self.generator_layers = rtd_weight, generator_layers

    @classmethod
    def from_args(cls, args) -> "ReplacedTokenObjective":
        return cls(args.rtd_weight, args.generator_layers)

    def build(self, backbone: TransformerClassifier) -> nn.Module:
        return ReplacedTokenDetection(backbone, self.generator_layers)

    def losses(self, model, ids: torch.Tensor, seed: int, vocab_size: int, rate: float):
        corrupted, where, targets = mask_tokens(ids, seed, vocab_size, rate)
        gen_logits, disc_logits, replaced = model(corrupted, where, ids)
        real = ids != PAD  # (B, T)
        gen_loss = F.cross_entropy(gen_logits, targets)
        disc_loss = F.binary_cross_entropy_with_logits(disc_logits[real], replaced[real].float())
        n_real = int(real.sum())
        return gen_loss + self.rtd_weight * disc_loss, {
            "correct": int((gen_logits.argmax(-1) == targets).sum()),
            "count": len(targets),
            "mlm_loss_sum": float(gen_loss.detach()) * len(targets),
            "rtd_correct": int(((disc_logits[real] > 0) == replaced[real]).sum()),
            "rtd_count": n_real,
            "rtd_loss_sum": float(disc_loss.detach()) * n_real,
            "replaced": int(replaced.sum()),
        }

    def scores(self, sums: dict) -> dict:
        n = max(sums["rtd_count"], 1)
        return {
            **super().scores(sums),
            "rtd_accuracy": sums["rtd_correct"] / n,
            "rtd_loss": sums["rtd_loss_sum"] / n,
            "replaced_share": sums["replaced"] / n,
        }


OBJECTIVES = {"mlm": MLMObjective, "electra": ReplacedTokenObjective}
