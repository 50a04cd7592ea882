"""README cards for the Hub: a model card per trained model (metadata + model-index), and the Space's README.

Pure text: the caller passes the model's config, its parameter count, metrics.json (or None) and the figure. What a
card says of each task is its entry's `card` (training/tasks/table.py, the texts in card_texts.py).
"""

from huggingface_hub import EvalResult, ModelCard, ModelCardData, SpaceCard, SpaceCardData

from pipelines.models.snapshots import starting_point
from training.release.card_texts import TaskInfo
from training.release.space import is_bundled
from training.tasks.table import TRAINING_TASKS
from transformer.hub import HUB_KWARGS

FIGURE = "attention.png"


def eval_results(task: str, metrics: dict | None) -> list[EvalResult]:
    """The measured test-set metrics of metrics.json as model-index entries (none without a test score)."""
    info = TRAINING_TASKS[task].card
    test = (metrics or {}).get("test") or {}
    return [
        EvalResult(
            task_type=info.pipeline_tag,
            dataset_type=info.dataset_id,
            dataset_name=info.dataset_name,
            dataset_split=test.get("split", "test"),
            metric_type=metric_id,
            metric_name=name,
            metric_value=test[key],
            metric_config="cased" if key.endswith("_cased") else None,
        )
        for key, metric_id, name in info.metrics
        if isinstance(test.get(key), (int, float))
    ]


def model_card(
    task: str,
    repo_id: str,
    config: dict,
    n_params: int,
    metrics: dict | None,
    figure_caption: str | None = None,
    snapshots: list[dict] | None = None,
) -> ModelCard:
    """The README.md of a model repo: Hub metadata (with model-index when metrics exist) and the card text;
    `snapshots` (snapshot.json records): the training snapshots its branches hold, listed with their scores."""
    info, name = TRAINING_TASKS[task].card, repo_id.split("/")[-1]
    results = eval_results(task, metrics)
    origin, license_text = _provenance(metrics)
    data = ModelCardData(
        model_name=name if results else None,  # only model-index uses it
        language=info.language,
        license=_source(metrics).get("license") or HUB_KWARGS["license"],
        library_name=HUB_KWARGS["library_name"],
        pipeline_tag=info.pipeline_tag,
        datasets=[info.dataset_id],
        metrics=sorted({m for _, m, _ in info.metrics}),
        tags=list(dict.fromkeys([*HUB_KWARGS["tags"], *info.tags, "pytorch", "safetensors", "custom_code"])),
        eval_results=results or None,
    )
    sections = [
        f"# {name}",
        f"A {_count(n_params)}-parameter {info.architecture(config)}, written from scratch in PyTorch and "
        f"{origin} for the *How transformers pay attention* demo. It {info.summary}.",
        _figure(figure_caption),
        "## Intended uses\n\n" + _bullets(info.intended),
        "## Limitations: what it is not for\n\n"
        + _bullets(info.not_for_fine_tuned if _source(metrics) and info.not_for_fine_tuned else info.not_for),
        "## How to use\n\n" + _usage(info, repo_id),
        "## Model\n\n" + _config_table(config, n_params),
        "## Training\n\n" + _training(metrics),
        "## Evaluation\n\n" + _evaluation(task, metrics),
        _snapshots(info, repo_id, snapshots, starting_point(metrics)),
        _calibration(metrics),
        "## License\n\n" + license_text,
    ]
    content = f"---\n{data.to_yaml()}\n---\n\n" + "\n\n".join(s for s in sections if s) + "\n"
    return ModelCard(content)


def _snapshots(info: TaskInfo, repo_id: str, snapshots: list[dict] | None, started: str = "") -> str:
    """The training snapshots section: one branch each, with its step, loss and validation score; `started`: what
    its step 0 is (pipelines.models.snapshots.starting_point), "" for a model trained from random weights."""
    if not snapshots:
        return ""
    start = started or "the untrained start"
    metric = snapshots[0].get("metric") or "score"
    rows = [
        f"| `step-{s['step']}` | {s['step']:,} | {_number(s.get('epoch'))} | {_number(s.get('loss'))} "
        f"| {_fmt(metric, s.get(metric))} |"
        for s in snapshots
    ]
    return (
        "## Training snapshots\n\n"
        f"The model as it was at {len(snapshots)} steps of its training, from {start} to the end (one "
        "branch each; `main` holds the final model), to see its attention form. Scores are on the validation "
        "data the run used, at that step.\n\n"
        f"| revision | step | epoch | training loss | validation {metric} |\n|---|---:|---:|---:|---:|\n"
        + "\n".join(rows)
        + "\n\n"
        + _load_revision(info, repo_id, snapshots[0]["step"])
    )


