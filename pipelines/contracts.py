"""The adapter contract in code: what a pipeline may ask of a model, as `typing.Protocol`s.

pipelines/models/adapter.py implements them for the from-scratch models (OurClassifier, OurSeq2Seq, OurCausalLM),
pipelines/models/hf_adapter.py for `transformers` models (HFClassifier, HFSeq2Seq); tests/pipelines/test_contracts.py
holds them all to them (every member present, every method with the parameters named here). A new kind of model is one
class that satisfies one of them. `Pipeline` is the next layer up: what the app asks of a task's pipeline.
"""

from pathlib import Path
from typing import Protocol, runtime_checkable

import torch

from pipelines.text import TokenSpan


@runtime_checkable
class Adapter(Protocol):
    """What both kinds share: where the model is, its tokenizer with character offsets, its sizes."""

    kind: str  # "ours" or "transformers"
    tokenizer: object
    pad_id: int
    vocab_size: int
    n_heads: int

    @property
    def device(self) -> torch.device: ...

    @property
    def head_layers(self) -> dict[str, int]: ...  # kind of attention -> layers

    def config_dict(self) -> dict: ...

    def tokenize(self, text: str) -> tuple[list[int], list[TokenSpan]]: ...

    def tokenize_many(self, texts: list[str]) -> list[list[int]]: ...

    # the model's internals, through the core's hook-point names (pipelines/models/hook_names.py)
    def run_with_cache(self, forward, names) -> tuple[object, dict[str, torch.Tensor]]: ...

    def W_O(self, kind: str) -> torch.Tensor: ...  # (L, H, hs, D)


@runtime_checkable
class ClassifierAdapter(Adapter, Protocol):
    """A sequence classifier: special tokens around the text, one forward pass, embeddings for attribution."""

    n_prefix: int
    n_suffix: int
    max_len: int

    def wrap(self, ids: list[int]) -> list[int]: ...

    def wrap_spans(self, toks: list[TokenSpan], text: str) -> list[TokenSpan]: ...

    def forward(self, ids: torch.Tensor, need_weights: bool = False, head_mask=None, need_hidden=False): ...

    def logits_from_layer(self, layer: int, hidden, ids: torch.Tensor, head_mask=None, heads=None) -> torch.Tensor: ...

    def embed(self, ids: torch.Tensor) -> torch.Tensor: ...

    def logits_from_embeddings(self, emb: torch.Tensor, ids: torch.Tensor) -> torch.Tensor: ...

    def save(self, folder: Path, max_len: int, preprocessing: dict) -> None: ...


@runtime_checkable
class Seq2SeqAdapter(Adapter, Protocol):
    """An encoder-decoder: decoding, a teacher-forced pass, embeddings and one step for attribution."""

    bos_id: int
    eos_id: int

    @property
    def max_source(self) -> int: ...

    def source_ids(self, ids: list[int]) -> list[int]: ...

    def generate(self, src: torch.Tensor, beam_size: int, alpha: float, head_mask=None, limits=None): ...

    def row_limits(self, src: torch.Tensor) -> torch.Tensor: ...

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, need_weights: bool = False, head_mask=None): ...

    def embed_source(self, ids: torch.Tensor) -> torch.Tensor: ...

    def embed_target(self, ids: torch.Tensor) -> torch.Tensor: ...

    def step_log_probs(self, src_emb, src_ids, tgt_emb, pos) -> torch.Tensor: ...

    def detokenize(self, ids: list[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...

    def save(self, folder: Path, preprocessing: dict) -> None: ...


@runtime_checkable
class CausalLMAdapter(Adapter, Protocol):
    """A decoder-only language model: decoding step by step, whole-sequence passes, embeddings for attribution."""

    bos_id: int
    eos_id: int
    max_len: int

    def forward(self, ids: torch.Tensor, need_weights: bool = False, head_mask=None, need_hidden=False): ...

    def next_log_probs(self, ids: torch.Tensor, lengths: list[int], head_mask=None) -> torch.Tensor: ...

    def last_log_probs_from_layer(self, layer: int, hidden: torch.Tensor, head_mask=None) -> torch.Tensor: ...

    def steps(self, ids: list[int], max_new_tokens: int, temperature=0.0, top_p=1.0, seed=None, head_mask=None): ...

    def decoding_batch(self): ...

    def embed(self, ids: torch.Tensor) -> torch.Tensor: ...

    def logits_from_embeddings(self, emb: torch.Tensor) -> torch.Tensor: ...

    def detokenize(self, ids: list[int]) -> str: ...

    def token_text(self, token_id: int) -> str: ...

    def save(self, folder: Path, preprocessing: dict) -> None: ...


@runtime_checkable
class Pipeline(Protocol):
    """What the app asks of every task's pipeline (pipelines/sentiment.py, translation.py, language_model.py) and of its
    served class (pipelines/hosting/serving.py): one run, the model's sizes and tokenizer, explanations, their
    faithfulness, the head table and what every head read and wrote. Each task names its own parameters (a review, a
    German sentence with its beam size, a prompt with its decoding options); tests/pipelines/test_contracts.py holds
    each served class to its pipeline's."""

    @property
    def adapter(self) -> Adapter: ...

    @property
    def tokenizer(self) -> object: ...

    @property
    def head_layers(self) -> dict[str, int]: ...  # kind of attention -> layers

    @property
    def n_layers(self) -> int: ...

    @property
    def n_heads(self) -> int: ...

    @property
    def explanation_methods(self) -> tuple[str, ...]: ...

    def __call__(self, text: str, /, *args, **kwargs): ...  # a SentimentResult, TranslationResult, ...

    def explain(self, text: str, /, *args, **kwargs): ...  # a pipelines.explanations.Explanation

    def faithfulness(self, explanation, /, *args, **kwargs): ...

    def head_table(self, text: str, /, *args, **kwargs) -> list[dict]: ...

    def internals(self, *args, **kwargs): ...
