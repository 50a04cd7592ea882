"""The run to ship among several: the best held-out validation accuracy (IMDB and SST-2 held-out rows together),
never a test score. Prints one line per run and, last, the chosen run folder.

    python3 benchmarks/gpu/pick.py RUN [RUN ...]
"""

import json
import sys
from pathlib import Path


def best_validation(run: Path) -> dict | None:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    vals = [r for r in records if r.get("event") == "validation"]
    return max(vals, key=lambda r: r["accuracy"]) if vals else None


def main() -> int:
    scored = []
    for run in map(Path, sys.argv[1:]):
        best = best_validation(run) if (run / "metrics.jsonl").is_file() else None
        ok = best is not None and (run / "best" / "model.safetensors").is_file()
        print(json.dumps({"run": str(run), "best_validation": best, "has_best_model": ok}))
        if ok:
            scored.append((best["accuracy"], str(run)))
    if not scored:
        print("no run has a validated best model", file=sys.stderr)
        return 1
    print(max(scored)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
