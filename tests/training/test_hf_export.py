"""Our models out through `transformers`: the folder training.publish assembles loads with the Auto classes and
trust_remote_code=True, gives the pipeline's logits (before calibration) and its attention maps, and still loads
in the app. Offline: local folders only, HF_HUB_OFFLINE=1 (conftest)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import transformers
from hf_checks import GERMAN, REVIEWS, auto, check_classifier, check_translator, published
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForSeq2SeqLM

from pipelines import SentimentPipeline, TranslationPipeline
from training.release.hf_export import MODELING, export, export_of
from transformer import (
    CausalLM,
    CausalLMConfig,
    CheckpointError,
    ClassifierConfig,
    Seq2SeqConfig,
    Seq2SeqTransformer,
    TransformerClassifier,
    load_model,
)
from transformer.generation import generate
from transformer.hub import weight_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sentiment_repo(sentiment_dir, tmp_path_factory):
    return published("sentiment", sentiment_dir, tmp_path_factory.mktemp("hf") / "sentiment")


@pytest.fixture(scope="module")
def translation_repo(translation_dir, tmp_path_factory):
    return published("translation", translation_dir, tmp_path_factory.mktemp("hf") / "translation")


# --- the checks, for the tiny models and the bundled ones ---------------------------------------------------


# --- the tiny models ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["sentiment", "translation"])
def test_config_json_names_the_code_in_the_folder_and_the_app_still_loads_it(task, sentiment_repo, translation_repo):
    folder = {"sentiment": sentiment_repo, "translation": translation_repo}[task]
    spec = export_of(task)
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == spec.model_type and config["architectures"] == [spec.model_class.__name__]
    for target in config["auto_map"].values():  # "modeling_attention_demo.ClassName"
        module, name = target.split(".")
        assert f"{module}.py" == MODELING and re.search(rf"^class {name}\(", (folder / MODELING).read_text(), re.M)
    assert set(config["auto_map"]) == {"AutoConfig", spec.auto_model}
    hf_config = AutoConfig.from_pretrained(str(folder), trust_remote_code=True)
    assert type(hf_config).__name__ == spec.model_class.config_class.__name__
    assert hf_config.model_type == spec.model_type and hf_config.dtype == torch.float32
    # The app's loader reads the same config.json: the keys transformers needs do not stop it, and a folder of
    # the other task is still refused.
    pipeline = SentimentPipeline if task == "sentiment" else TranslationPipeline
    assert pipeline.from_pretrained(str(folder)).model.config.vocab_size == config["vocab_size"]
    if task == "translation":
        with pytest.raises(CheckpointError, match="does not describe a TransformerClassifier"):
            load_model(TransformerClassifier, folder)


def test_tiny_classifier_through_transformers_equals_the_pipeline(sentiment_repo):
    check_classifier(sentiment_repo)


def test_tiny_translator_through_transformers_equals_the_pipeline(translation_repo):
    check_translator(translation_repo)


def test_seq2seq_labels_are_shifted_right_behind_bos(translation_repo):
    model = auto(AutoModelForSeq2SeqLM, translation_repo)
    c = model.config
    src = torch.tensor([[20, 21, 22, c.eos_id], [23, 24, c.eos_id, c.pad_id]])  # (B, Ts)
    labels = torch.tensor([[30, 31, 32, c.eos_id], [33, c.eos_id, -100, -100]])  # -100: not scored
    with torch.no_grad():
        out = model(input_ids=src, attention_mask=(src != c.pad_id).long(), labels=labels)
        prefix = torch.tensor([[c.bos_id, 30, 31, 32], [c.bos_id, 33, c.eos_id, c.pad_id]])
        ref = model(input_ids=src, decoder_input_ids=prefix)
    torch.testing.assert_close(out.logits, ref.logits)
    scored = labels != -100
    torch.testing.assert_close(out.loss, F.cross_entropy(ref.logits[scored], labels[scored]))


@pytest.mark.parametrize("task", ["sentiment", "translation"])
def test_the_cards_how_to_use_runs_on_the_folder(task, sentiment_repo, translation_repo):
    """The card's `transformers` snippet, run as written (the repo id pointed at the local folder)."""
    folder = {"sentiment": sentiment_repo, "translation": translation_repo}[task]
    card = (folder / "README.md").read_text()
    section = card[card.index("### With `transformers`") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert f"{export_of(task).auto_model}.from_pretrained(" in code and "trust_remote_code=True" in code
    assert "output_attentions=True" in code
    scope: dict = {}
    exec(code.replace(f"alice/demo-{task}", str(folder)), scope)
    out, model = scope["out"], scope["model"]
    n_layers = len(model.model.encoder.blocks)
    maps = out.attentions if task == "sentiment" else out.cross_attentions
    assert len(maps) == (n_layers if task == "sentiment" else len(model.model.decoder.blocks))
    assert maps[-1].dim() == 4 and maps[-1].size(1) == model.config.n_heads


def test_the_folder_loads_with_transformers_and_torch_alone(sentiment_repo, translation_repo, tmp_path):
    """A fresh Python that cannot import this project (transformer/, pipelines/) loads both folders offline."""
    script = f"""
import importlib.util, json, torch
from transformers import AutoModelForSeq2SeqLM, AutoModelForSequenceClassification, AutoTokenizer
assert all(importlib.util.find_spec(m) is None for m in ("transformer", "pipelines", "training"))
s = AutoModelForSequenceClassification.from_pretrained({str(sentiment_repo)!r}, trust_remote_code=True)
tok = AutoTokenizer.from_pretrained({str(sentiment_repo)!r}, trust_remote_code=True)
t = AutoModelForSeq2SeqLM.from_pretrained({str(translation_repo)!r}, trust_remote_code=True)
with torch.no_grad():
    logits = s(**tok({REVIEWS!r}, padding=True, return_tensors="pt")).logits
    src = torch.tensor([[20, 21, 22, 2]])
    cross = t(input_ids=src, decoder_input_ids=torch.tensor([[1, 30]]), output_attentions=True).cross_attentions
print(json.dumps({{"logits": logits.tolist(), "cross": [c.shape[-2:] == (2, 4) for c in cross]}}))
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {
        "HF_HUB_OFFLINE": "1",
        "HF_MODULES_CACHE": str(tmp_path / "modules"),
    }
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    expected, _ = SentimentPipeline.from_pretrained(str(sentiment_repo)).raw_logits(REVIEWS)
    torch.testing.assert_close(torch.tensor(got["logits"]), expected, rtol=0, atol=1e-5)
    assert got["cross"] and all(got["cross"])
    assert list((tmp_path / "modules").rglob(MODELING))  # the remote code ran from the folder's own copy


@pytest.mark.parametrize(
    "task, config",
    [
        ("sentiment", ClassifierConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=20,
                                       positions="learned", norm_first=True, pooling="mean", num_labels=3)),
        ("translation", Seq2SeqConfig(vocab_size=50, d_model=16, n_heads=2, d_ff=32, max_len=20, positions="learned",
                                      norm_first=True, tie_embeddings=False, n_encoder_layers=1, n_decoder_layers=2)),
        ("lm", CausalLMConfig(vocab_size=50, d_model=16, n_heads=4, n_kv_heads=2, d_ff=24, n_layers=2, max_len=20)),
        ("lm", CausalLMConfig(vocab_size=50, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=20,
                              positions="learned", norm="layernorm", activation="gelu", bias=True,
                              tie_embeddings=False)),
    ],
)  # fmt: skip
def test_other_configurations_load_with_their_own_weights(task, config, tmp_path):
    """Learned positions (a parameter, not a rebuilt table), pre-norm, mean pooling, 3 labels, untied embeddings;
    the decoder-only model with rotary positions (rebuilt: not saved), grouped heads, tied or untied."""
    model = {"sentiment": TransformerClassifier, "translation": Seq2SeqTransformer, "lm": CausalLM}[task](config).eval()
    model.save_pretrained(tmp_path)
    export(task, tmp_path)
    theirs = auto(getattr(transformers, export_of(task).auto_model), tmp_path)
    src = torch.randint(4, 50, (2, 7))
    tgt = torch.randint(4, 50, (2, 5))
    with torch.no_grad():
        if task == "sentiment":
            torch.testing.assert_close(theirs(src).logits, model(src).logits, rtol=0, atol=1e-6)
            assert theirs.config.num_labels == 3
        elif task == "lm":
            out, ours = theirs(src, output_attentions=True), model(src, need_weights=True)
            torch.testing.assert_close(out.logits, ours.logits, rtol=0, atol=1e-6)
            torch.testing.assert_close(out.attentions[-1], ours.attentions[-1], rtol=0, atol=1e-6)
            mine = generate(model, src[0].tolist(), 5)  # up to and with the end token
            new = theirs.generate(src[:1], max_new_tokens=5, do_sample=False)[0, 7:].tolist()
            assert new[: len(mine)] == mine
        else:
            torch.testing.assert_close(
                theirs(src, decoder_input_ids=tgt).logits, model(src, tgt).logits, rtol=0, atol=1e-6
            )
    theirs_weights = {k.removeprefix("model."): v for k, v in theirs.state_dict().items()}
    assert theirs_weights.keys() == model.state_dict().keys()
    assert all(torch.equal(v, theirs_weights[k]) for k, v in model.state_dict().items())


# --- the bundled models -------------------------------------------------------------------------------------


@pytest.mark.slow
def test_bundled_models_through_transformers_equal_the_pipelines(tmp_path):
    """assets/sentiment and assets/translation, as published: unchanged weights, the pipeline's logits and
    attention maps through the Auto classes, and generate()'s translations equal the app's greedy ones."""
    sentiment = published("sentiment", ROOT / "assets" / "sentiment", tmp_path / "sentiment")
    translation = published("translation", ROOT / "assets" / "translation", tmp_path / "translation")
    for folder, task in ((sentiment, "sentiment"), (translation, "translation")):
        shipped = weight_files(ROOT / "assets" / task)  # model.safetensors, or the shards of a 6 x 12 model
        assert [f.read_bytes() for f in weight_files(folder)] == [f.read_bytes() for f in shipped]
    check_classifier(sentiment)
    english = check_translator(translation)
    greedy = TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation"))
    greedy.beam_size = 1
    assert english == [greedy(t).translation for t in GERMAN]
    assert english[0] == "A man rides a bicycle."
    # a snapshot branch, int8 in the bundle, goes up in fp16 and loads through the Auto classes too
    branch = translation.parent / "step-653"
    assert all(v.dtype != torch.int8 for f in weight_files(branch) for v in load_file(f).values())
    early = TranslationPipeline.from_pretrained(str(ROOT / "assets" / "translation"), revision="step-653")
    early.beam_size = 1
    assert check_translator(branch) == [early(t).translation for t in GERMAN]


def test_the_next_word_model_publishes_with_a_card_whose_snippet_runs(lm_dir, tmp_path):
    """`python -m training.publish lm --dry-run`: the folder, its card and its `transformers` snippet, which loads
    the model with the Auto class and writes what our greedy decoding writes."""
    from pipelines.language_model import LanguageModelPipeline

    folder = published("lm", lm_dir, tmp_path / "lm")
    card = (folder / "README.md").read_text()
    assert "decoder-only transformer" in card and "Perplexity" not in card  # no metrics.json: no scores claimed
    section = card[card.index("### With `transformers`") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "AutoModelForCausalLM.from_pretrained(" in code and "trust_remote_code=True" in code
    scope: dict = {}
    exec(code.replace("alice/demo-lm", str(folder)), scope)
    out, model, ids = scope["out"], scope["model"], scope["ids"]
    assert len(out.attentions) == model.config.n_layers
    pipe = LanguageModelPipeline.from_pretrained(str(lm_dir))
    prompt_ids = scope["batch"].input_ids[0].tolist()
    assert (
        ids[0, len(prompt_ids) :].tolist()[:20] == generate(pipe.model, prompt_ids, 20)[: ids.size(1) - len(prompt_ids)]
    )
