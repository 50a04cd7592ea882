"""Assembling the folders `python -m training.publish` sends: a model repo (the model's files, the code that lets
`transformers` load it, a model card with an attention figure; one sub-folder per training snapshot's branch) and the
Space (app.py, the packages it imports, requirements.txt, README.md, bundled models). Nothing here talks to the Hub."""

import json
import shutil
from pathlib import Path

from pipelines.models.folders import METRICS, MODEL_FILES, model_file_names
from pipelines.models.snapshots import INDEX, read_infos
from training.release.checks import EXIT_INPUT, PublishError, check_repo_id, read_metrics
from training.release.space import copy_space_sources, gradio_version, missing_sources
from training.tasks.table import TRAINING_TASKS
from transformer.hub import (
    SNAPSHOT_INFO,
    SNAPSHOTS,
    WEIGHTS_INDEX,
    CheckpointError,
    missing_files,
    snapshot_revision,
    weight_files,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the project: app.py, its packages, assets/
# Models the Space loads from the Hub, not from a folder of ours (a Space reaches the Hub): the next-word tab's
# pre-trained model. `--lm-hub-model ''` leaves it out (the tab then offers ours alone).
SMOLLM2_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct"
SPACE_TITLE = "How transformers pay attention"


def build_model_folder(
    task: str, model_dir: Path, pipe, repo_id: str, folder: Path, snapshots: list[dict] | None = None
) -> list[str]:
    """Copy the model's files into `folder`, add what `transformers` needs to load it (trust_remote_code=True),
    and write the model card and its attention figure there; `snapshots` (their snapshot.json records): the
    branches the card lists and snapshots.json indexes."""
    from dataclasses import asdict

    from training.release.hf_export import export
    from training.release.model_card import FIGURE, model_card

    metrics = read_metrics(task, model_dir)
    for name in (*model_file_names(model_dir), METRICS):
        if (model_dir / name).is_file():
            shutil.copy2(model_dir / name, folder / name)
    export(task, folder)
    figure = TRAINING_TASKS[task].figure(pipe)
    figure.image().save(folder / FIGURE)
    n_params = sum(p.numel() for p in pipe.model.parameters())
    card = model_card(task, repo_id, asdict(pipe.model.config), n_params, metrics, figure.caption, snapshots)
    card.save(folder / "README.md")
    if snapshots:
        (folder / INDEX).write_text(json.dumps(snapshots, indent=1) + "\n")
    return list_files(folder)


def _int8_weights(folder: Path) -> bool:
    """Whether the folder's weights are stored int8 (transformer/quantize.py)."""
    from safetensors import safe_open

    from transformer.quantize import is_quantized

    names = {}
    for f in weight_files(folder):
        with safe_open(f, "pt") as weights:
            names.update(dict.fromkeys(weights.keys()))
    return is_quantized(names)


def build_snapshot_folder(task: str, snapshot_dir: Path, repo_id: str, info: dict, folder: Path) -> list[str]:
    """One snapshot's branch: its model files and snapshot.json, the code `transformers` loads it with, a short card.
    Its weights go up as they are, but int8 ones (a bundle's snapshots) in fp16: the Hub has room, and
    `transformers` reads fp16."""
    from training.release.hf_export import export
    from training.release.model_card import snapshot_card
    from training.release.storage import write_weights

    int8 = _int8_weights(snapshot_dir)
    weights = {f.name for f in weight_files(snapshot_dir)} | {WEIGHTS_INDEX} if int8 else set()
    for name in (*model_file_names(snapshot_dir), SNAPSHOT_INFO):
        if name not in weights:
            shutil.copy2(snapshot_dir / name, folder / name)
    if int8:
        write_weights(snapshot_dir, folder)
    export(task, folder)
    snapshot_card(task, repo_id, info).save(folder / "README.md")
    return list_files(folder)


def snapshot_branches(task: str, model_dir: Path, repo_id: str, out: Path) -> dict[str, Path]:
    """{branch: its assembled folder} for each snapshot of the model folder, under out/; PublishError for a
    snapshot that is not a complete model folder or does not load."""
    from pipelines.tasks import TASKS

    cls = TASKS[task].pipeline
    branches = {}
    for info in read_infos(model_dir):
        branch = snapshot_revision(info["step"])
        src = model_dir / SNAPSHOTS / branch
        try:
            cls.from_pretrained(str(src))
        except CheckpointError as e:
            raise PublishError(EXIT_INPUT, f"--model {model_dir}: snapshot {branch} does not load: {e}") from e
        branches[branch] = out / branch
        branches[branch].mkdir()
        build_snapshot_folder(task, src, repo_id, info, branches[branch])
    return branches


def build_space_folder(folder: Path, variables: dict[str, str], root: Path | None = None) -> list[str]:
    """The Space: app.py, the packages it imports, requirements.txt, README.md, and bundled models if any."""
    from training.release.model_card import space_card

    root = root or PROJECT_ROOT
    missing = missing_sources(root)
    if missing:
        raise PublishError(EXIT_INPUT, f"the Space needs {', '.join(missing)} in {root}, which is missing")
    requirements = copy_space_sources(root, folder, variables)
    space_card(SPACE_TITLE, gradio_version(requirements), variables).save(folder / "README.md")
    return list_files(folder)


def space_variables(args, root: Path | None = None) -> dict[str, str]:
    """SENTIMENT_MODEL / TRANSLATION_MODEL / LM_OURS_MODEL: the given model repo, else the project's assets/<task>
    folder; LM_MODEL: the pre-trained next-word model's Hub repo (--lm-hub-model)."""
    root = root or PROJECT_ROOT
    variables = {}
    for spec in TRAINING_TASKS.values():
        task, var = spec.name, spec.space_variable
        repo = getattr(args, f"{task}_repo", None)
        if repo:
            check_repo_id(repo, f"--{task}-repo")
            variables[var] = repo
        elif (root / "assets" / task).is_dir() and not missing_files(root / "assets" / task, MODEL_FILES):
            variables[var] = f"assets/{task}"
            print(f"note: no --{task}-repo, so the Space bundles assets/{task} and loads it from there")
        elif spec.optional_in_space:
            print(f"note: no --{task}-repo and no assets/{task}: the Space's {task} tab offers the Hub model alone")
        else:
            raise PublishError(
                EXIT_INPUT,
                f"the Space needs a {task} model: pass --{task}-repo USER/NAME (publish the model first), "
                f"or put a complete model folder in {root / 'assets' / task}",
            )
    hub_lm = getattr(args, "lm_hub_model", "")
    if hub_lm:
        check_repo_id(hub_lm, "--lm-hub-model")
        variables["LM_MODEL"] = hub_lm
    return variables


def list_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def report_folder(folder: Path, files: list[str], repo_id: str, branches: dict[str, Path] | None = None) -> None:
    print(f"dry run: nothing was sent to the Hub. The folder for {repo_id} is ready at {folder}")
    if branches:
        print(f"branch main: the final model ({folder / 'main'})")
        folder = folder / "main"
    for f in files:
        print(f"  {f}  ({(folder / f).stat().st_size:,} bytes)")
    for branch, path in (branches or {}).items():
        info = json.loads((path / SNAPSHOT_INFO).read_text())
        metric = info.get("metric")
        print(f"branch {branch}: snapshot at step {info['step']}, {metric} {info.get(metric)} ({path})")
        for f in list_files(path):
            print(f"  {f}  ({(path / f).stat().st_size:,} bytes)")
