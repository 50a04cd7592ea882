"""The compare panels of the three tabs: a second input beside the first (a copy of it to edit), both results side by
side and how attention moved over the tokens both share, for the tab's model as shown (the chosen one, at the training
step's snapshot). The diffs themselves: viz.compare.input_compare.
"""

from dataclasses import dataclass

import gradio as gr

from pipelines.tasks import LM

from ..examples import LM_PAIRS, ContrastSetError, contrast_pairs, shorten
from ..models import model_choice, training_step
from ..page.landing import press_after
from ..page.scripts import script
from ..page.theme import waiting_plot
from ..server import hosting
from ..server.events import PRIVATE
from . import input_compare as compare
from . import patching_panel

GERMAN_PAIRS = [  # (first, second, button label)
    ("Ein Mann fährt mit dem Fahrrad die Straße entlang.", "Eine Frau fährt mit dem Fahrrad die Straße entlang.",
     "Mann → Frau"),
    ("Zwei Hunde spielen im Schnee.", "Zwei Hunde spielen im Sand.", "Schnee → Sand"),
    ("Ein Kind springt in einen Pool.", "Ein Kind springt nicht in einen Pool.", "+ nicht"),
]  # fmt: skip


def _compare_outputs(task: str):
    output = gr.HTML(elem_id=f"{task}-compare-output")
    diff = waiting_plot(f"{task}-compare-diff")
    return gr.State(None, time_to_live=hosting.STATE_TTL_S), output, diff  # the pair compared (a result)


def _redraw_diff_on(layer, head, state, diff) -> None:
    for control in (layer, head):
        control.change(compare.diff_figure, [state, layer, head], [diff], **PRIVATE)


@dataclass(frozen=True)
class CompareWords:
    """What a tab's compare panel says: its heading, its second box and its example pairs."""

    intro: str
    box: str
    lines: int
    max_lines: int
    pairs: str


REVIEW_WORDS = CompareWords(
    "### Compare two reviews\nChange a word or two and see what it does: both predictions, the change in "
    "probability, and for the chosen layer and head how attention moved over the tokens both reviews share.",
    "Second review (click it for a copy of the first, then edit it, or type or paste over it)",
    3,
    10,
    "Contrast pairs (one click fills both reviews and compares them)",
)
SENTENCE_WORDS = CompareWords(
    "### Compare two sentences\nTranslate a second German sentence with the same decoding: both translations, "
    "and for the chosen layer and head how cross-attention moved over the tokens both share.",
    "Second German sentence (click it for a copy of the first, then edit it, or type or paste over it)",
    2,
    6,
    "Sentence pairs (one click fills both sentences and compares them)",
)
PROMPT_WORDS = CompareWords(
    "### Compare two prompts\nContinue a second prompt with the same decoding: both continuations, and for the "
    "chosen layer and head how causal self-attention moved over the tokens both sequences share (prompt and new "
    "tokens).",
    "Second prompt (click it for a copy of the first, then edit it, or type or paste over it)",
    2,
    6,
    "Prompt pairs (one click fills both prompts and compares them)",
)


def _compare_panel(
    task: str, first, words: CompareWords, pairs: list, run, options: list, layer, head, pipe_of
) -> None:
    """A second input (a copy of the first to edit), run(first, second, *options, layer, head) on a click or an
    example pair (first, second, label), and the diff redrawn for a new layer or head; then the patching grids of
    the pair by pipe_of(*options), the pipeline shown (viz.compare.patching_panel)."""
    gr.Markdown(words.intro)
    second = gr.Textbox(label=words.box, lines=words.lines, max_lines=words.max_lines, elem_id=f"{task}-compare-input")
    button = gr.Button("Compare", variant="secondary", elem_id=f"{task}-compare-submit")
    examples = gr.Examples(
        examples=[[a, b] for a, b, _ in pairs],
        inputs=[first, second],
        example_labels=[label for _, _, label in pairs],
        label=words.pairs,
        **PRIVATE,
    )
    state, output, diff = _compare_outputs(task)
    # the copy on focus, not on the run: the box is asked for
    second.focus(None, [first, second], [second], js=script("copy_first_input.js"), **PRIVATE)
    inputs = [first, second, *options, layer, head]
    compared = [button.click(run, inputs, [state, output, diff], **PRIVATE),
                examples.load_input_event.then(run, inputs, [state, output, diff], **PRIVATE)]  # fmt: skip
    press_after(examples.load_input_event, task, first)  # the first went into the tab's own box: run it there too
    _redraw_diff_on(layer, head, state, diff)
    patching_panel.wire(patching_panel.build(task), compared, pipe_of, [first, second, *options])


def sentiment_compare_panel(models, *, review, choice, step, layer, head) -> None:
    """A second review (a copy of the first to edit), both predictions side by side, the change in probability,
    and the aligned self-attention diff for the chosen layer and head; contrast pairs fill both boxes and run. By
    the model shown: the chosen one, at the training step's snapshot."""
    try:
        pairs = [(a, b, f"{kind}: {shorten(a)}") for a, b, kind in contrast_pairs()]
    except ContrastSetError as e:
        gr.Markdown(f"⚠️ No example pairs: {e}.", elem_id="sentiment-compare-notice")
        pairs = []
    pairs.insert(0, ("The film was not bad.", "The film was very bad.", "negation: not bad → very bad"))  # patching's

    def run(a, b, name, position, layer, head):
        return compare.compare_reviews(models.get(training_step.chosen(models, name, position)), a, b, layer, head)

    pipe_of = lambda name, position: models.get(training_step.chosen(models, name, position))  # noqa: E731
    _compare_panel("sentiment", review, REVIEW_WORDS, pairs, run, [choice, step.slider], layer, head, pipe_of)


def translation_compare_panel(models, *, german, decoding, beam, layer, head, training, choice=None) -> None:
    """A second German sentence, both translations side by side, and the aligned cross-attention diff; by the
    translator shown: the chosen one (choice: the tab's model choice), at the training step's snapshot."""

    def run(a, b, decoding, beam, name, position, layer, head):
        pipe, status = model_choice.resolve(models, training_step.chosen(models, name, position))
        if pipe is None:  # a model that cannot be loaded here (the pre-trained translator offline)
            return None, status, None
        return compare.compare_translations(pipe, a, b, decoding, beam, layer, head)

    def pipe_of(decoding, beam, name, position):
        return model_choice.resolve(models, training_step.chosen(models, name, position))[0]

    options = [decoding, beam, gr.State(None) if choice is None else choice, training.slider]
    _compare_panel("translation", german, SENTENCE_WORDS, GERMAN_PAIRS, run, options, layer, head, pipe_of)


def lm_compare_panel(models, *, i, v, choice) -> None:
    """A second prompt (a copy of the first to edit), both continuations side by side and the aligned causal
    self-attention diff for the chosen layer and head; by the model shown, with the tab's decoding options."""

    def run(a, b, decoding, temperature, top_p, seed, max_new, chat, name, position, layer, head):
        pipe = models.get(training_step.chosen(models, name, position))
        return compare.compare_prompts(pipe, a, b, decoding, temperature, top_p, seed, max_new, chat, layer, head)

    def pipe_of(*options):
        return models.get(training_step.chosen(models, *options[-2:]))  # the model choice and the training step

    options = [i.decoding, i.temperature, i.top_p, i.seed, i.max_new, i.chat, choice, v.snapshot.slider]
    _compare_panel(LM.name, i.prompt, PROMPT_WORDS, LM_PAIRS, run, options, v.layer, v.head, pipe_of)
