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
  into are the reviews' own. -inf without a word piece. Fitted for sentiment (training/calibrate.py), *length-aware*
  (below).
- `output_logprob` (translation): the mean log-probability per token the model gave its own output.

A mean over few pieces strays further by chance than one over many: three short common words ("I liked it.",
2.7 letters a piece) look as unusual as a Spanish sentence. A **length-aware** signal is therefore the mean's
distance from the in-domain mean in units of the spread expected at the input's length, `Spread.standardize`:
(mean - mu) / sqrt(between + within / n), with `within` the variance of the per-piece value inside a text,
`between` the variance of text means beyond what `within / n` explains, fitted on held-out in-domain data
(`Spread.fit`). Which signals are length-aware is stored with the statistics (`DomainModel.length_aware`).

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
from dataclasses import asdict, dataclass, field

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


@dataclass(frozen=True)
class Spread:
    """How the mean of a per-piece value varies over in-domain texts: around `mean`, with variance
    `between + within / n` for a text of n pieces (a random-effects model of text means)."""

    mean: float  # the mean over held-out texts of each text's mean
    within: float  # variance of the per-piece value inside a text, pooled over texts
    between: float  # variance of text means beyond what within / n explains (0 when none)

    def standardize(self, mean: float, n: int) -> float:
        """A text's mean of n pieces as its distance from `mean` in expected spreads; -inf stays -inf."""
        if not math.isfinite(mean) or n < 1:
            return mean
        return (mean - self.mean) / math.sqrt(self.between + self.within / n)

    @classmethod
    def fit(cls, texts: list[np.ndarray]) -> "Spread":
        """By the method of moments from each text's per-piece values ((n_i,) arrays; empty ones are skipped)."""
        texts = [np.asarray(v, dtype=np.float64) for v in texts if len(v)]
        if not texts:
            raise ValueError("no text with a word piece to fit a spread on")
        means = np.array([v.mean() for v in texts])
        n = np.array([len(v) for v in texts])
        squares = sum(float(((v - v.mean()) ** 2).sum()) for v in texts)
        within = squares / max(int((n - 1).sum()), 1)
        mean = float(means.mean())
        between = max(0.0, float(np.mean((means - mean) ** 2 - within / n)))
        return cls(mean, float(within), between)


@dataclass
class DomainModel:
    """What a model knows about its training data, to score how typical a new input is."""

    token_scores: np.ndarray  # (V,) log p_train(t) - log p_general(t)
    letters: np.ndarray  # (V,) letters in each token's text (piece_letters); 0: not a word piece
    references: dict[str, list[float]]  # signal -> quantiles of it on held-out in-domain data
    threshold: float  # flag when domain_score < threshold
    info: dict  # how it was fitted (files, background, target rate), stored as is
    length_aware: dict[str, Spread] = field(default_factory=dict)  # signal -> its spread; the others are raw means

    def _word_ids(self, ids: list[int]) -> np.ndarray:
        """The word pieces (tokens with a letter) among `ids`."""
        ids = np.asarray(ids, dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < len(self.letters))]
        return ids[self.letters[ids] > 0]

    def piece_values(self, ids: list[int]) -> dict[str, np.ndarray]:
        """Each token signal's value at every word piece among `ids`: {"words": (n,), "piece_length": (n,)}."""
        ids = self._word_ids(ids)
        return {"words": self.token_scores[ids], "piece_length": self.letters[ids].astype(np.float32)}

    def token_signals(self, ids: list[int]) -> dict[str, float]:
        """The signals read off an input's token ids: `words` and `piece_length` (a task may add its own), each
        the mean over the word pieces (-inf without one), standardized for the input's length if length-aware."""
        out = {}
        for name, values in self.piece_values(ids).items():
            mean = float(values.mean()) if len(values) else -math.inf
            spread = self.length_aware.get(name)
            out[name] = spread.standardize(mean, len(values)) if spread else mean
        return out

    def repeats(self, ids: list[int]) -> bool:
        """One word piece makes up over REPEAT_SHARE of the input's word pieces, of which there are at least
        REPEAT_MIN ("aaaa" x 500): what the mean over tokens cannot see."""
        ids = self._word_ids(ids)
        return len(ids) >= REPEAT_MIN and np.unique(ids, return_counts=True)[1].max() > REPEAT_SHARE * len(ids)

    def check(self, ids: list[int], signals: dict[str, float]) -> tuple[bool, float, str]:
        """(out of domain, domain score, why) of an input's token ids and its signals: score 0 for an input that
        repeats one word piece (no held-out input comes near; why: "repeats"), else the signals' score against the
        threshold, and why: the name of the least typical signal (the one the score is)."""
        if self.repeats(ids):
            return True, 0.0, "repeats"
        shares = self._shares(signals)
        reason = min(shares, key=shares.get, default="")
        score = shares.get(reason, 1.0)
        return self.flagged(score), score, reason

    def _shares(self, signals: dict[str, float]) -> dict[str, float]:
        """Each signal's share of held-out inputs at most as typical."""
        return {k: share_at_most(self.references[k], v) for k, v in signals.items() if k in self.references}

    def score(self, signals: dict[str, float]) -> float:
        """Domain score in [0, 1]: the least typical signal's share of held-out inputs at most as typical."""
        return min(self._shares(signals).values(), default=1.0)

    def flagged(self, score: float) -> bool:
        return score < self.threshold

    def to_preprocessing(self) -> dict:
        return {
            **self.info,
            "threshold": self.threshold,
            "references": self.references,
            "token_scores_f16_base64": encode_f16(self.token_scores),
            **({"length_aware": {k: asdict(v) for k, v in self.length_aware.items()}} if self.length_aware else {}),
        }

    @classmethod
    def from_preprocessing(cls, entry: dict | None, tokenizer, vocab_size: int) -> "DomainModel | None":
        """The DomainModel stored in preprocessing.json["domain"], or None when the model has none."""
        if not entry:
            return None
        scores = decode_f16(entry["token_scores_f16_base64"])
        if len(scores) != vocab_size:
            raise ValueError(f"domain statistics cover {len(scores)} tokens, the model has {vocab_size}")
        stored = ("threshold", "references", "token_scores_f16_base64", "length_aware")
        info = {k: v for k, v in entry.items() if k not in stored}
        spreads = {k: Spread(**v) for k, v in (entry.get("length_aware") or {}).items()}
        letters = piece_letters(tokenizer, vocab_size)
        return cls(scores, letters, entry["references"], entry["threshold"], info, spreads)


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
