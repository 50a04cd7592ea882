"""The explanation panels measure an explanation's faithfulness on the model that made it. Seen in a browser: the
model choice switched while an explanation ran, and its faithfulness was measured on the model then shown (the
from-scratch model read the pre-trained one's token ids: IndexError, "faithfulness failed" in the app's log)."""

import json
import re

import gradio as gr
import torch
from tiny_models import make_sentiment_dir

from pipelines.models.tokenizers_io import PAD
from transformer import ClassifierConfig, TransformerClassifier
from viz.explanations import explanation_panel
from viz.models.loading import sentiment_registry

REVIEW = "A warm, funny and beautifully acted film about two brothers who finally talk."


def other_model_dir(folder):
    """A second model beside the tiny one: 1 layer x 2 heads, same tokenizer, its own name."""
    make_sentiment_dir(folder)
    vocab = json.loads((folder / "config.json").read_text())["vocab_size"]
    torch.manual_seed(3)
    cfg = ClassifierConfig(vocab_size=vocab, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=64, pad_id=PAD)
    TransformerClassifier(cfg).save_pretrained(folder)
    (folder / "metrics.json").write_text(json.dumps({"display_name": "other"}))
    return folder


def numbers(markdown: str) -> str:
    """The panel's text without the seconds it took (they vary from run to run)."""
    return re.sub(r"in \d+\.\d+ s", "in ? s", markdown)


def test_faithfulness_is_measured_on_the_model_that_made_the_explanation(sentiment, tmp_path):
    registry = sentiment_registry(sentiment, lambda p: p, sources=[str(other_model_dir(tmp_path / "other"))])
    name = registry.names[-1]
    other = registry.get(name)
    assert other is not registry.get()
    with gr.Blocks() as demo:
        view_state, button = gr.State(None), gr.Button()
        panel = explanation_panel.build(sentiment)
        explanation_panel.wire(panel, registry, view_state, button.click(lambda: None))
    run_faithfulness = next(f.fn for f in demo.fns.values() if f.name == "run_faithfulness")
    expl = other.explain(REVIEW, "attention")
    measured = numbers(run_faithfulness(explanation_panel.made_by(name, expl))[0])  # the default is the one shown
    assert measured == numbers(explanation_panel.faithfulness(other, expl)[0])
    assert measured != numbers(explanation_panel.faithfulness(registry.get(), expl)[0])  # the model makes a difference
    assert run_faithfulness(None) == ("", None)
