"""Comparing two inputs: which tokens they share (difflib alignment) and how attention changed on those.

An alignment walks both token sequences in order: a shared token pairs position i of A with position j of
B; a token only in A is deleted (j is None), a token only in B is inserted (i is None). Attention maps of
A and B are compared only where both the query and the key token are shared: elsewhere there is nothing
to subtract, and the diff holds NaN there (drawn as a gap, its row or column labelled as deleted/inserted).
Maps and token texts come from each result's AttentionMaps (pipelines.attention.attention_maps), so any model (ours or a
`transformers` one) is compared the same way; tokens are aligned on their ids.
"""

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher

import numpy as np

from pipelines.attention.attention_maps import AttentionMaps
from pipelines.language_model import Decoding, LanguageModelResult
from pipelines.sentiment import SentimentResult
from pipelines.translation import TranslationResult


@dataclass(frozen=True)
class AlignedToken:
    """One position of the aligned sequence: a_index / b_index are None where the token is missing."""

    a_index: int | None
    b_index: int | None
    text: str  # the token as shown (from B when the token is in B, else from A)

    @property
    def kind(self) -> str:
        """'shared', 'deleted' (only in A) or 'inserted' (only in B)."""
        if self.a_index is None:
            return "inserted"
        return "deleted" if self.b_index is None else "shared"


def align_tokens(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    a_text: Sequence[str] | None = None,
    b_text: Sequence[str] | None = None,
) -> list[AlignedToken]:
    """Align two token sequences (ids or strings) in order; a replaced run becomes its deletions then its
    insertions. a_text / b_text give what to show for each token (default: str of the token)."""
    a_text = [str(t) for t in a] if a_text is None else list(a_text)
    b_text = [str(t) for t in b] if b_text is None else list(b_text)
    assert len(a_text) == len(a) and len(b_text) == len(b), "one display text per token"
    out: list[AlignedToken] = []
    matcher = SequenceMatcher(None, list(a), list(b), autojunk=False)  # autojunk drops frequent tokens
    for op, i0, i1, j0, j1 in matcher.get_opcodes():
        if op == "equal":
            out += [AlignedToken(i, j, b_text[j]) for i, j in zip(range(i0, i1), range(j0, j1))]
            continue
        out += [AlignedToken(i, None, a_text[i]) for i in range(i0, i1)]  # 'delete' or 'replace'
        out += [AlignedToken(None, j, b_text[j]) for j in range(j0, j1)]  # 'insert' or 'replace'
    return out


def aligned_diff(
    map_a: np.ndarray, map_b: np.ndarray, rows: list[AlignedToken], cols: list[AlignedToken]
) -> np.ndarray:
    """(len(rows), len(cols)) attention of B minus attention of A: map_a (Qa, Ka), map_b (Qb, Kb), rows
    aligning the queries and cols the keys. NaN wherever the query or the key is missing from A or B."""
    assert map_a.ndim == map_b.ndim == 2, "one head: (queries, keys)"
    out = np.full((len(rows), len(cols)), np.nan, dtype=np.float32)
    r = [n for n, t in enumerate(rows) if t.kind == "shared"]
    c = [n for n, t in enumerate(cols) if t.kind == "shared"]
    if not r or not c:
        return out
    ra, rb = [rows[n].a_index for n in r], [rows[n].b_index for n in r]
    ca, cb = [cols[n].a_index for n in c], [cols[n].b_index for n in c]
    diff = map_b[np.ix_(rb, cb)].astype(np.float32) - map_a[np.ix_(ra, ca)].astype(np.float32)
    out[np.ix_(r, c)] = diff
    return out


def shared_share(alignment: list[AlignedToken]) -> float:
    """Fraction of the aligned positions that both inputs share (1.0 for identical token sequences)."""
    if not alignment:
        return 1.0
    return sum(t.kind == "shared" for t in alignment) / len(alignment)


@dataclass
class AlignedAttention:
    """One kind of attention of two inputs over their aligned tokens: rows align the queries, cols the keys."""

    kind: str  # an AttentionMaps kind: "self", "encoder" or "cross"
    rows: list[AlignedToken]
    cols: list[AlignedToken]
    a: np.ndarray  # (L, H, Qa, Ka) the first input's maps
    b: np.ndarray  # (L, H, Qb, Kb) the second input's maps

    @property
    def n_layers(self) -> int:
        return self.a.shape[0]

    @property
    def n_heads(self) -> int:
        return self.a.shape[1]

    def astype(self, dtype) -> "AlignedAttention":
        """The same comparison with the maps in another dtype (float16 halves what a session keeps)."""
        return replace(self, a=self.a.astype(dtype), b=self.b.astype(dtype))

    def diff(self, layer: int, head: int) -> np.ndarray:
        """(len(rows), len(cols)) B minus A for one layer and head (from 0); NaN where a token is missing."""
        return aligned_diff(self.a[layer, head], self.b[layer, head], self.rows, self.cols)


