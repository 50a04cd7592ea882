"""The training side of each task, declared once: what trains it, how it is scored, calibrated, exported to
`transformers`, described on its model card and published. `python -m training`, training.evaluate,
training.calibrate, training.ship and training.publish look a task up here by name instead of testing names; the
library's side (its pipeline, kinds of attention, download) is pipelines.tasks, which each entry holds. A new task is
one more entry (docs/adding-a-task.md).
"""

from collections.abc import Callable
from dataclasses import dataclass

from pipelines.tasks import LM, SENTIMENT, TRANSLATION, Task
from training.release import attention_figure, card_texts
from training.release.card_texts import TaskInfo
from training.tasks import scoring, signals
from training.tasks.lm import LMTask
from training.tasks.sentiment import SentimentTask
from training.tasks.translation import TranslationTask


@dataclass(frozen=True)
class Evaluation:
    """`python -m training.evaluate <task>`: the evaluation file's columns and the scorer."""

    columns: tuple[str, ...]  # the file's columns (a classifier's `text` may be SST-2's `sentence`)
    described: str  # the same, for --help
    score: Callable  # (model folder or repo id, datasets.Dataset, batch_size, **options) -> {score: value}


@dataclass(frozen=True)
class Calibration:
    """`python -m training.calibrate <task>`: what its held-out and training files hold and what is fitted on them."""

    columns: tuple[str, ...]  # the inputs' column first, then "label" where the files are labelled
    language: str  # wordfreq's language of the inputs (the general text their tokens are compared with)
    signals: Callable  # (pipe, domain, texts, batch_size) -> {typicality signal: value per text} (tasks/signals.py)
    length_aware: tuple[str, ...] = ()  # signals whose mean is compared at the input's length (domain.Spread)
    temperature: bool = False  # a classifier: its probabilities get a fitted temperature


@dataclass(frozen=True)
class TrainingTask:
    """What differs between tasks on the training side."""

    task: Task  # the library's: name, pipeline, kinds, whether it decodes
    what: str  # the model, in words: "the sentiment classifier"
    trainer: type  # `python -m training <name>` (training.engine.loop.Task)
    evaluation: Evaluation
    card: TaskInfo  # the model card's metadata and prose (training/release/card_texts.py)
    figure: Callable  # (pipe) -> the model card's attention figure (training/release/attention_figure.py)
    space_variable: str  # the Space variable naming the repo or bundled folder the app loads it from
    calibration: Calibration | None = None  # None: training.calibrate does not take it
    optional_in_space: bool = False  # a Space may lack our model: a Hub model serves the tab alone
    contrast_set: bool = False  # training.ship also scores the hand-written contrast pairs (training.contrast)

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def auto_model(self) -> str:
        """The `transformers` Auto class that loads the published repo (training/release/hf_export.py)."""
        return self.card.auto_model


TRAINING_TASKS: dict[str, TrainingTask] = {
    t.name: t
    for t in (
        TrainingTask(
            SENTIMENT,
            "the sentiment classifier",
            SentimentTask,
            Evaluation(("text", "label"), "text (or sentence), label", scoring.evaluate_sentiment),
            card_texts.SENTIMENT,
            attention_figure.sentiment_figure,
            "SENTIMENT_MODEL",
            # Piece length is compared at the input's length: with raw means its threshold flagged 18.8% of SST-2
            # validation sentences of at most 5 word pieces and none of over 30; length-aware, 6.2% and 0.8%, with
            # 90.8% of the hand-written out-of-domain set flagged against 91.6%. Its `words` signal stays raw:
            # length-aware too, 84.9% of that set (benchmarks/RESULTS.md, calibration section).
            Calibration(("text", "label"), "en", signals.review_signals, ("piece_length",), temperature=True),
            contrast_set=True,
        ),
        TrainingTask(
            TRANSLATION,
            "the German-English translator",
            TranslationTask,
            Evaluation(("de", "en"), "de, en", scoring.evaluate_translation),
            card_texts.TRANSLATION,
            attention_figure.translation_figure,
            "TRANSLATION_MODEL",
            Calibration(("de",), "de", signals.sentence_signals),
        ),
        TrainingTask(
            LM,
            "the next-word model",
            LMTask,
            Evaluation(("text",), "text", scoring.evaluate_next_word),
            card_texts.LM,
            attention_figure.lm_figure,
            "LM_OURS_MODEL",
            optional_in_space=True,  # the Space's next-word tab offers the pre-trained Hub model (LM_MODEL) alone
        ),
    )
}
