"""Out-of-domain scores: the pieces by hand, `training.calibrate` on the tiny models, and the flag on fixed in- and
out-of-domain inputs."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_models import read_jsonl

from pipelines import SentimentPipeline, TranslationPipeline
from pipelines.trust.domain import (
    REPEAT_MIN,
    choose_threshold,
    decode_f16,
    encode_f16,
    quantiles,
    share_at_most,
    token_log_ratio,
)
from transformer import CheckpointError

REVIEWS = read_jsonl("imdb_tiny.jsonl")
CAPTIONS = read_jsonl("multi30k_tiny.jsonl")
# Inputs no review or caption model was made for: other scripts and languages, code, digits only.
NOT_REVIEWS = [
    "今天天气很好，我们去公园吧。",
    "Мы поедем на дачу в субботу.",
    "SELECT name, email FROM users WHERE id = 17;",
    "12345 67890",
]


def test_share_at_most_reads_the_reference_distribution():
    ref = quantiles(range(101))  # 0..100
    assert share_at_most(ref, -1) == 0.0 and share_at_most(ref, 1000) == 1.0
    assert share_at_most(ref, 50) == pytest.approx(0.5, abs=0.01)
    assert share_at_most(ref, 10) == pytest.approx(0.1, abs=0.01)
    assert share_at_most(ref, -math.inf) == 0.0


def test_threshold_flags_at_most_the_target_rate_of_every_file():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 1, 500), rng.uniform(0.3, 1, 200)  # b's scores are higher: a decides
    t = choose_threshold([a, b], 0.04)
    assert np.mean(a < t) <= 0.04 and np.mean(b < t) <= 0.04
    assert np.mean(a < t) >= 0.035  # as high as that allows
    assert choose_threshold([np.arange(10.0)], 0.0) == 0.0  # target 0: nothing in the file is flagged


def test_token_log_ratio_and_its_fp16_storage():
    ratio = token_log_ratio([100, 0, 5, 0], [1, 100, 0, 0])
    assert ratio[0] > 0 > ratio[1]  # frequent in training, rare in general text, and the other way round
    assert ratio[2] == 6.0  # never in general text: clipped
    assert decode_f16(encode_f16(ratio)) == pytest.approx(ratio, abs=1e-2)


def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def calibrated_sentiment(sentiment_dir, tmp_path_factory):
    from training.calibrate import main as calibrate

    tmp = tmp_path_factory.mktemp("calibrated")
    model = tmp / "sentiment"
    shutil.copytree(sentiment_dir, model)
    train = _write(tmp / "train.jsonl", REVIEWS[:26])
    held = _write(tmp / "held.jsonl", [{"sentence": r["text"], "label": r["label"]} for r in REVIEWS[26:]])
    args = ["sentiment", "--model", str(model), "--data", held, "--train-data", train, "--target-rate", "0.1"]
    args += ["--general-words", "20000"]  # wordfreq's 20,000 most frequent words: enough here, and fast
    assert calibrate(args) == 0
    return model


def test_calibrate_writes_temperature_and_domain_statistics(calibrated_sentiment):
    prep = json.loads((calibrated_sentiment / "preprocessing.json").read_text())
    assert prep["max_len"] == 64 and prep["labels"] == ["negative", "positive"]  # what was there is kept
    assert prep["temperature"] > 0 and math.isfinite(prep["temperature_length_exponent"])
    domain = prep["domain"]
    assert domain["signals"] == ["words", "piece_length"] and domain["target_rate"] == 0.1
    assert len(domain["references"]["words"]) == len(domain["references"]["piece_length"]) == 201
    assert 0 < domain["threshold"] <= 1
    assert not list(calibrated_sentiment.glob("*.tmp"))  # written atomically: no temporary file left
    # a folder without metrics.json (a run's best/) gets one with the fit, which training.ship carries on
    fit = json.loads((calibrated_sentiment / "metrics.json").read_text())["calibration"]
    assert fit["temperature"] == prep["temperature"]


def test_general_counts_saved_here_calibrate_alike_and_only_for_their_tokenizer(calibrated_sentiment, tmp_path):
    """--general-counts (a machine without wordfreq): counts saved by save_general_counts give the same
    out-of-domain statistics as wordfreq itself, and are refused for another vocabulary or size."""
    from training.calibrate import main as calibrate
    from training.calibrate import read_general_counts, save_general_counts
    from training.engine.data import DataError

    pipe = SentimentPipeline.from_pretrained(str(calibrated_sentiment))
    tok, V = pipe.tokenizer, pipe.model.config.vocab_size
    counts = tmp_path / "general.npz"
    save_general_counts(counts, tok, V, "en", 20000)
    model = Path(shutil.copytree(calibrated_sentiment, tmp_path / "model"))
    train, held = (str(calibrated_sentiment.parent / f) for f in ("train.jsonl", "held.jsonl"))  # the fixture's
    args = ["sentiment", "--model", str(model), "--data", held, "--train-data", train, "--target-rate", "0.1"]
    assert calibrate([*args, "--general-words", "20000", "--general-counts", str(counts)]) == 0
    domain = json.loads((model / "preprocessing.json").read_text())["domain"]
    assert domain == json.loads((calibrated_sentiment / "preprocessing.json").read_text())["domain"]
    with pytest.raises(DataError, match="another tokenizer"):
        read_general_counts(counts, tok, V, "en", 200_000)  # saved for 20,000 words
    tok.add_tokens(["zzzunseen"])
    with pytest.raises(DataError, match="another tokenizer"):
        read_general_counts(counts, tok, V, "en", 20000)


def test_temperature_fitted_on_the_temperature_data_only(calibrated_sentiment, tmp_path, capsys):
    """--temperature-data: the temperature is the NLL fit on those files alone (a random hold-out of SST-2 train
    is not independent of its training rows); every --data file is still reported and read for the domain."""
    import torch

    from pipelines.trust.calibration import fit_temperature
    from training.calibrate import main as calibrate

    train = str(calibrated_sentiment.parent / "train.jsonl")
    rows = [{"sentence": r["text"], "label": r["label"]} for r in REVIEWS[26:]]
    clean, leaky = _write(tmp_path / "clean.jsonl", rows[::2]), _write(tmp_path / "leaky.jsonl", rows[1::2])
    model = Path(shutil.copytree(calibrated_sentiment, tmp_path / "model"))
    args = ["sentiment", "--model", str(model), "--data", clean, leaky, "--train-data", train]
    args += ["--general-words", "20000", "--target-rate", "0.1", "--plain-temperature"]
    assert calibrate([*args, "--temperature-data", clean]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    pipe = SentimentPipeline.from_pretrained(str(calibrated_sentiment))
    logits, _ = pipe.raw_logits([r["sentence"] for r in rows[::2]], 8)
    expected = fit_temperature(logits, torch.tensor([r["label"] for r in rows[::2]]))
    prep = json.loads((model / "preprocessing.json").read_text())
    assert prep["temperature"] == pytest.approx(expected, rel=1e-4)
    assert prep["temperature_length_exponent"] == 0.0
    assert record["temperature_fit"][clean]["fitted_on"] and not record["temperature_fit"][leaky]["fitted_on"]
    assert set(record["held_out_flag_rate"]) == {clean, leaky}  # the domain still reads every held-out file
    both = Path(shutil.copytree(calibrated_sentiment, tmp_path / "both"))
    assert calibrate([*args[:2], str(both), *args[3:]]) == 0  # fitted on both files: another temperature
    assert json.loads((both / "preprocessing.json").read_text())["temperature"] != pytest.approx(expected, rel=1e-4)
    capsys.readouterr()
    assert calibrate([*args, "--temperature-data", train]) == 2  # not a held-out file
    assert "must be among the --data files" in capsys.readouterr().err
    same = Path(shutil.copytree(calibrated_sentiment, tmp_path / "same"))
    assert calibrate([*args[:2], str(same), *args[3:], "--temperature-data", f"{tmp_path}/./clean.jsonl"]) == 0
    assert json.loads((same / "preprocessing.json").read_text())["temperature"] == prep["temperature"]  # same file
    capsys.readouterr()
    translation = ["translation", "--model", str(tmp_path / "none"), "--data", clean, "--train-data", train]
    assert calibrate([*translation, "--temperature-data", clean]) == 2  # refused before any model is read
    assert "a translation model has no temperature" in capsys.readouterr().err


def test_domain_only_refits_the_flags_and_keeps_the_temperature_and_the_scores(calibrated_sentiment, tmp_path):
    """--domain-only: new out-of-domain statistics, the same temperature and temperature-fit record; a scored
    entry of the same data set, recorded on another machine's path, gets the new flag rate and keeps its accuracy."""
    from training.calibrate import main as calibrate
    from training.calibrate import read_texts

    model = Path(shutil.copytree(calibrated_sentiment, tmp_path / "model"))
    held = calibrated_sentiment.parent / "held.jsonl"
    metrics = json.loads((model / "metrics.json").read_text())
    elsewhere = f"/tmp/gpu/{held.parent.name}/held.jsonl"
    metrics["test"] = {"accuracy": 0.75, "out_of_domain_rate": 0.5, "data": elsewhere, "split": "test"}
    (model / "metrics.json").write_text(json.dumps(metrics))
    before = json.loads((model / "preprocessing.json").read_text())
    args = ["sentiment", "--model", str(model), "--data", str(held), "--domain-only", "--test-data", str(held)]
    args += ["--train-data", str(calibrated_sentiment.parent / "train.jsonl"), "--general-words", "20000"]
    assert calibrate([*args, "--target-rate", "0.25"]) == 0
    after = json.loads((model / "preprocessing.json").read_text())
    assert after["temperature"] == before["temperature"] and after["domain"]["target_rate"] == 0.25
    assert after["domain"]["threshold"] > before["domain"]["threshold"]  # more of the held-out texts flagged
    record = json.loads((model / "metrics.json").read_text())
    assert record["calibration"]["temperature_fit"] == metrics["calibration"]["temperature_fit"]  # kept
    pipe = SentimentPipeline.from_pretrained(str(model))
    texts, _ = read_texts(str(held), "sentiment")
    rate = sum(f for f, _ in pipe.domain_scores(texts)) / len(texts)
    assert record["calibration"]["test"][str(held)] == {"n": len(texts), "out_of_domain_rate": rate}
    assert record["test"] == {**metrics["test"], "out_of_domain_rate": rate}  # accuracy and the path kept


