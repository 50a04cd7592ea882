"""Inference pipelines shared by the app, the evaluation commands and the benchmarks."""

from .common import TokenSpan
from .sentiment import SentimentPipeline, SentimentResult
from .translation import DecodingStep, TranslationPipeline, TranslationResult

__all__ = [
    "DecodingStep",
    "SentimentPipeline",
    "SentimentResult",
    "TokenSpan",
    "TranslationPipeline",
    "TranslationResult",
]
