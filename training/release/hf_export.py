"""Make a model folder loadable by `transformers` with trust_remote_code=True, its weights untouched.

training.publish calls export() on the folder it assembles for the Hub. The folder gets the wrapper classes
(training/release/hf_modeling.py, as modeling_attention_demo.py) and the `transformer/` files they import (copied as
they are: their imports are relative already); config.json gets `auto_map`, `model_type` and `architectures`
(and the classifier's label names); the translator gets a generation_config.json. model.safetensors,
tokenizer.json and preprocessing.json stay as they were, so the app loads the folder as before.
"""

import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pipelines.models.folders import PREPROCESSING
from training.release.hf_modeling import (
    AttentionDemoForCausalLM,
    AttentionDemoForConditionalGeneration,
    AttentionDemoForSequenceClassification,
)
from training.tasks.table import TRAINING_TASKS
from transformer.config import CausalLMConfig, ClassifierConfig, Seq2SeqConfig
from transformer.hub import CONFIG

PACKAGE = Path(__file__).resolve().parents[2] / "transformer"
WRAPPER = Path(__file__).resolve().with_name("hf_modeling.py")
MODELING = "modeling_attention_demo.py"  # the name the wrapper takes in the folder
GENERATION_CONFIG = "generation_config.json"
_PACKAGE_IMPORT = re.compile(r"^(\s*)from transformer\.(\w+) import", re.M)
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+\.(\w+)\s+import", re.M)  # as transformers finds them


@dataclass(frozen=True)
class Export:
    """How one kind of model appears to `transformers`: a task names its Auto class (training/tasks/table.py)."""

    auto_model: str  # the Auto class that loads it
    model_class: type  # in hf_modeling.py
    model_config: type  # its config in transformer.config: the token ids and lengths generate() reads
    labelled: bool = False  # config.json names the labels (id2label), from preprocessing.json
    generates: bool = False  # a generation_config.json for generate()
    decoder_start: bool = False  # generate() starts the decoder from <s> (decoder_start_token_id)

    @property
    def model_type(self) -> str:
        return self.model_class.config_class.model_type


EXPORTS = {  # the Auto class -> how a model it loads is exported
    e.auto_model: e
    for e in (
        Export(
            "AutoModelForSequenceClassification",
            AttentionDemoForSequenceClassification,
            ClassifierConfig,
            labelled=True,
        ),
        Export(
            "AutoModelForSeq2SeqLM",
            AttentionDemoForConditionalGeneration,
            Seq2SeqConfig,
            generates=True,
            decoder_start=True,
        ),
        Export("AutoModelForCausalLM", AttentionDemoForCausalLM, CausalLMConfig, generates=True),
    )
}


def export_of(task: str) -> Export:
    """How the model of `task` is exported: the one of the Auto class the task names."""
    return EXPORTS[TRAINING_TASKS[task].auto_model]


def remote_code() -> dict[str, str]:
    """{file name: source} of what the folder needs: the wrapper, and every `transformer/` module it reaches."""
    wrapper = WRAPPER.read_text()
    files = {MODELING: _PACKAGE_IMPORT.sub(r"\1from .\2 import", wrapper)}
    if re.search(r"^\s*(import transformer\b|from transformer import)", files[MODELING], re.M):
        raise ValueError(f"{WRAPPER.name} must import transformer's modules one by one (from transformer.x import)")
    todo = _RELATIVE_IMPORT.findall(files[MODELING])
    while todo:
        name = todo.pop()
        if f"{name}.py" in files:
            continue
        source = (PACKAGE / f"{name}.py").read_text()
        files[f"{name}.py"] = source
        todo += _RELATIVE_IMPORT.findall(source)
    return files


def transformers_config(task: str, labels: list[str] | None = None) -> dict:
    """The keys `transformers` reads in config.json, besides the model's own (which the config class takes)."""
    e, module = export_of(task), MODELING.removesuffix(".py")
    keys = {
        "model_type": e.model_type,
        "architectures": [e.model_class.__name__],
        "auto_map": {
            "AutoConfig": f"{module}.{e.model_class.config_class.__name__}",
            e.auto_model: f"{module}.{e.model_class.__name__}",
        },
    }
    if labels:
        keys["id2label"] = {str(i): label for i, label in enumerate(labels)}
        keys["label2id"] = {label: i for i, label in enumerate(labels)}
    return keys


def export(task: str, folder: Path) -> list[str]:
    """Add the transformers files to a complete model folder of `task` (in place); returns the names written."""
    folder, spec = Path(folder), export_of(task)
    written = []
    for name, source in remote_code().items():
        (folder / name).write_text(source)
        written.append(name)
    config = json.loads((folder / CONFIG).read_text())
    prep_file = folder / PREPROCESSING
    prep = json.loads(prep_file.read_text()) if prep_file.is_file() else {}
    config |= transformers_config(task, prep.get("labels") if spec.labelled else None)
    _write_json(folder / CONFIG, config)
    written.append(CONFIG)
    if spec.generates:
        _write_json(folder / GENERATION_CONFIG, generation_config(config, spec))
        written.append(GENERATION_CONFIG)
    return sorted(written)


def generation_config(config: dict, spec: Export) -> dict:
    """generate()'s settings for a model of this config.json exported as `spec` (a Seq2SeqTransformer or CausalLM):
    its token ids, greedy, no cache."""
    cls = spec.model_config
    c = cls(**{f.name: config[f.name] for f in dataclasses.fields(cls) if f.name in config})
    start = {"decoder_start_token_id": c.bos_id} if spec.decoder_start else {}
    return {
        **start,
        "bos_token_id": c.bos_id,
        "eos_token_id": c.eos_id,
        "pad_token_id": c.pad_id,
        "max_length": c.max_len - 1,  # positions: BOS and the tokens after it
        "use_cache": False,
    }


def _write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
