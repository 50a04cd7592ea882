"""`python -m training.calibrate` where wordfreq is not installed (a lent GPU machine).

    python3 benchmarks/gpu/calibrate_offline.py .gpu/general-counts.npz sentiment --model ... (training.calibrate's
    arguments)

The general-text token counts are read from the file benchmarks/gpu/pack.py computed with wordfreq for this
tokenizer, instead of being computed again: the same numbers, the same record.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import training.calibrate as calibrate  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from pack import vocab_digest  # noqa: E402


def main() -> int:
    saved = np.load(sys.argv[1])

    def general_counts(tokenizer, vocab_size: int, language: str, top_n: int):
        asked = (vocab_digest(tokenizer), vocab_size, language, top_n)
        have = (str(saved["vocab"]), len(saved["counts"]), str(saved["language"]), int(saved["top_n"]))
        if asked != have:
            raise SystemExit(
                f"{sys.argv[1]} holds counts for {have[1:]}, another tokenizer or setting than {asked[1:]}"
            )
        return saved["counts"].copy(), str(saved["about"])

    calibrate.general_counts = general_counts
    return calibrate.main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
