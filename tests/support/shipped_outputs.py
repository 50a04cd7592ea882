"""The shipped models' outputs on a few fixed inputs, to check that refactoring changes no number.

`python tests/support/shipped_outputs.py` rewrites tests/fixtures/shipped_outputs.json: only do that for a
deliberate change of the shipped models, never to make a failing test pass.
"""

import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "shipped_outputs.json"
REVIEWS = [
    "A wonderful film with a moving story and great acting.",
    "Wooden acting, a predictable plot and far too long. A waste of time.",
    "Not bad, not good either; the ending was surprising though.",
]
SENTENCES = [
    "Ein Mann fährt mit dem Fahrrad.",
    "Zwei Kinder spielen im Park.",
    "Eine Frau mit einem roten Hut liest ein Buch am Strand.",
]


def sentiment_outputs(pipe) -> list[dict]:
    out = []
    for text in REVIEWS:
        res = pipe(text)
        ids, _, _ = pipe.encode(text)
        out.append(
            {
                "text": text,
                "label": res.label,
                "logits": pipe.model(torch.tensor([ids])).logits[0].tolist(),  # fast path
                "pool_weights": res.pool_weights.tolist(),
                "attention_last_row": [a[:, -1].tolist() for a in res.attentions],  # explicit path
            }
        )
    return out


def translation_outputs(pipe) -> list[dict]:
    out = []
    for text in SENTENCES:
        beam, greedy = pipe(text), pipe(text, beam_size=1)
        out.append(
            {
                "text": text,
                "beam": beam.translation,
                "beam_score": beam.score,
                "greedy": greedy.translation,
                "greedy_score": greedy.score,
                "cross_last_row": [a[:, -1].tolist() for a in beam.cross_attentions],
                "top_k": [[p for _, p in step.top_k] for step in beam.steps],
            }
        )
    return out


def shipped_outputs() -> dict:
    from pipelines import SentimentPipeline, TranslationPipeline

    return {
        "sentiment": sentiment_outputs(SentimentPipeline.from_pretrained(str(ROOT / "assets" / "sentiment"))),
        "translation": translation_outputs(TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation"))),
    }


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    GOLDEN.write_text(json.dumps(shipped_outputs(), indent=1))
    print(f"wrote {GOLDEN}")
