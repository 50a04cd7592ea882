"""`python -m training.calibrate sentiment|translation --model DIR --data FILE [FILE ...] --train-data FILE ...`.

Fits, on held-out in-domain data the model never trained on (`--data`), what makes the model honest about
its limits, and writes it into DIR/preprocessing.json (atomically), where the pipelines, the app, the API
and the published Hub model all read it:

- sentiment: the temperature of its probabilities (temperature scaling, Guo et al. 2017; by default with a
  length exponent, T(n) = temperature * (n / 64) ** exponent, see pipelines/trust/calibration.py);
- both tasks: the out-of-domain statistics (pipelines/trust/domain.py): each token's log-ratio between its
  frequency in the training data (`--train-data`) and in general text of the language (the `wordfreq`
  package's word frequencies), the held-out distribution of each typicality signal, and the threshold
  that flags at most `--target-rate` of every held-out file.

What differs between the tasks (the files' columns, the language, the signals, whether there is a temperature) is
each one's `calibration` in training/tasks/table.py.

With `--test-data FILE ...` the calibrated model is then scored on those files (`training.evaluate`), and the
fit and the scores are recorded in DIR/metrics.json under "calibration" (and "test" when it is that file).
`--domain-only` refits the out-of-domain statistics alone and keeps the temperature and the recorded scores.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from training.engine.checkpoint import atomic_write_text
from training.tasks.table import TRAINING_TASKS

CALIBRATED = [name for name, t in TRAINING_TASKS.items() if t.calibration]  # the tasks it takes


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m training.calibrate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("task", choices=CALIBRATED)
    p.add_argument("--model", type=Path, required=True, help="model folder (its preprocessing.json is updated)")
    p.add_argument("--data", nargs="+", required=True, help="held-out in-domain files (text|sentence, label / de)")
    p.add_argument("--train-data", nargs="+", required=True, help="the files the model was trained on")
    p.add_argument("--test-data", nargs="*", default=[], help="files to score after fitting (never fitted on)")
    p.add_argument("--target-rate", type=float, default=0.03, help="most held-out inputs flagged per file")
    p.add_argument(
        "--temperature-data",
        nargs="+",
        default=None,
        help="the --data files the temperature is fitted on (default: all of them); the others are only "
        "reported. Give files the model saw no part of: SST-2 train lists every sub-phrase of its sentences, so a "
        "random hold-out of its rows is mostly phrases of (or containing) training rows and looks easier than it is",
    )
    p.add_argument("--plain-temperature", action="store_true", help="one temperature for every input length")
    p.add_argument(
        "--domain-only",
        action="store_true",
        help="refit the out-of-domain statistics alone: the temperature and the recorded scores are kept, and "
        "--test-data files are scored for their out-of-domain rate only (no model run)",
    )
    p.add_argument("--language", default=None, help="wordfreq language of the inputs (default: en / de)")
    p.add_argument("--general-words", type=int, default=200_000, help="most frequent wordfreq words used")
    p.add_argument(
        "--general-counts",
        type=Path,
        default=None,
        help="read the general-text token counts from this .npz (save_general_counts) instead of wordfreq: for a "
        "machine without wordfreq (benchmarks/gpu/); refused when written for another tokenizer, language or size",
    )
    p.add_argument("--batch-size", type=int, default=64)
    return p


def read_texts(path: str, task: str) -> tuple[list[str], list[int] | None]:
    """(texts, labels or None) of a held-out or training file, in the task's columns (training/tasks/table.py)."""
    from training.engine.data import load_table

    columns = TRAINING_TASKS[task].calibration.columns
    ds = load_table(path, columns, {"text": "sentence"})
    return list(ds[columns[0]]), [int(y) for y in ds["label"]] if "label" in columns else None


def general_counts(tokenizer, vocab_size: int, language: str, top_n: int) -> tuple[np.ndarray, str]:
    """(V,) token frequencies of general text: wordfreq's most frequent words, tokenized, weighted."""
    from importlib.metadata import version

    import wordfreq

    freqs = wordfreq.get_frequency_dict(language, wordlist="best")
    words = sorted(freqs, key=freqs.get, reverse=True)[:top_n]
    weights = [freqs[w] for w in words]
    if tokenizer.encode("A").ids != tokenizer.encode("a").ids:  # a cased tokenizer: wordfreq is lowercase
        words, weights = words + [w.capitalize() for w in words], weights + weights
    counts = np.zeros(vocab_size)
    for e, f in zip(tokenizer.encode_batch(words), weights):
        np.add.at(counts, [i for i in e.ids if i < vocab_size], f)
    about = f"wordfreq {version('wordfreq')}, '{language}', the {min(top_n, len(freqs)):,} most frequent words"
    return counts, about


def vocab_digest(tokenizer) -> str:
    """sha256 of a tokenizer's vocabulary: saved general counts belong to exactly this one."""
    import hashlib

    return hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()