def snapshot_card(task: str, repo_id: str, snapshot: dict) -> ModelCard:
    """The README.md of a snapshot's branch: what it is and how to load it; the full card is on main."""
    info = TRAINING_TASKS[task].card
    metric = snapshot.get("metric") or "score"
    data = ModelCardData(
        language=info.language,
        license=HUB_KWARGS["license"],
        library_name=HUB_KWARGS["library_name"],
        pipeline_tag=info.pipeline_tag,
        tags=list(dict.fromkeys([*HUB_KWARGS["tags"], *info.tags, "training-snapshot"])),
    )
    body = (
        f"# {repo_id.split('/')[-1]} at step {snapshot['step']:,}\n\n"
        f"A snapshot taken during training of [{repo_id}](https://huggingface.co/{repo_id}) (its `main` branch holds "
        f"the final model and the full model card): after {snapshot['step']:,} optimizer steps "
        f"({_number(snapshot.get('epoch'))} epochs), training loss {_number(snapshot.get('loss'))}, validation "
        f"{metric} {_fmt(metric, snapshot.get(metric))}. It is kept to show how attention forms, not for use.\n\n"
        + _load_revision(info, repo_id, snapshot["step"])
        + "\n"
    )
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}")


def _load_revision(info: TaskInfo, repo_id: str, step: int) -> str:
    return (
        f"```python\nfrom pipelines import {info.pipeline_class}\n\n"
        f'pipe = {info.pipeline_class}.from_pretrained("{repo_id}", revision="step-{step}")\n```'
    )


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else "-"


def space_card(title: str, sdk_version: str, variables: dict[str, str], python_version: str = "3.11") -> SpaceCard:
    """The README.md of the Space: the YAML front matter the Hub builds it from, and a short text.

    `variables` maps SENTIMENT_MODEL / TRANSLATION_MODEL / LM_OURS_MODEL / LM_MODEL to a Hub repo id or a folder
    bundled in the Space.
    """
    bundled = {v for v in variables.values() if is_bundled(v)}  # folders inside the Space
    data = SpaceCardData(
        title=title,
        emoji="🔍",
        colorFrom="indigo",
        colorTo="blue",
        sdk="gradio",
        sdk_version=sdk_version,
        python_version=python_version,
        app_file="app.py",
        pinned=False,
        license=HUB_KWARGS["license"],
        models=sorted(set(variables.values()) - bundled) or None,
        short_description="See where each attention head of a transformer looks",  # the Hub allows 60 characters
        tags=["attention-visualization", "from-scratch", "attention"],
    )
    where = "\n".join(
        f"- `{k}` = `{v}`, a model folder bundled in this Space"
        if v in bundled
        else f"- `{k}` = [`{v}`](https://huggingface.co/{v})"
        for k, v in variables.items()
    )
    body = "\n\n".join(
        [
            f"# {title}",
            "An interactive demo of attention in transformers: a sentiment classifier (English movie reviews), "
            "a German-to-English translator and a next-word model, written from scratch in PyTorch, trained "
            "here or loaded from public weights (all-MiniLM-L6-v2, SmolLM2-135M-Instruct). Type a text and see, "
            "for every layer and head, which tokens each token attends to.",
            "The app loads its models from the Space variables (Settings, Variables and secrets), which take a "
            "Hub repo id or a folder in the Space:\n\n" + where,
        ]
    )
    return SpaceCard(f"---\n{data.to_yaml()}\n---\n\n{body}\n")


def _source(metrics: dict | None) -> dict:
    """The public weights a model started from (metrics.json's source_weights), {} for one trained from scratch."""
    source = (metrics or {}).get("source_weights")
    return source if isinstance(source, dict) else {}


