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

from pipelines.common import PREPROCESSING
from training.release.hf_modeling import (
    AttentionDemoForCausalLM,
    AttentionDemoForConditionalGeneration,
    AttentionDemoForSequenceClassification,
)
from transformer.config import CausalLMConfig, Seq2SeqConfig
from transformer.hub import CONFIG

PACKAGE = Path(__file__).resolve().parents[2] / "transformer"
WRAPPER = Path(__file__).resolve().with_name("hf_modeling.py")
MODELING = "modeling_attention_demo.py"  # the name the wrapper takes in the folder
GENERATION_CONFIG = "generation_config.json"
_PACKAGE_IMPORT = re.compile(r"^(\s*)from transformer\.(\w+) import", re.M)
_RELATIVE_IMPORT = re.compile(r"^\s*from\s+\.(\w+)\s+import", re.M)  # as transformers finds them


@dataclass(frozen=True)
class Export:
    """How one task's model appears to `transformers`."""

    auto_model: str  # the Auto class that loads it
    model_class: type  # in hf_modeling.py
    labelled: bool = False  # config.json names the labels (id2label), from preprocessing.json
    generates: bool = False  # a generation_config.json for generate()

    @property
    def model_type(self) -> str:
        return self.model_class.config_class.model_type


EXPORTS = {
    "sentiment": Export("AutoModelForSequenceClassification", AttentionDemoForSequenceClassification, labelled=True),
    "translation": Export("AutoModelForSeq2SeqLM", AttentionDemoForConditionalGeneration, generates=True),
    "lm": Export("AutoModelForCausalLM", AttentionDemoForCausalLM, generates=True),
}


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
    e, module = EXPORTS[task], MODELING.removesuffix(".py")
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
    folder, spec = Path(folder), EXPORTS[task]
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
        _write_json(folder / GENERATION_CONFIG, generation_config(config, task))
        written.append(GENERATION_CONFIG)
    return sorted(written)


def generation_config(config: dict, task: str = "translation") -> dict:
    """generate()'s settings for a Seq2SeqTransformer or CausalLM of this config.json: its token ids, greedy, no
    cache."""
    cls = CausalLMConfig if task == "lm" else Seq2SeqConfig
    c = cls(**{f.name: config[f.name] for f in dataclasses.fields(cls) if f.name in config})
    start = {} if task == "lm" else {"decoder_start_token_id": c.bos_id}
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
