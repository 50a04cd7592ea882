"""A from-scratch transformer library that can show its attention. Imports torch and huggingface_hub only."""

from .attention import Attention, AttentionOutput, explicit_attention
from .causal_lm import CausalLM, CausalLMOutput
from .classifier import ClassifierOutput, TransformerClassifier
from .config import CausalLMConfig, ClassifierConfig, Seq2SeqConfig, TransformerConfig
from .decoder import Decoder, DecoderCache, DecoderStackOutput
from .encoder import Encoder, EncoderOutput
from .generation import Hypothesis, LMStep, beam_search, generate, greedy_decode, lm_steps
from .head_mask import HeadMasks
from .hooks import Hooked, HookPoint, HookRegistry
from .hub import CheckpointError, load_model, resolve_checkpoint
from .layers import Block, BlockOutput
from .masks import causal_mask, padding_mask
from .seq2seq import DecoderOutput, Seq2SeqTransformer

__all__ = [
    "Attention",
    "AttentionOutput",
    "Block",
    "BlockOutput",
    "CausalLM",
    "CausalLMConfig",
    "CausalLMOutput",
    "CheckpointError",
    "ClassifierConfig",
    "ClassifierOutput",
    "Decoder",
    "DecoderCache",
    "DecoderOutput",
    "DecoderStackOutput",
    "Encoder",
    "EncoderOutput",
    "HeadMasks",
    "HookPoint",
    "HookRegistry",
    "Hooked",
    "Hypothesis",
    "LMStep",
    "Seq2SeqConfig",
    "Seq2SeqTransformer",
    "TransformerClassifier",
    "TransformerConfig",
    "beam_search",
    "causal_mask",
    "explicit_attention",
    "generate",
    "greedy_decode",
    "lm_steps",
    "load_model",
    "padding_mask",
    "resolve_checkpoint",
]
