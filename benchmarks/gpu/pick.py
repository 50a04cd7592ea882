"""The run to ship among several: the best held-out validation accuracy (IMDB and SST-2 held-out rows together,
the `best_accuracy` of each run's summary.json), never a test score. Prints one line per run and, last, the chosen
run folder.

    python3 benchmarks/gpu/pick.py RUN [RUN ...]
"""

import json
import sys
from pathlib import Path


def main() -> int:
    scored = []
    for run in map(Path, sys.argv[1:]):
        summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").is_file() else {}
        ok = "best_accuracy" in summary and (run / "best" / "model.safetensors").is_file()
        best = {k: summary.get(k) for k in ("best_epoch", "best_accuracy")}
        print(json.dumps({"run": str(run), **best}))
        if ok:
            scored.append((summary["best_accuracy"], str(run)))
    if not scored:
        print("no run has a validated best model", file=sys.stderr)
        return 1
    print(max(scored)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