def save_general_counts(path: Path, tokenizer, vocab_size: int, language: str, top_n: int) -> None:
    """general_counts computed here (with wordfreq), saved for --general-counts on a machine without it."""
    counts, about = general_counts(tokenizer, vocab_size, language, top_n)
    np.savez(path, counts=counts, about=about, language=language, top_n=top_n, vocab=vocab_digest(tokenizer))


def read_general_counts(path: Path, tokenizer, vocab_size: int, language: str, top_n: int) -> tuple[np.ndarray, str]:
    """What general_counts gives, from a save_general_counts file; DataError when it was written for another
    tokenizer, vocabulary size, language or number of words."""
    from training.engine.data import DataError

    saved = np.load(path)
    asked = (vocab_digest(tokenizer), vocab_size, language, top_n)
    have = (str(saved["vocab"]), len(saved["counts"]), str(saved["language"]), int(saved["top_n"]))
    if asked != have:
        raise DataError(f"{path} holds general counts for {have[1:]} and another tokenizer, not for {asked[1:]}")
    return saved["counts"].copy(), str(saved["about"])


def training_counts(tokenizer, vocab_size: int, files: list[str], task: str) -> np.ndarray:
    from pipelines.text import clean_text

    counts = np.zeros(vocab_size)
    for f in files:
        texts, _ = read_texts(f, task)
        for e in tokenizer.encode_batch([clean_text(t) for t in texts]):
            np.add.at(counts, [i for i in e.ids if i < vocab_size], 1)
    return counts


def atomic_write_json(path: Path, obj: dict) -> None:
    """Write JSON to a temporary file in the same folder, then rename it over `path`."""
    atomic_write_text(path, json.dumps(obj, indent=2) + "\n")


def fit_temperature_on(pipe, held: list, plain: bool, batch_size: int, fit_on: list[str]) -> tuple[dict, dict]:
    """(preprocessing entries, report on every held-out file) of the temperature fitted on the held-out files
    named in `fit_on` together."""
    import torch

    from pipelines.trust.calibration import (
        Temperature,
        expected_calibration_error,
        fit_length_temperature,
        fit_temperature,
    )

    pipe.calibration = Temperature()
    runs = [(path, *pipe.raw_logits(texts, batch_size), torch.tensor(labels)) for path, texts, labels in held]
    fitted = [r for r in runs if r[0] in fit_on]
    logits = torch.cat([r[1] for r in fitted])  # (N, 2)
    lengths = [n for r in fitted for n in r[2]]
    labels = torch.cat([r[3] for r in fitted])  # (N,)
    temp = Temperature(fit_temperature(logits, labels)) if plain else fit_length_temperature(logits, labels, lengths)
    report = {}
    for path, lg, n, y in runs:
        report[path] = {
            "n": len(y),
            "fitted_on": path in fit_on,
            "accuracy": round(float((lg.argmax(-1) == y).float().mean()), 5),
            "ece_before": round(expected_calibration_error(lg.softmax(-1), y), 5),
            "ece_after": round(expected_calibration_error(temp.scale(lg, n).softmax(-1), y), 5),
        }
    pipe.calibration = temp
    return temp.to_preprocessing(), report


def fit_spreads(domain, pipe, task: str, held: list) -> dict:
    """{signal: Spread} of the task's length-aware signals, fitted on all the held-out texts together."""
    from pipelines.trust.domain import Spread

    names = TRAINING_TASKS[task].calibration.length_aware
    if not names:
        return {}
    values = [domain.piece_values(ids) for _, texts, _ in held for ids in pipe.encode_many(texts)]
    return {name: Spread.fit([v[name] for v in values]) for name in names}


def fit_domain(pipe, task: str, held: list, a) -> tuple[dict, dict]:
    """(preprocessing["domain"], flag rate per held-out file) of the out-of-domain statistics."""
    from pipelines.trust.domain import (
        DomainModel,
        choose_threshold,
        decode_f16,
        encode_f16,
        piece_letters,
        quantiles,
        token_log_ratio,
    )

    tok, V = pipe.tokenizer, pipe.model.config.vocab_size
    spec = TRAINING_TASKS[task].calibration
    language = a.language or spec.language
    if a.general_counts:
        general, about = read_general_counts(a.general_counts, tok, V, language, a.general_words)
    else:
        general, about = general_counts(tok, V, language, a.general_words)
    ratio = token_log_ratio(training_counts(tok, V, a.train_data, task), general)
    ratio = decode_f16(encode_f16(ratio))  # fit on exactly the scores that preprocessing.json stores
    domain = DomainModel(ratio, piece_letters(tok, V), {}, 0.0, {})
    domain.length_aware = fit_spreads(domain, pipe, task, held)
    per_file = [spec.signals(pipe, domain, texts, a.batch_size) for _, texts, _ in held]
    domain.references = {k: quantiles([v for sig in per_file for v in sig[k]]) for k in per_file[0]}
    scores = [[domain.score(dict(zip(sig, vals))) for vals in zip(*sig.values())] for sig in per_file]
    domain.threshold = choose_threshold(scores, a.target_rate)
    domain.info = {
        "signals": list(per_file[0]),
        "general_text": about,
        "training_data": a.train_data,
        "held_out_data": [path for path, _, _ in held],
        "target_rate": a.target_rate,
    }
    rates = {path: float(np.mean([s < domain.threshold for s in sc])) for (path, _, _), sc in zip(held, scores)}
    pipe.domain = domain
    return domain.to_preprocessing(), rates