def test_sentiment_flags_fixed_out_of_domain_inputs_and_not_the_reviews(calibrated_sentiment):
    pipe = SentimentPipeline.from_pretrained(str(calibrated_sentiment))
    held_out = [r["text"] for r in REVIEWS[26:]]
    assert sum(f for f, _ in pipe.domain_scores(held_out)) <= 1  # at most 10% of 14 held-out reviews
    for text in NOT_REVIEWS:
        result = pipe(text)
        assert result.out_of_domain, text
        assert 0 <= result.domain_score < pipe.domain.threshold
    review = pipe(REVIEWS[30]["text"])
    assert not review.out_of_domain and review.domain_score >= pipe.domain.threshold


def test_one_word_piece_over_and_over_is_flagged_though_it_looks_typical(calibrated_sentiment):
    """The words signal is a mean over tokens: "film" x 30 looks as typical as "film". Repetition flags it."""
    pipe = SentimentPipeline.from_pretrained(str(calibrated_sentiment))
    words = lambda text: pipe.domain.token_signals(pipe.encode(text)[0])["words"]  # noqa: E731
    assert words("film " * REPEAT_MIN) == pytest.approx(words("film"))
    assert not pipe("film").out_of_domain  # a typical word on its own
    repeated = pipe("film " * REPEAT_MIN)
    assert repeated.out_of_domain and repeated.domain_score == 0.0
    short = pipe("film " * (REPEAT_MIN - 1))  # too short to tell: the signals alone decide, as for any text
    signals = pipe.domain.token_signals(pipe.encode("film " * (REPEAT_MIN - 1))[0])
    assert short.domain_score == pipe.domain.score(signals) > 0 and signals["words"] == pytest.approx(words("film"))
    assert not any(pipe.domain.repeats(pipe.encode(r["text"])[0]) for r in REVIEWS)


