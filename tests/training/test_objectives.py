"""Pre-training objectives (training/tasks/objectives.py): ELECTRA's generator and detector, and the registry that the
`pretrain --objective` choices come from."""

import torch

from training.cli import build_parser
from training.tasks.objectives import OBJECTIVES, ReplacedTokenDetection, ReplacedTokenObjective, mask_tokens
from transformer import ClassifierConfig, TransformerClassifier

VOCAB = 40


def tiny_detector() -> ReplacedTokenDetection:
    cfg = ClassifierConfig(vocab_size=VOCAB, d_model=16, n_heads=2, n_layers=2, d_ff=32, ngram_buckets=0)
    return ReplacedTokenDetection(TransformerClassifier(cfg), generator_layers=1)


def batch() -> torch.Tensor:
    ids = torch.randint(4, VOCAB, (3, 12))  # (B, T) real tokens
    ids[2, 8:] = 0  # padding
    return ids


def test_the_generator_shares_the_token_embeddings_and_is_smaller():
    model = tiny_detector()
    assert model.generator.backbone.tok_emb is model.backbone.tok_emb
    assert len(model.generator.backbone.encoder.blocks) == 1 and len(model.backbone.encoder.blocks) == 2
    frozen = {id(p) for p in [*model.backbone.head.parameters(), model.backbone.pool_query]}
    assert all(not p.requires_grad for p in model.parameters() if id(p) in frozen)


def test_only_masked_places_can_be_replaced_and_a_sample_equal_to_the_original_is_not_a_replacement():
    torch.manual_seed(0)
    model, ids = tiny_detector(), batch()
    corrupted, where, targets = mask_tokens(ids, seed=1, vocab_size=VOCAB, rate=0.5)
    assert where.any()
    _, disc, replaced = model(corrupted, where, ids)
    assert disc.shape == ids.shape and not (replaced & ~where).any()

    def knows_the_answer(c, w):  # a generator that always samples the original token
        return torch.nn.functional.one_hot(ids[w], VOCAB).float() * 100.0

    model.generator.forward = knows_the_answer
    _, _, replaced = model(corrupted, where, ids)
    assert not replaced.any()


def test_the_loss_counts_every_real_token_and_trains_both_parts():
    torch.manual_seed(0)
    model, ids = tiny_detector(), batch()
    objective = ReplacedTokenObjective(rtd_weight=50.0)
    loss, sums = objective.losses(model, ids, seed=3, vocab_size=VOCAB, rate=0.3)
    assert sums["rtd_count"] == int((ids != 0).sum()) and 0 < sums["count"] < sums["rtd_count"]
    loss.backward()
    assert model.detect.weight.grad.abs().sum() > 0  # the detector
    assert model.generator.bias.grad.abs().sum() > 0  # the generator
    assert model.backbone.encoder.blocks[0].attn.o_proj.weight.grad.abs().sum() > 0  # the encoder being trained
    scores = objective.scores(sums)
    assert set(scores) == {"mlm_accuracy", "mlm_loss", "rtd_accuracy", "rtd_loss", "replaced_share"}
    assert 0.0 <= scores["rtd_accuracy"] <= 1.0 and scores["replaced_share"] <= 0.3 + 0.2


def test_the_command_line_offers_each_registered_objective():
    sub = next(a for a in build_parser()._actions if a.dest == "task")
    choices = next(a.choices for a in sub.choices["pretrain"]._actions if a.dest == "objective")
    assert sorted(choices) == sorted(OBJECTIVES)