def score_test_files(a) -> dict:
    """training.evaluate's JSON result for each --test-data file, on the calibrated folder."""
    import contextlib
    import io

    from training.evaluate import main as evaluate

    out = {}
    for path in a.test_data:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = evaluate([a.task, "--model", str(a.model), "--data", path, "--batch-size", str(a.batch_size)])
        if code:
            raise RuntimeError(f"evaluating {path} failed")
        result = json.loads(buf.getvalue().strip().splitlines()[-1])
        out[path] = {k: v for k, v in result.items() if k not in ("model", "data")}
    return out


def flag_rates(pipe, a) -> dict:
    """{file: {"n", "out_of_domain_rate"}} of each --test-data file: the flags alone, which read no model."""
    out = {}
    for path in a.test_data:
        texts, _ = read_texts(path, a.task)
        flags = [flagged for flagged, _ in pipe.domain_scores(texts)]
        out[path] = {"n": len(texts), "out_of_domain_rate": sum(flags) / len(texts)}
    return out


def same_data(recorded: str | None, path: str) -> bool:
    """Whether a file recorded in metrics.json (perhaps on another machine) is this one: the same folder and file
    name ("imdb/test.parquet"), as a bundle's record names the data sets."""
    return bool(recorded) and Path(recorded).parts[-2:] == Path(path).parts[-2:]


def record_metrics(folder: Path, calibration: dict, domain_only: bool = False) -> None:
    """Add the calibration record to metrics.json (and ECE / flag rate to its test entry when scored here); a run's
    best/ model has none yet: one is started, and training.ship carries its calibration record into the bundle.
    With domain_only the earlier record is kept and updated: the temperature fit and the scores stay, and every
    scored entry of the same data gets the new out-of-domain rate."""
    path = folder / "metrics.json"
    metrics = json.loads(path.read_text()) if path.is_file() else {}
    if domain_only:
        old = metrics.get("calibration") or {}
        tests = {**(old.get("test") or {})}
        for file, scored in calibration.get("test", {}).items():
            tests[file] = {**tests.get(file, {}), **scored}
        calibration = {**old, **calibration, "test": tests}
        for entry in (v for v in metrics.values() if isinstance(v, dict) and "data" in v):
            rates = [r for f, r in calibration["test"].items() if same_data(entry["data"], f)]
            if rates and "out_of_domain_rate" in entry:
                entry["out_of_domain_rate"] = rates[0]["out_of_domain_rate"]
        metrics["calibration"] = calibration
        return atomic_write_json(path, metrics)
    metrics["calibration"] = calibration
    test = metrics.get("test") or {}
    scored = calibration.get("test", {}).get(test.get("data"))
    if scored:
        test.update({k: v for k, v in scored.items() if k in ("ece", "out_of_domain_rate", "accuracy")})
    atomic_write_json(path, metrics)


def temperature_files(a) -> list[str]:
    """The --data files (as given there) the temperature is fitted on: those --temperature-data names, else all."""
    from training.engine.data import DataError

    if a.temperature_data is None:
        return a.data
    if not TRAINING_TASKS[a.task].calibration.temperature:
        raise DataError(f"--temperature-data is for a classifier: a {a.task} model has no temperature")
    given = {Path(path).resolve(): path for path in a.data}
    unknown = [path for path in a.temperature_data if Path(path).resolve() not in given]
    if unknown:
        raise DataError(f"--temperature-data must be among the --data files: {unknown}")
    return [given[Path(path).resolve()] for path in a.temperature_data]


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    from training.engine.data import DataError
    from transformer import CheckpointError

    try:
        fit_on = temperature_files(a)
        spec = TRAINING_TASKS[a.task]
        pipe = spec.task.pipeline.from_pretrained(str(a.model))
        held = [(path, *read_texts(path, a.task)) for path in a.data]
        prep_path = a.model / "preprocessing.json"
        prep = json.loads(prep_path.read_text()) if prep_path.is_file() else {}
        record: dict = {}
        if spec.calibration.temperature and not a.domain_only:
            entries, record["temperature_fit"] = fit_temperature_on(
                pipe, held, a.plain_temperature, a.batch_size, fit_on
            )
            prep.update(entries)
        prep["domain"], record["held_out_flag_rate"] = fit_domain(pipe, a.task, held, a)
    except (DataError, CheckpointError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    atomic_write_json(prep_path, prep)
    record.update({k: v for k, v in prep.items() if k.startswith("temperature")})
    record["out_of_domain_threshold"] = prep["domain"]["threshold"]
    record["test"] = flag_rates(pipe, a) if a.domain_only else score_test_files(a)
    record_metrics(a.model, record, a.domain_only)
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