def test_piece_length_is_the_mean_letters_of_the_word_pieces():
    from pipelines.trust.domain import DomainModel

    letters = np.array([0, 0, 5, 2, 1, 0])  # ids 0, 1, 5: special tokens, digits, punctuation
    domain = DomainModel(np.zeros(6, dtype=np.float32), letters, {}, 0.0, {})
    length = lambda ids: domain.token_signals(ids)["piece_length"]  # noqa: E731
    assert length([0, 2, 2, 5]) == 5.0 and length([2, 3, 4, 1]) == pytest.approx(8 / 3)
    assert length([0, 1, 5]) == -math.inf  # no word piece: as untypical as can be
    assert domain.token_signals([2, 3]) == {"words": 0.0, "piece_length": 3.5}


def _random_effects_texts(rng, lengths, mean=4.0, between=0.04, within=4.0) -> list[np.ndarray]:
    """Per-piece values of in-domain texts: each text's own mean drawn around `mean`, its pieces around that."""
    own = rng.normal(mean, math.sqrt(between), len(lengths))
    return [rng.normal(m, math.sqrt(within), n) for m, n in zip(own, lengths)]


def test_spread_fit_recovers_how_text_means_vary():
    from pipelines.trust.domain import Spread

    rng = np.random.default_rng(0)
    spread = Spread.fit(_random_effects_texts(rng, rng.integers(3, 300, 4000)) + [np.array([])])
    assert spread.mean == pytest.approx(4.0, abs=0.02)
    assert spread.within == pytest.approx(4.0, rel=0.02) and spread.between == pytest.approx(0.04, rel=0.2)
    assert spread.standardize(-math.inf, 0) == -math.inf
    with pytest.raises(ValueError, match="no text"):
        Spread.fit([np.array([])])


