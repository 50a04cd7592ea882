"""Comparing two inputs: which tokens they share (difflib alignment) and how attention changed on those.

An alignment walks both token sequences in order: a shared token pairs position i of A with position j of
B; a token only in A is deleted (j is None), a token only in B is inserted (i is None). Attention maps of
A and B are compared only where both the query and the key token are shared: elsewhere there is nothing
to subtract, and the diff holds NaN there (drawn as a gap, its row or column labelled as deleted/inserted).
"""

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from .sentiment import SentimentResult
from .translation import TranslationResult


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
class SentimentComparison:
    """Two reviews through the classifier, and their tokens aligned (on token ids)."""

    a: SentimentResult
    b: SentimentResult
    tokens: list[AlignedToken]

    def change(self) -> dict[str, float]:
        """Probability of each label for B minus that for A."""
        return {label: self.b.probabilities[label] - p for label, p in self.a.probabilities.items()}

    def attention_diff(self, layer: int, head: int) -> np.ndarray:
        """(T, T) over the aligned tokens: self-attention of B minus A for one layer and head."""
        a, b = (r.attentions[layer][head].float().numpy() for r in (self.a, self.b))
        return aligned_diff(a, b, self.tokens, self.tokens)


@dataclass
class TranslationComparison:
    """Two German sentences through the translator; source tokens aligned on ids, outputs on their text."""

    a: TranslationResult
    b: TranslationResult
    source: list[AlignedToken]  # German tokens, '</s>' last
    target: list[AlignedToken]  # English steps

    def cross_diff(self, layer: int, head: int) -> np.ndarray:
        """(Tt, Ts) over aligned English steps (rows) and German tokens (columns): cross-attention B minus A."""
        a, b = (r.cross_attentions[layer][head].float().numpy() for r in (self.a, self.b))
        return aligned_diff(a, b, self.target, self.source)


def _token_texts(tokens, eos_id: int | None = None) -> list[str]:
    """What to show for each token: its text, '</s>' for the end marker, '␣' for a piece with no characters."""
    return [t.text or ("</s>" if t.id == eos_id else "␣") for t in tokens]


def compare_sentiment(pipe, text_a: str, text_b: str) -> SentimentComparison:
    """Run the classifier on both reviews and align the tokens it read."""
    a, b = pipe(text_a), pipe(text_b)
    ids_a, ids_b = [t.id for t in a.tokens], [t.id for t in b.tokens]
    return SentimentComparison(a, b, align_tokens(ids_a, ids_b, _token_texts(a.tokens), _token_texts(b.tokens)))


def compare_translation(pipe, text_a: str, text_b: str, beam_size: int | None = None) -> TranslationComparison:
    """Translate both sentences with the same decoding and align their source tokens and their outputs."""
    a, b = pipe(text_a, beam_size=beam_size), pipe(text_b, beam_size=beam_size)
    src_a, src_b = [t.id for t in a.source_tokens], [t.id for t in b.source_tokens]
    eos = pipe.adapter.eos_id
    source = align_tokens(src_a, src_b, _token_texts(a.source_tokens, eos), _token_texts(b.source_tokens, eos))
    return TranslationComparison(a, b, source, align_tokens(a.target_tokens, b.target_tokens))
