"""Out-of-domain scores: does an input look like the text the model was trained on?

Each task measures one or more *typicality* signals (higher = more like the training data):

- `words`: the mean, over the input's word pieces (tokens with a letter), of each token's log-ratio
  log p_train(token) - log p_general(token): how much more often the model's training data uses the token
  than general text of the same language does (a unigram form of Moore & Lewis 2010's cross-entropy
  difference). "plot", "acting", "Mann", "Straße" score high; "inflation", "password" or "def" low. An
  input with no word piece at all (digits, emoji, symbols) scores -inf.
- `piece_length`: the mean number of letters in the input's word pieces. A tokenizer's vocabulary keeps whole the
  words of the language it was built on; text it was not built for (another language, code, keyboard noise) falls
  apart into short pieces. On the English sentiment tokenizers every one of the 22 other-language inputs of
  benchmarks/ood/ was below the 5th percentile of 1,000 held-out reviews and phrases (medians 2.4 and 2.1 letters
  a piece, against 4.1 and 4.0), where the `words` signal saw them as typical: the English word pieces they split
  into are the reviews' own. -inf without a word piece. Fitted for sentiment (training/calibrate.py).
- `output_logprob` (translation): the mean log-probability per token the model gave its own output.

Every signal is compared with the same signal on held-out in-domain data. The **domain score** is, for the
input's least typical signal, the share of held-out in-domain inputs that were at most as typical: 0.5 is
a middling in-domain input, 0.01 means only 1% of held-out in-domain inputs looked as unusual. An input is
flagged **out of domain** when its domain score is below a threshold chosen on that held-out data (at most
`target_rate` of each held-out file flagged). All numbers are stored in preprocessing.json under "domain".

The `words` signal averages over tokens, so a text that repeats one piece that the training data likes
("aaaa", "zzzz") looks very typical. `DomainModel.repeats` catches that: one word piece making up over
`REPEAT_SHARE` of at least `REPEAT_MIN` word pieces. No text of IMDB train or test or SST-2 train or validation
comes near it (the largest share there, over 83,000 texts: 0.5, in a short SST-2 phrase), nor any German
sentence of Multi30k (0.4 over its 31,014), so such an input gets domain score 0 and is flagged
(`DomainModel.check`, which both pipelines use).

Apart from the scores, `looks_english` tells from function words whether a short text is English rather than
German, so the translation tab can say "this looks like English" instead of only that the input is unusual.
"""

import base64
import math
import re
from dataclasses import dataclass

import numpy as np

N_QUANTILES = 200  # reference distributions are stored as 201 quantiles
REPEAT_SHARE, REPEAT_MIN = 0.8, 20  # one word piece over 80% of at least 20 word pieces: keyboard noise
_LETTER = re.compile(r"[^\W\d_]")


def piece_letters(tokenizer, vocab_size: int) -> np.ndarray:
    """(V,) int: how many letters each token id's text has (0: not a word piece)."""
    letters = np.zeros(vocab_size, dtype=np.int32)
    for i in range(min(vocab_size, tokenizer.get_vocab_size())):
        letters[i] = len(_LETTER.findall(tokenizer.decode([i], skip_special_tokens=True) or ""))
    return letters


def token_log_ratio(train_counts, general_counts, clip: float = 6.0) -> np.ndarray:
    """(V,) log p_train - log p_general per token, add-0.5 (train) and 1e-7 (general) smoothed, clipped."""
    train = np.asarray(train_counts, dtype=np.float64) + 0.5
    general = np.asarray(general_counts, dtype=np.float64)
    general = general / max(general.sum(), 1e-12) + 1e-7
    ratio = np.log(train / train.sum()) - np.log(general / general.sum())
    return np.clip(ratio, -clip, clip).astype(np.float32)


def quantiles(values) -> list[float]:
    """The 201 quantiles (0, 0.5%, ..., 100%) of finite values: a compact reference distribution."""
    v = np.asarray([x for x in values if math.isfinite(x)], dtype=np.float64)
    return [round(float(q), 5) for q in np.quantile(v, np.linspace(0, 1, N_QUANTILES + 1))]


def share_at_most(reference: list[float], x: float) -> float:
    """Share of the reference distribution at or below x (0 below its minimum, 1 above its maximum)."""
    if not math.isfinite(x):
        return 0.0 if x < 0 else 1.0
    ref = np.asarray(reference)
    if x < ref[0]:
        return 0.0
    # Highest quantile level whose value is <= x, interpolated between neighbouring quantiles.
    levels = np.linspace(0, 1, len(ref))
    k = int(np.searchsorted(ref, x, side="right"))  # ref[:k] <= x
    if k >= len(ref):
        return 1.0
    lo, hi = ref[k - 1], ref[k]
    frac = 0.0 if hi <= lo else (x - lo) / (hi - lo)
    return float(levels[k - 1] + frac * (levels[k] - levels[k - 1]))


def choose_threshold(scores_per_file: list, target_rate: float) -> float:
    """The highest threshold that flags (score < threshold) at most target_rate of every held-out file."""
    limits = []
    for scores in scores_per_file:
        s = np.sort(np.asarray(scores, dtype=np.float64))
        allowed = int(math.floor(target_rate * len(s)))  # inputs this file may have flagged
        limits.append(s[allowed] if allowed < len(s) else math.inf)
    return float(min(limits))


