"""Inference pipelines shared by the app, the evaluation commands and the benchmarks."""

from pipelines.language_model import Decoding, LanguageModelPipeline, LanguageModelResult, NextToken, PromptError
from pipelines.sentiment import SentimentPipeline, SentimentResult
from pipelines.text import TokenSpan
from pipelines.translation import DecodingStep, TranslationPipeline, TranslationResult

__all__ = [
    "Decoding",
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
