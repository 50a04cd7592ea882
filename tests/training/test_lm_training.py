"""`python -m training lm`: the next-word model trained from scratch, end to end on the tiny IMDB fixture."""

import json

import pandas as pd
import pytest
import torch
from tiny_models import read_jsonl

from training.cli import main as train_main
from training.tasks.lm import CORPUS, cut
from transformer import CausalLM

TINY_LM = (
    "--vocab-size 300 --d-model 32 --n-heads 4 --n-kv-heads 2 --n-layers 2 --d-ff 48 --seq-len 32 --batch-size 8 "
    "--max-tokens 512 --val-size 8 --no-unlabeled --threads 1"
).split()


@pytest.fixture(scope="module")
def imdb_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("imdb")
    pd.DataFrame(read_jsonl("imdb_tiny.jsonl")).to_parquet(d / "train.parquet")
    return d


def test_training_writes_a_model_its_snapshots_and_corpus(imdb_dir, tmp_path):
    out = tmp_path / "lm"
    assert (
        train_main(
            ["lm", "--data-dir", str(imdb_dir), "--out", str(out), "--epochs", "2", "--snapshots", "3", *TINY_LM]
        )
        == 0
    )
    model = CausalLM.from_pretrained(out / "best")
    assert (model.config.n_heads, model.config.n_kv_heads, model.config.positions) == (4, 2, "rotary")
    snapshots = sorted(p.name for p in (out / "snapshots").iterdir())
    assert len(snapshots) == 3 and "step-0" in snapshots
    info = json.loads((out / "snapshots" / snapshots[-1] / "snapshot.json").read_text())
    assert info["perplexity"] > 1 and 0 <= info["induction_max"] <= 1
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    scores = [r for r in records if r["event"] == "validation"]
    assert scores[-1]["log_likelihood"] > scores[0]["log_likelihood"] - 0.5  # trains, and reports per-token scores
    assert (out / CORPUS / "tokenizer.json").is_file()


def test_resume_reads_the_kept_corpus_and_continues(imdb_dir, tmp_path):
    args = ["lm", "--data-dir", str(imdb_dir), "--epochs", "2", *TINY_LM]
    assert train_main([*args, "--out", str(tmp_path / "straight")]) == 0
    assert train_main([*args, "--out", str(tmp_path / "cut"), "--max-minutes", "1e-9"]) == 0
    # the data folder is gone: a resumed run (or one on another machine) needs only the kept corpus
    assert (
        train_main(
            [*args[:1], "--data-dir", str(tmp_path / "nowhere"), *args[3:], "--out", str(tmp_path / "cut"), "--resume"]
        )
        == 0
    )
    a = torch.load(tmp_path / "straight" / "checkpoint.pt", weights_only=True)
    b = torch.load(tmp_path / "cut" / "checkpoint.pt", weights_only=True)
    assert a["state"]["step"] == b["state"]["step"]
    for k, v in a["model"].items():
        torch.testing.assert_close(b["model"][k], v)


def test_a_review_is_cut_into_pieces_that_open_with_bos_and_end_with_eos():
    pieces = cut(list(range(10, 17)), 3)  # 7 ids + </s> = 8 tokens: pieces of 3 after <s>
    assert pieces == [[1, 10, 11, 12], [1, 13, 14, 15], [1, 16, 2]]


def test_evaluate_reports_perplexity_per_token_and_per_word(imdb_dir, tmp_path, capsys):
    from training.evaluate import main as evaluate_main
    from training.tasks.lm_eval import clean

    out = tmp_path / "lm"
    assert train_main(["lm", "--data-dir", str(imdb_dir), "--out", str(out), "--epochs", "1", *TINY_LM]) == 0
    capsys.readouterr()
    data = str(imdb_dir / "train.parquet")
    assert evaluate_main(["lm", "--model", str(out / "best"), "--data", data, "--limit", "5"]) == 0
    scores = json.loads(capsys.readouterr().out)
    texts = [clean(t) for t in pd.read_parquet(data)["text"][:5]]
    assert scores["n"] == 5 and scores["words"] == sum(len(t.split()) for t in texts)
    # one total log-likelihood, spread over more tokens than words: the per-word figure is the larger
    assert 1 < scores["perplexity_per_token"] < scores["perplexity_per_word"]
    ratio = scores["tokens"] / scores["words"]
    assert (
        abs(scores["perplexity_per_word"] - scores["perplexity_per_token"] ** ratio)
        < 1e-6 * scores["perplexity_per_word"]
    )


def test_batched_scoring_equals_one_piece_at_a_time_and_keeps_to_its_token_budget():
    """The test split's windows are scored in length-sorted batches of at most batch_tokens (padded) tokens: a
    budget once overrun by a batch sized on a short piece took 24 GB."""
    import torch.nn.functional as F

    from training.tasks.lm_eval import summed_nll
    from transformer import CausalLMConfig

    model = CausalLM(CausalLMConfig(vocab_size=30, d_model=16, n_heads=2, d_ff=16, n_layers=1, max_len=12)).eval()
    pieces = [[1] + torch.randint(4, 30, (n,)).tolist() for n in (1, 3, 11, 5, 11, 2, 7, 1, 1)]
    with torch.no_grad():
        one = sum(
            float(F.cross_entropy(model(torch.tensor([p[:-1]])).logits[0], torch.tensor(p[1:]), reduction="sum"))
            for p in pieces
        )
    shapes = []
    forward = model.forward
    model.forward = lambda ids, **kw: shapes.append(tuple(ids.shape)) or forward(ids, **kw)
    for budget in (1, 12, 30, 10_000):
        shapes.clear()
        assert abs(summed_nll(model, pieces, budget) - one) < 1e-4 * one
        assert sum(b for b, _ in shapes) == len(pieces)
        assert all(b * (t + 1) <= max(budget, t + 1) for b, t in shapes)
