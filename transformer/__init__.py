"""A from-scratch transformer library that can show its attention. Imports torch and huggingface_hub only."""

from .attention import AttentionOutput, MultiHeadAttention, explicit_attention
from .classifier import ClassifierOutput, TransformerClassifier
from .config import ClassifierConfig, Seq2SeqConfig
from .generation import BeamHypothesis, beam_search, greedy_decode
from .head_mask import HeadMasks
from .hub import CheckpointError, load_model, resolve_checkpoint
from .masks import causal_mask, combine, padding_mask
from .seq2seq import DecoderCache, DecoderOutput, EncoderOutput, Seq2SeqTransformer

__all__ = [
    "AttentionOutput",
    "BeamHypothesis",
    "CheckpointError",
    "ClassifierConfig",
    "ClassifierOutput",
    "DecoderCache",
    "DecoderOutput",
    "EncoderOutput",
    "HeadMasks",
    "MultiHeadAttention",
    "Seq2SeqConfig",
    "Seq2SeqTransformer",
    "TransformerClassifier",
    "beam_search",
    "causal_mask",
    "combine",
    "explicit_attention",
    "greedy_decode",
    "load_model",
    "padding_mask",
    "resolve_checkpoint",
]
