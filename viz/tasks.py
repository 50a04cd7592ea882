"""The app's side of each task, declared once: its text box, what one input is called and how long it may be, and
the words the heads panel uses. The pipelines' side (pipeline class, kinds, download, comparison) is
pipelines.tasks; a TaskUI holds both. Handlers, panels, downloads and compare look a task up here by name instead
of testing names.
"""

from dataclasses import dataclass, field

from pipelines.tasks import LM, SENTIMENT, TRANSLATION, Task

from .heads.runs import CONTINUED, DECODED, LABEL, HeadRuns
from .inputs import MAX_GERMAN_CHARS, MAX_PROMPT_CHARS, MAX_REVIEW_CHARS

GERMAN_PLACEHOLDER = "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad die Straße entlang."
_ROLES = (
    " Roles: *sink*: the share on the first token (where a head parks attention it does not need); *on duplicates*: "
    "on earlier copies of the query's own token; *induction*: measured once on random tokens written twice, the "
    "share on the token after the earlier copy of the current one (what lets a model continue a repeated sequence)."
)
_COLUMNS = (
    "Entropy in nats (0 = all weight on one token); distance in tokens{cross}; *on …*: the average share of "
    "attention on the previous token, on the token itself, on the end ({end}) and on punctuation."
)


@dataclass(frozen=True)
class InputBox:
    """The tab's text box."""

    label: str
    placeholder: str
    lines: int
    max_lines: int


@dataclass(frozen=True)
class TabTitle:
    """How the page names the tab, and what it says when the tab's model did not load (app._unavailable)."""

    title: str  # the tab's button: "Translation (German → English)"
    model: str  # the model, in words: "language model"
    env_var: str  # the variable that names it: "LM_MODEL"


@dataclass(frozen=True)
class TaskUI:
    """One tab's task: the pipelines' Task and the words and limits of its page."""

    task: Task
    unit: str  # one input, in words: "review", "German sentence"
    units: str  # several, for compare's messages: "reviews", "sentences"
    max_chars: int  # longer input is cut, with a notice (viz.inputs.check_text)
    heads_help: str  # the heads panel's introduction
    columns_help: str  # its table's columns, in the words of the tab (no tokenizer markers)
    box: InputBox
    head_runs: HeadRuns = field(kw_only=True)  # how the heads panel runs its model: measure, switch heads off
    head_set: tuple[str, str] = field(kw_only=True, default=("", ""))  # heads over a set: (over_set.SETS name, words)
    induction_set: bool = field(kw_only=True, default=False)  # also over random tokens written twice (a causal model)
    tab: TabTitle = field(kw_only=True)

    @property
    def name(self) -> str:
        return self.task.name


TASKS: dict[str, TaskUI] = {
    t.name: t
    for t in (
        TaskUI(
            SENTIMENT,
            "review",
            "reviews",
            MAX_REVIEW_CHARS,
            "Each head of the classifier, measured on this review. **Effect**: how much the predicted label's "
            "probability changes when that head alone is switched off.",
            _COLUMNS.format(cross="", end="the review's last token"),
            InputBox("Movie review (English)", "Type or paste a movie review…", 6, 16),
            head_runs=LABEL,
            head_set=("sst2", "100 SST-2 sentences"),
            tab=TabTitle("Sentiment", "sentiment", "SENTIMENT_MODEL"),
        ),
        TaskUI(
            TRANSLATION,
            "German sentence",
            "sentences",
            MAX_GERMAN_CHARS,
            "Each head of the translator (encoder self-attention, decoder self-attention, cross-attention), measured "
            "on this sentence. **Effect**: how much the log-probability of the produced translation changes "
            "(teacher-forced) when that head alone is switched off. **Agreement**: rank correlation of a "
            "cross-attention head with gradient × input's attribution of each English token to the German ones "
            "(a gradient method, whichever view is chosen above: attention compared with attention would prove "
            "little).",
            _COLUMNS.format(
                cross=" (cross-attention: from the diagonal)",
                end="the end of the German sentence; for the decoder, the start of the English one",
            ),
            InputBox(
                "German sentence", "Ein Mann in einem blauen Hemd fährt mit dem Fahrrad die Straße entlang.", 2, 6
            ),
            head_runs=DECODED,
            head_set=("multi30k", "100 Multi30k captions"),
            tab=TabTitle("Translation (German → English)", "translation", "TRANSLATION_MODEL"),
        ),
        TaskUI(
            LM,
            "prompt",
            "prompts",
            MAX_PROMPT_CHARS,
            "Each head of the language model, measured on this prompt and its continuation. **Effect**: how much the "
            "log-probability of the first generated token changes when that head alone is switched off.",
            _COLUMNS.format(cross="", end="the first token, as *sink*") + _ROLES,
            InputBox("Prompt", "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that", 3, 10),
            head_runs=CONTINUED,
            head_set=("imdb", "the openings of 100 IMDB reviews"),
            induction_set=True,
            tab=TabTitle("Next word", "language model", "LM_MODEL"),
        ),
    )
}
