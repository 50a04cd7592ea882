"""The run to ship among several, never by a test score: among the runs whose held-out validation accuracy (IMDB and
SST-2 held-out rows together, the `best_accuracy` of each run's summary.json) is within LEVEL of the best one, the
run that gets the most of the app's built-in example reviews right, then the best held-out validation
(training.contrast.choose_run). Prints one line per run and, last, the chosen run folder.

    python3 -m benchmarks.gpu.pick RUN [RUN ...]
"""

import json
import sys
from pathlib import Path

from training.contrast import choose_run as choose


def examples_right(model: Path) -> int:
    """How many of the app's example reviews the model folder labels as a reader does (training.contrast)."""
    from pipelines import SentimentPipeline
    from training.contrast import builtin_examples

    return builtin_examples(SentimentPipeline.from_pretrained(str(model)))["right"]


def main() -> int:
    scored = []
    for run in map(Path, sys.argv[1:]):
        summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").is_file() else {}
        ok = "best_accuracy" in summary and (run / "best" / "model.safetensors").is_file()
        row = {"run": str(run), **{k: summary.get(k) for k in ("best_epoch", "best_accuracy")}}
        if ok:
            row["examples_right"] = examples_right(run / "best")
            scored.append(row)
        print(json.dumps(row))
    chosen = choose(scored)
    if chosen is None:
        print("no run has a validated best model", file=sys.stderr)
        return 1
    print(chosen["run"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