def test_a_length_aware_signal_flags_short_and_long_texts_alike():
    """The mean of 3 pieces strays further by chance than that of 300: with raw means a threshold fitted on
    texts of every length flags mostly the short ones; standardized for length, every length about alike."""
    from pipelines.trust.domain import Spread

    rng = np.random.default_rng(1)
    lengths = np.concatenate([rng.integers(3, 8, 1500), rng.integers(150, 300, 1500)])
    held = _random_effects_texts(rng, lengths)
    fresh = _random_effects_texts(rng, lengths)  # new in-domain texts of the same lengths
    spread = Spread.fit(held)
    short = lengths < 10

    def flag_rates(signal) -> tuple[float, float]:
        """(short, long) shares of the fresh texts flagged by a 5% threshold fitted on the held-out ones."""
        ref = quantiles([signal(v) for v in held])
        threshold = choose_threshold([[share_at_most(ref, signal(v)) for v in held]], 0.05)
        flagged = np.array([share_at_most(ref, signal(v)) < threshold for v in fresh])
        return flagged[short].mean(), flagged[~short].mean()

    raw_short, raw_long = flag_rates(lambda v: v.mean())
    assert raw_short > 0.08 and raw_long < 0.005  # the short texts take nearly every flag
    aware_short, aware_long = flag_rates(lambda v: spread.standardize(v.mean(), len(v)))
    assert 0.02 < aware_short < 0.08 and 0.02 < aware_long < 0.08, (aware_short, aware_long)


def test_length_aware_statistics_round_trip_and_older_ones_stay_raw(calibrated_sentiment):
    """preprocessing.json keeps each length-aware signal's spread; statistics written before it have none, and
    their signals are the raw means they were fitted on."""
    from pipelines.trust.domain import DomainModel, Spread

    pipe = SentimentPipeline.from_pretrained(str(calibrated_sentiment))
    assert set(pipe.domain.length_aware) == {"piece_length"}  # what training.calibrate fits for sentiment
    entry = pipe.domain.to_preprocessing()
    again = DomainModel.from_preprocessing(entry, pipe.tokenizer, len(pipe.domain.letters))
    assert again.length_aware == pipe.domain.length_aware
    ids = pipe.encode("A quiet, beautifully acted film.")[0]
    assert again.token_signals(ids) == pipe.domain.token_signals(ids)
    older = DomainModel.from_preprocessing(
        {k: v for k, v in entry.items() if k != "length_aware"}, pipe.tokenizer, len(pipe.domain.letters)
    )
    raw = float(pipe.domain.piece_values(ids)["piece_length"].mean())
    assert older.length_aware == {} and older.token_signals(ids)["piece_length"] == pytest.approx(raw)
    spread = pipe.domain.length_aware["piece_length"]
    assert isinstance(spread, Spread) and again.token_signals(ids)["piece_length"] == pytest.approx(
        spread.standardize(raw, len(pipe.domain.piece_values(ids)["piece_length"]))
    )