def _provenance(metrics: dict | None) -> tuple[str, str]:
    """(where the weights come from, for the card's first lines; the License section), from the public weights the
    model started from, if any."""
    s = _source(metrics)
    if not s:
        return "trained from scratch", "MIT."
    revision = f" at revision `{s['revision']}`" if s.get("revision") else ""
    credit = f" Credit: {s['credit']}." if s.get("credit") else ""
    sha = f"sha256 `{s.get('sha256', '?')}`"
    how = f"{s['derived']}; {sha} of that copy" if s.get("derived") else sha
    origin = (
        f"started from the public weights of `{s.get('name', 'a BERT checkpoint')}`{revision} ({how}), loaded into "
        "that code and fine-tuned here"
    )
    license_text = (
        f"The weights derive from `{s.get('name')}`, released under {s.get('license', 'its own license')}; they are "
        f"published under the same license.{credit} The code is MIT."
    )
    return origin, license_text


def _count(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n:,}"


def _figure(caption: str | None) -> str:
    if not caption:
        return ""
    return f"![One attention map of this model]({FIGURE})\n\n*{caption}*"


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {s}" for s in items)


def _usage(info: TaskInfo, repo_id: str) -> str:
    return _usage_pipeline(info, repo_id) + "\n\n" + _usage_transformers(info, repo_id)


def _usage_transformers(info: TaskInfo, repo_id: str) -> str:
    """Loading the repo with `transformers` alone: the model code travels in the repo (trust_remote_code)."""
    return (
        "### With `transformers`\n\n"
        "The repo also holds the model's code (`modeling_attention_demo.py` and the from-scratch modules it "
        "imports), so `transformers` loads it with `trust_remote_code=True` and nothing else installed "
        "(`pip install transformers torch`). Read that code before you trust it.\n\n"
        "```python\n"
        "import torch\n"
        f"from transformers import AutoTokenizer, {info.auto_model}\n\n"
        f'tokenizer = AutoTokenizer.from_pretrained("{repo_id}", trust_remote_code=True)\n'
        f'model = {info.auto_model}.from_pretrained("{repo_id}", trust_remote_code=True)\n'
        f"{info.transformers_example}\n"
        "```\n\n"
        "`output_attentions=True` returns the model's exact attention weights, per layer. " + info.transformers_note
    )


def _usage_pipeline(info: TaskInfo, repo_id: str) -> str:
    return (
        "### With the project's pipelines (calibrated probabilities, every attention map, explanations)\n\n"
        "Install the project's library (the `transformer` and `pipelines` packages; they need only torch, "
        "huggingface_hub, safetensors and tokenizers) from a checkout of the project's code, or straight from "
        "its git repository:\n\n"
        "```bash\n"
        "pip install .                                   # in a checkout\n"
        'pip install "attention-demo @ git+<repository URL>"  # or from git; [app] adds the Gradio app\n'
        "```\n\n"
        "Then:\n\n"
        "```python\n"
        f"from pipelines import {info.pipeline_class}\n\n"
        f'pipe = {info.pipeline_class}.from_pretrained("{repo_id}")\n'
        f"{info.example}\n"
        "```\n\n"
        "The same call takes a local folder holding these files instead of a repo id."
    )


def _config_table(config: dict, n_params: int) -> str:
    rows = [("parameters", f"{n_params:,}")] + [(k, f"`{v}`") for k, v in sorted(config.items())]
    return "| setting | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def _training(metrics: dict | None) -> str:
    if not metrics:
        return "Not recorded for this checkpoint (it was published without a `metrics.json`)."
    lines = []
    if metrics.get("data"):
        lines.append(f"- Data: {metrics['data']}")
    if metrics.get("machine"):
        lines.append(f"- Machine: {metrics['machine']}")
    if metrics.get("weights"):
        lines.append(f"- Weights: {metrics['weights']}")
    if isinstance(metrics.get("wall_seconds"), (int, float)):
        lines.append(f"- Wall-clock time: {metrics['wall_seconds'] / 60:.0f} minutes")
    text = "\n".join(lines)
    earlier = []  # the runs behind a model that went on from a trained one (--continue-from), oldest first
    before = _source(metrics).get("continued_from") or {}
    while before.get("command"):
        earlier.insert(0, before["command"])
        before = before.get("continued_from") or {}
    for k, command in enumerate(earlier):
        text += f"\n\n{'First run' if k == 0 else 'Then, going on from its model'}:\n\n```bash\n{command}\n```"
    if earlier:
        text += "\n\nThen, going on from its model:"
    if metrics.get("command"):
        text += f"\n\nCommand:\n\n```bash\n{metrics['command']}\n```"
    recipe = metrics.get("recipe") or {}
    if recipe:
        text += "\n\nRecipe:\n\n| setting | value |\n|---|---|\n" + "\n".join(
            f"| {k} | `{v}` |" for k, v in recipe.items()
        )
    return text.strip() or "Not recorded for this checkpoint."


