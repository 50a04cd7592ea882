"""Inference pipelines shared by the app, the evaluation commands and the benchmarks."""

from .common import TokenSpan
from .language_model import LanguageModelPipeline, LanguageModelResult, NextToken, PromptError
from .sentiment import SentimentPipeline, SentimentResult
from .translation import DecodingStep, TranslationPipeline, TranslationResult

__all__ = [
    "DecodingStep",
    "LanguageModelPipeline",
    "LanguageModelResult",
    "NextToken",
    "PromptError",
    "SentimentPipeline",
    "SentimentResult",
    "TokenSpan",
    "TranslationPipeline",
    "TranslationResult",
]