def test_text_the_tokenizer_was_not_built_for_falls_apart_into_short_pieces(calibrated_sentiment):
    """Spanish or French typed into an English review model: its words are pieces English uses too (the words
    signal sees nothing odd), but many more of them."""
    pipe = SentimentPipeline.from_pretrained(str(calibrated_sentiment))
    length = lambda text: pipe.domain.piece_values(pipe.encode(text)[0])["piece_length"].mean()  # noqa: E731
    other = ["La película fue aburrida y demasiado larga.", "Je n'ai pas aimé ce film, trop long et ennuyeux."]
    english = [r["text"] for r in REVIEWS[26:]]
    assert max(length(t) for t in other) < min(length(t) for t in english)


def test_translation_calibration_and_flags(translation_dir, tmp_path):
    from training.calibrate import main as calibrate

    model = tmp_path / "translation"
    shutil.copytree(translation_dir, model)
    train = _write(tmp_path / "train.jsonl", CAPTIONS[:16])
    held = _write(tmp_path / "held.jsonl", CAPTIONS[16:])
    args = ["translation", "--model", str(model), "--data", held, "--train-data", train, "--target-rate", "0.15"]
    assert calibrate([*args, "--general-words", "20000"]) == 0
    pipe = TranslationPipeline.from_pretrained(str(model))
    assert set(pipe.domain.references) == {"words", "output_logprob"}
    for text in NOT_REVIEWS[:2]:  # other scripts (the tiny 400-token vocabulary cannot tell SQL from German)
        result = pipe(text)
        assert result.out_of_domain and result.domain_score < pipe.domain.threshold, text
    scored = pipe.translate_scored([r["de"] for r in CAPTIONS[16:]])
    assert [t for t, *_ in scored] == pipe.translate([r["de"] for r in CAPTIONS[16:]])
    assert sum(s[2] for s in scored) <= 1  # target rate 15% of 8 held-out captions: at most one flagged
    repeated = pipe("Mann " * REPEAT_MIN)  # the same check as sentiment's: one word piece over and over
    assert pipe.domain.repeats(pipe.encode_source(["Mann " * REPEAT_MIN])[0][0])
    assert repeated.out_of_domain and repeated.domain_score == 0.0


def test_damaged_domain_statistics_fail_loading_with_a_clear_error(calibrated_sentiment, tmp_path):
    model = tmp_path / "m"
    shutil.copytree(calibrated_sentiment, model)
    prep = json.loads((model / "preprocessing.json").read_text())
    prep["domain"]["token_scores_f16_base64"] = encode_f16(np.zeros(7))
    (model / "preprocessing.json").write_text(json.dumps(prep))
    with pytest.raises(CheckpointError, match="out-of-domain statistics"):
        SentimentPipeline.from_pretrained(str(model))


def test_the_shipped_model_reads_short_plain_sentences_as_in_domain():
    """Short review sentences of short common words are what people type first. With a raw mean of letters a
    piece, the shipped model's statistics flagged every one of these (domain scores 0.0007-0.0044, threshold
    0.0047) as not English; with the length-aware piece length they pass, and other text is still flagged."""
    pipe = SentimentPipeline.from_pretrained(str(Path(__file__).resolve().parents[2] / "assets" / "sentiment"))
    plain = ["I liked it.", "I loved it!", "This is so bad.", "It is what it is.", "A must see."]
    plain.append("It is not a bad film, but not a good one either.")
    assert not any(flagged for flagged, _ in pipe.domain_scores(plain))
    other = [*NOT_REVIEWS, "La película fue aburrida y demasiado larga.", "Je n'ai pas aimé ce film, trop long."]
    other.append("The central bank raised interest rates by half a point on Tuesday.")
    assert all(flagged for flagged, _ in pipe.domain_scores(other))
