"""Loading the training data (local Parquet mirrors or the Hub data sets) and checking it before training."""

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataSet:
    """A data set the tasks train on: where the Hub keeps it, the columns a split must have, the splits read."""

    name: str  # in messages
    hub_id: str
    columns: tuple[str, ...]
    splits: tuple[str, ...]  # read when the caller names none


IMDB = DataSet("imdb", "stanfordnlp/imdb", ("text", "label"), ("train", "test"))  # reviews: sentiment, pretrain, lm
MULTI30K = DataSet("multi30k", "bentrevett/multi30k", ("de", "en"), ("train", "validation", "test"))
SST2 = DataSet("sst2", "stanfordnlp/sst2", ("sentence", "label"), ("train",))


class DataError(ValueError):
    """The data set is missing or malformed. Raised before any training starts."""


def load_splits(data: DataSet, data_dir: str | None, splits: tuple[str, ...] | None = None) -> dict:
    """{split: datasets.Dataset} of `data` from `data_dir`/<split>.parquet, or from the Hub data set without it."""
    import datasets
    import pyarrow.parquet as pq

    datasets.disable_progress_bars()
    splits = splits or data.splits
    if data_dir is not None:
        folder = Path(data_dir)
        if not folder.is_dir():
            raise DataError(f"--data-dir {folder}: no such folder")
        files = {s: folder / f"{s}.parquet" for s in splits}
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            raise DataError(f"--data-dir {folder}: missing {', '.join(missing)}")
        ds = {}
        for s, p in files.items():  # one by one, so a split with other columns gets its own clear message
            try:
                if pq.read_metadata(p).num_rows == 0:
                    raise DataError(f"the '{s}' split is empty ({p})")
                ds[s] = datasets.load_dataset("parquet", data_files={s: str(p)}, split=s)
            except DataError:
                raise
            except Exception as e:
                raise DataError(f"{p}: cannot read it as Parquet: {e}") from e
    else:
        try:
            ds = datasets.load_dataset(data.hub_id)
        except Exception as e:
            raise DataError(
                f"cannot load {data.hub_id} from the Hugging Face Hub ({type(e).__name__}: {e}); "
                "pass --data-dir with local Parquet files instead"
            ) from e
    out = {s: ds[s] for s in splits if s in ds}
    for s in splits:
        if s not in out:
            raise DataError(f"{data.name} data has no '{s}' split")
        check_split(data, s, out[s])
    return out


def check_split(data: DataSet, name: str, split) -> None:
    """Columns present, split not empty, labels in range, no empty strings."""
    if len(split) == 0:
        raise DataError(f"the '{name}' split is empty")
    missing = [c for c in data.columns if c not in split.column_names]
    if missing:
        raise DataError(f"the '{name}' split lacks column(s) {missing}; it has {split.column_names}")
    if "label" in data.columns and name != "unsupervised":
        labels = set(split["label"])
        if not labels <= {0, 1}:
            raise DataError(
                f"the '{name}' split has labels {sorted(labels - {0, 1})[:5]} outside 0 (negative) / 1 (positive)"
            )
        if len(labels) < 2 and name == "train":
            raise DataError(f"the '{name}' split has only label {labels}: a classifier needs both")
    for col in data.columns:
        if col == "label" or col not in split.column_names:
            continue
        bad = sum(1 for t in split[col] if not isinstance(t, str) or not t.strip())
        if bad:
            raise DataError(f"the '{name}' split has {bad} empty or non-text value(s) in column '{col}'")


def load_table(path: str, columns: tuple[str, ...], aliases: dict[str, str] | None = None):
    """An evaluation file (Parquet, CSV or JSON lines) as a datasets.Dataset with the given columns.

    `aliases` maps a column to another name it may have in the file (SST-2's `sentence` for `text`).
    """
    import datasets

    datasets.disable_progress_bars()
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{path}: no such file")
    kind = {".parquet": "parquet", ".csv": "csv", ".jsonl": "json", ".json": "json"}.get(p.suffix.lower())
    if kind is None:
        raise DataError(f"{path}: unknown file type '{p.suffix}' (use .parquet, .csv or .jsonl)")
    try:
        ds = datasets.load_dataset(kind, data_files={"data": str(p)})["data"]
    except Exception as e:
        raise DataError(f"{path}: cannot read it as {kind}: {e}") from e
    for col, alt in (aliases or {}).items():
        if col not in ds.column_names and alt in ds.column_names:
            ds = ds.rename_column(alt, col)
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; it has {ds.column_names}")
    if len(ds) == 0:
        raise DataError(f"{path}: no rows")
    return ds


def seeded_sample(path: str, columns: tuple[str, ...], n: int, seed: int) -> dict[str, list]:
    """A seeded sample of n rows of a Parquet file, as lists per column (the benchmarks' inputs)."""
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=list(columns))
    rows = np.random.default_rng(seed).permutation(table.num_rows)[: min(n, table.num_rows)]
    return {c: [table.column(c)[int(i)].as_py() for i in rows] for c in columns}
