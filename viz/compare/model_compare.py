"""Two sentiment models side by side on the same review (from scratch against pre-trained, say): both predictions
and the chosen head of each. Shown when the tab's model registry has more than one model (the bundled pair, or
$SENTIMENT_COMPARE_MODEL beside $SENTIMENT_MODEL)."""

import html
import logging

import gradio as gr

from pipelines.attention.attention_maps import AttentionMaps
from pipelines.compare import compare_classifiers

from ..attention import figures, token_labels
from ..inputs import MAX_REVIEW_CHARS, check_text
from ..models.loading import display_name
from ..page.theme import waiting_plot
from ..server.events import PRIVATE
from .input_compare import STYLE, _side

log = logging.getLogger(__name__)


def _head_figure(pipe, maps: AttentionMaps, layer: int, head: int):
    layer = min(max(int(layer or 0), 0), maps.n_layers("self") - 1)
    head = min(max(int(head or 0), 0), maps.n_heads - 1)
    rows, cols = token_labels.axis_labels(maps.queries["self"]), token_labels.axis_labels(maps.keys["self"])
    title = f"{html.escape(display_name(pipe))}: layer {layer + 1}, head {head + 1}"
    return figures.attention_heatmap(maps.head("self", layer, head), rows, cols, title)


def compare_models(pipe_a, pipe_b, review: str, layer=0, head=0):
    """(side-by-side HTML, the chosen head of model A, of model B) on one review; each model reads it with its
    own tokenizer, and the layer and head are clamped to each model's size."""
    checked = check_text(review, MAX_REVIEW_CHARS, "review")
    if checked.text is None:
        return f"⚠️ {html.escape(checked.error or '')}", None, None
    try:
        cmp = compare_classifiers(pipe_a, pipe_b, checked.text)
    except ValueError:
        return "⚠️ A model found no words to read in this review.", None, None
    except Exception:
        log.exception("model comparison failed")
        return "⚠️ Sorry, a model failed on this review.", None, None
    sides = "".join(
        _side(html.escape(display_name(p)), r.label, f"{r.confidence:.1%} · {len(r.tokens):,} tokens read")
        for p, r in ((pipe_a, cmp.a), (pipe_b, cmp.b))
    )
    agree = "The two models agree." if cmp.agree else "The two models disagree."
    body = f"{STYLE}<div class='compare-sides'>{sides}</div><p>{agree}</p>"
    return body, _head_figure(pipe_a, cmp.a_maps, layer, head), _head_figure(pipe_b, cmp.b_maps, layer, head)


def other_model(models, name) -> str:
    """The model to compare the chosen one with: the default, or the next one when the default is chosen."""
    name = models.name_of(name)
    return next(n for n in models.names if n != name) if name == models.default else models.default


def model_compare_panel(models, *, review, choice, layer, head) -> None:
    """The panel (inside a gr.Blocks context): a button, the two predictions and the two heads: the chosen model
    of the tab's ModelRegistry against another of its models."""
    gr.Markdown(
        "### Compare two models\nThe review above, read by the chosen model and by another one: both predictions "
        "and the chosen head of each."
    )
    button = gr.Button("Compare the models", variant="secondary", elem_id="sentiment-models-submit")
    output = gr.HTML(elem_id="sentiment-models-output")
    with gr.Row():
        first = waiting_plot("sentiment-models-first")
        second = waiting_plot("sentiment-models-second")

    def run(text, name, layer, head):
        return compare_models(models.get(name), models.get(other_model(models, name)), text, layer, head)

    button.click(run, [review, choice, layer, head], [output, first, second], **PRIVATE)