def encode_f16(values: np.ndarray) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f2").tobytes()).decode("ascii")


def decode_f16(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f2").astype(np.float32)


@dataclass
class DomainModel:
    """What a model knows about its training data, to score how typical a new input is."""

    token_scores: np.ndarray  # (V,) log p_train(t) - log p_general(t)
    letters: np.ndarray  # (V,) letters in each token's text (piece_letters); 0: not a word piece
    references: dict[str, list[float]]  # signal -> quantiles of it on held-out in-domain data
    threshold: float  # flag when domain_score < threshold
    info: dict  # how it was fitted (files, background, target rate), stored as is

    def _word_ids(self, ids: list[int]) -> np.ndarray:
        """The word pieces (tokens with a letter) among `ids`."""
        ids = np.asarray(ids, dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < len(self.letters))]
        return ids[self.letters[ids] > 0]

    def words(self, ids: list[int]) -> float:
        """Mean token log-ratio over the word pieces among `ids`; -inf when there is none."""
        ids = self._word_ids(ids)
        return float(self.token_scores[ids].mean()) if len(ids) else -math.inf

    def piece_length(self, ids: list[int]) -> float:
        """Mean letters a word piece among `ids`; -inf when there is none."""
        ids = self._word_ids(ids)
        return float(self.letters[ids].mean()) if len(ids) else -math.inf

    def token_signals(self, ids: list[int]) -> dict[str, float]:
        """The signals read off an input's token ids: `words` and `piece_length` (a task may add its own)."""
        return {"words": self.words(ids), "piece_length": self.piece_length(ids)}

    def repeats(self, ids: list[int]) -> bool:
        """One word piece makes up over REPEAT_SHARE of the input's word pieces, of which there are at least
        REPEAT_MIN ("aaaa" x 500): what the mean over tokens cannot see."""
        ids = self._word_ids(ids)
        return len(ids) >= REPEAT_MIN and np.unique(ids, return_counts=True)[1].max() > REPEAT_SHARE * len(ids)

    def check(self, ids: list[int], signals: dict[str, float]) -> tuple[bool, float]:
        """(out of domain, domain score) of an input's token ids and its signals: score 0 for an input that
        repeats one word piece (no held-out input comes near), else the signals' score against the threshold."""
        if self.repeats(ids):
            return True, 0.0
        score = self.score(signals)
        return self.flagged(score), score

    def score(self, signals: dict[str, float]) -> float:
        """Domain score in [0, 1]: the least typical signal's share of held-out inputs at most as typical."""
        shares = [share_at_most(self.references[k], v) for k, v in signals.items() if k in self.references]
        return min(shares, default=1.0)

    def flagged(self, score: float) -> bool:
        return score < self.threshold

    def to_preprocessing(self) -> dict:
        return {
            **self.info,
            "threshold": self.threshold,
            "references": self.references,
            "token_scores_f16_base64": encode_f16(self.token_scores),
        }

    @classmethod
    def from_preprocessing(cls, entry: dict | None, tokenizer, vocab_size: int) -> "DomainModel | None":
        """The DomainModel stored in preprocessing.json["domain"], or None when the model has none."""
        if not entry:
            return None
        scores = decode_f16(entry["token_scores_f16_base64"])
        if len(scores) != vocab_size:
            raise ValueError(f"domain statistics cover {len(scores)} tokens, the model has {vocab_size}")
        info = {k: v for k, v in entry.items() if k not in ("threshold", "references", "token_scores_f16_base64")}
        return cls(scores, piece_letters(tokenizer, vocab_size), entry["references"], entry["threshold"], info)


def load_domain(prep: dict, tokenizer, vocab_size: int, name: str) -> DomainModel | None:
    """The out-of-domain statistics in preprocessing.json, or None; a damaged entry is a CheckpointError."""
    from transformer import CheckpointError

    try:
        return DomainModel.from_preprocessing(prep.get("domain"), tokenizer, vocab_size)
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{name}: preprocessing.json has unusable out-of-domain statistics: {e}") from e


# --- English or German: function words ------------------------------------------------------------------

ENGLISH = frozenset(
    "the a an and is are was were be been of to with on at by for from this that these those it its he she they we "
    "you i my his her their our not but or as has have had do does did there what which who will would can could "
    "into over under while".split()
)
GERMAN = frozenset(
    "der die das den dem des ein eine einen einem einer und ist sind war waren mit auf bei für von zu zum zur "
    "nicht aber oder als hat haben hatte es er sie wir ihr ich du sein seine ihre im vom am ins über unter "
    "während wird werden kann".split()
)
_FUNCTION_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


def function_words(text: str) -> tuple[int, int]:
    """(English function words, German function words) in the text; words both languages share count for none."""
    words = [w.lower() for w in _FUNCTION_WORD.findall(text)]
    return sum(w in ENGLISH and w not in GERMAN for w in words), sum(w in GERMAN and w not in ENGLISH for w in words)


def looks_english(text: str, at_least: int = 2) -> bool:
    """True when the text uses at least `at_least` English function words and more than twice as many English
    as German ones ("A man rides a bike." yes; "Ein Mann fährt Fahrrad." no; "Hallo" no)."""
    english, german = function_words(text)
    return english >= at_least and english > 2 * german