@dataclass
class OneSequenceComparison:
    """Two inputs through a model whose maps have one sequence on both axes, and their tokens aligned (on ids)."""

    a: SentimentResult | LanguageModelResult
    b: SentimentResult | LanguageModelResult
    tokens: list[AlignedToken]
    a_maps: AttentionMaps
    b_maps: AttentionMaps
    KIND = "self"  # the kind of attention the model has (not a field)

    def attention(self, kind: str | None = None) -> AlignedAttention:
        """That attention (None: KIND) of both inputs over the aligned tokens."""
        kind = self.KIND if kind is None else kind
        return AlignedAttention(kind, self.tokens, self.tokens, self.a_maps.maps[kind], self.b_maps.maps[kind])


@dataclass
class SentimentComparison(OneSequenceComparison):
    """Two reviews through the classifier, their self-attention maps, and their tokens aligned (on token ids)."""

    a: SentimentResult
    b: SentimentResult

    def change(self) -> dict[str, float]:
        """Probability of each label for B minus that for A."""
        return {label: self.b.probabilities[label] - p for label, p in self.a.probabilities.items()}


@dataclass
class TranslationComparison:
    """Two German sentences through the translator; source tokens aligned on ids, outputs on their text."""

    a: TranslationResult
    b: TranslationResult
    source: list[AlignedToken]  # German tokens, '</s>' last
    target: list[AlignedToken]  # English steps
    a_maps: AttentionMaps
    b_maps: AttentionMaps

    def attention(self, kind: str = "cross") -> AlignedAttention:
        """Cross-attention (English steps over German tokens) or encoder self-attention of both sentences."""
        rows, cols = {"encoder": (self.source, self.source), "cross": (self.target, self.source)}[kind]
        return AlignedAttention(kind, rows, cols, self.a_maps.maps[kind], self.b_maps.maps[kind])


@dataclass
class LMComparison(OneSequenceComparison):
    """Two prompts through the language model with the same decoding: their sequences (prompt and generated tokens,
    the maps' rows and columns) aligned on ids."""

    a: LanguageModelResult
    b: LanguageModelResult
    KIND = "causal"


@dataclass
class ModelComparison:
    """One review through two classifiers (each reads it with its own tokenizer): both results and their maps."""

    a: SentimentResult
    b: SentimentResult
    a_maps: AttentionMaps
    b_maps: AttentionMaps

    @property
    def agree(self) -> bool:
        return self.a.label == self.b.label


def compare_sentiment(pipe, text_a: str, text_b: str) -> SentimentComparison:
    """Run the classifier on both reviews and align the tokens it read."""
    a, b = pipe(text_a), pipe(text_b)
    a_maps, b_maps = a.attention_maps(), b.attention_maps()
    ids_a, ids_b = [t.id for t in a.tokens], [t.id for t in b.tokens]
    tokens = align_tokens(ids_a, ids_b, a_maps.queries["self"], b_maps.queries["self"])
    return SentimentComparison(a, b, tokens, a_maps, b_maps)


def compare_translation(pipe, text_a: str, text_b: str, beam_size: int | None = None) -> TranslationComparison:
    """Translate both sentences with the same decoding and align their source tokens (on ids) and their outputs."""
    a, b = pipe(text_a, beam_size=beam_size), pipe(text_b, beam_size=beam_size)
    a_maps, b_maps = a.attention_maps(), b.attention_maps()
    src_a, src_b = [t.id for t in a.source_tokens], [t.id for t in b.source_tokens]
    source = align_tokens(src_a, src_b, a_maps.keys["cross"], b_maps.keys["cross"])
    target = align_tokens(a.target_tokens, b.target_tokens, a_maps.queries["cross"], b_maps.queries["cross"])
    return TranslationComparison(a, b, source, target, a_maps, b_maps)


def compare_lm(pipe, prompt_a: str, prompt_b: str, decoding: Decoding | None = None) -> LMComparison:
    """Continue both prompts with the same decoding options (None: greedy, 20 tokens) and align the sequences their
    maps are over, on ids."""
    a, b = pipe.generate(prompt_a, decoding), pipe.generate(prompt_b, decoding)
    a_maps, b_maps = a.attention_maps(), b.attention_maps()
    tokens = align_tokens(a.sequence_ids, b.sequence_ids, a_maps.queries["causal"], b_maps.queries["causal"])
    return LMComparison(a, b, tokens, a_maps, b_maps)


def compare_classifiers(pipe_a, pipe_b, text: str) -> ModelComparison:
    """Run two classifiers on the same review."""
    a, b = pipe_a(text), pipe_b(text)
    return ModelComparison(a, b, a.attention_maps(), b.attention_maps())
