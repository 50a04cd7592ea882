"""Explanations: which input tokens drove an output, for every task and any registered method.

registry.py      methods by name (label, signed, attribute), the defaults the benchmark chose
methods.py       the built-in methods, one registered class each
run.py           explain_review / explain_translation / explain_next_token: a method's scores as one Explanation
result.py        Explanation (every task), FaithfulnessReport
faithfulness.py  ERASER comprehensiveness and sufficiency against random rankings, every task
"""

from pipelines.explanations import methods  # noqa: F401  (registers the built-in methods)
from pipelines.explanations.faithfulness import FaithfulnessReport
from pipelines.explanations.faithfulness import measure as faithfulness
from pipelines.explanations.registry import (
    DEFAULTS_FILE,
    Attribution,
    Method,
    choices,
    default_method,
    is_signed,
    label,
    names,
    register,
)
from pipelines.explanations.result import Explanation
from pipelines.explanations.run import explain_next_token, explain_review, explain_translation

__all__ = [
    "DEFAULTS_FILE",
    "Attribution",
    "Explanation",
    "FaithfulnessReport",
    "Method",
    "choices",
    "default_method",
    "explain_next_token",
    "explain_review",
    "explain_translation",
    "faithfulness",
    "is_signed",
    "label",
    "names",
    "register",
]
