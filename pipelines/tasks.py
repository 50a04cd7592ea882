"""The tasks, declared once each: the pipeline that runs it, its kinds of attention, the download, the comparison
and the words for a head's effect. The app (viz.tasks), the training commands and the benchmarks look a task up
here by name, instead of testing names; another task (docs/adding-a-task.md) is one more entry.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from pipelines import compare, export
from pipelines.hosting.serving import ServedLM, ServedSentiment, ServedTranslation
from pipelines.kinds import CAUSAL, CROSS, DECODER, ENCODER, SELF, SRC, TGT
from pipelines.language_model import LanguageModelPipeline
from pipelines.sentiment import SentimentPipeline
from pipelines.translation import TranslationPipeline


@dataclass(frozen=True)
class Task:
    """What differs between tasks, on the pipelines' side (no gradio)."""

    name: str  # "sentiment": the tab, its elem_ids, its links and downloads
    pipeline: type  # its class: .from_pretrained(folder or repo id)
    kinds: tuple[str, ...]  # its kinds of attention (pipelines.kinds), in the model's order
    shown: tuple[str, ...]  # the kinds drawn large, in the tab's order: the first is the tab's main heatmap
    effect_of: str  # what a head's 'effect' measures, in words
    record: Callable  # (pipe, text, **options) -> the download's dict (pipelines.export)
    compare: Callable  # (pipe, text_a, text_b, **options) -> a comparison with .attention(kind)
    served: Callable  # (pipe, batcher, process) -> its pipeline for a server (pipelines.hosting.serving.serve)
    decodes: bool = False  # a decoding choice (greedy or beam search) goes with every run
    # a task whose tokens come in two languages names them by side (pipelines.kinds: SRC, TGT); one language: {}
    languages: dict[str, str] = field(default_factory=dict)

    @property
    def main(self) -> str:
        """The kind of the tab's main heatmap and its small multiples."""
        return self.shown[0]


SENTIMENT = Task(
    "sentiment",
    SentimentPipeline,
    (SELF.name,),
    (SELF.name,),
    "the predicted label's probability",
    export.sentiment_record,
    compare.compare_sentiment,
    ServedSentiment,
)
TRANSLATION = Task(
    "translation",
    TranslationPipeline,
    (ENCODER.name, DECODER.name, CROSS.name),
    (CROSS.name, ENCODER.name, DECODER.name),
    "the translation's log-probability",
    export.translation_record,
    compare.compare_translation,
    ServedTranslation,
    decodes=True,
    languages={SRC: "German", TGT: "English"},
)
LM = Task(
    "lm",
    LanguageModelPipeline,
    (CAUSAL.name,),
    (CAUSAL.name,),
    "the first generated token's log-probability",
    export.lm_record,
    compare.compare_lm,
    ServedLM,
)
TASKS: dict[str, Task] = {t.name: t for t in (SENTIMENT, TRANSLATION, LM)}