def _evaluation(task: str, metrics: dict | None) -> str:
    test = (metrics or {}).get("test") or {}
    val = (metrics or {}).get("validation") or {}
    shown = [(key, name) for key, _, name in TRAINING_TASKS[task].card.metrics if key in test or key in val]
    if not shown:
        return "Metrics were not recorded for this checkpoint, so this card reports no evaluation results."
    n = f" ({test['n']:,} examples)" if isinstance(test.get("n"), int) else ""
    split = test.get("split", "test")
    rows = [f"| {name} | {_fmt(key, test.get(key))} | {_fmt(key, val.get(key))} |" for key, name in shown]
    text = f"| metric | {split}{n} | validation |\n|---|---|---|\n" + "\n".join(rows)
    if test.get("beam"):  # a translator decoded with beam search
        text += f"\n\nDecoded with beam search, beam size {test['beam']}."
    return text + _contrast(metrics)


def _contrast(metrics: dict | None) -> str:
    """The hand-written contrast set (training.contrast), when metrics.json records it."""
    c = (metrics or {}).get("contrast")
    if not c:
        return ""
    kinds = ", ".join(f"{k} {v['flipped']}/{v['pairs']}" for k, v in c.get("by_kind", {}).items())
    return (
        f"\n\nContrast set ({c['pairs']} hand-written minimal pairs: one side positive, the other negative): "
        f"{c['contrast_accuracy']:.1%} of the sentences right, {c['pairs_flipped']} pairs with both sides right "
        f"(by kind: {kinds})."
    ) + _examples(c.get("builtin_examples"))


def _examples(e: dict | None) -> str:
    """The demo's example reviews (training.contrast `builtin_examples`), when they were scored."""
    if not e:
        return ""
    wrong = f"; wrong on: {', '.join(e['wrong'])}" if e["wrong"] else ""
    return f" The demo's {e['examples']} example reviews: {e['right']} right{wrong}."


def _calibration(metrics: dict | None) -> str:
    """What training.calibrate fitted and measured (metrics.json "calibration"), or '' when it never ran."""
    cal = (metrics or {}).get("calibration")
    if not cal:
        return ""
    lines = []
    if "temperature" in cal:
        t, e = cal["temperature"], cal.get("temperature_length_exponent", 0.0)
        which = (
            f"a temperature that depends on the input length n in tokens: T(n) = {t:.3f} x (n / 64) ^ {e:.3f}"
            if e
            else f"one temperature for every input length, T = {t:.3f}"
        )
        lines.append(
            f"- Probabilities are calibrated by temperature scaling (Guo et al. 2017), with {which}, fitted on "
            "held-out data."
        )
        for path, r in (cal.get("temperature_fit") or {}).items():
            before, after = r["ece_before"], r["ece_after"]
            role = "" if r.get("fitted_on", True) else "; not fitted on, only measured"
            lines.append(f"  - {path}: ECE {before:.3f} before, {after:.3f} after ({r['n']:,} inputs{role})")
    lines.append(
        "- Out-of-domain notice: results carry `out_of_domain` and `domain_score` (the share of held-out in-domain "
        "inputs that looked at most as typical); inputs below "
        f"{cal.get('out_of_domain_threshold', 0):.4f} are flagged."
    )
    for path, r in (cal.get("test") or {}).items():
        scores = ", ".join(f"{k} {_fmt(k, v)}" for k, v in r.items() if k in ("accuracy", "ece", "out_of_domain_rate"))
        lines.append(f"  - {path}: {scores}")
    return "## Calibration and out-of-domain notice\n\n" + "\n".join(lines)


def _fmt(key: str, value) -> str:
    if not isinstance(value, (int, float)):
        return "-"
    if key == "ece":
        return f"{value:.3f}"
    if key == "out_of_domain_rate":
        return f"{value:.1%}"
    return f"{value:.2%}" if key == "accuracy" and value <= 1 else f"{value:.2f}"
