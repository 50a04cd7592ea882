"""--review-crops: short crops of the training reviews, labelled as their review (training/tasks/crops.py)."""

import random
from types import SimpleNamespace

import pandas as pd
import pytest
from tiny_models import read_jsonl

from training.cli import build_parser
from training.tasks.crops import review_crop, review_crops, sentences
from training.tasks.sentiment import SentimentTask, encode

REVIEW = (
    "I rented this on a whim. The cast is good, the sets are cheap!<br /><br />Why did anyone make it? "
    'My friend called it "a treat." The best part was the popcorn.'
)
PARTS = [
    "I rented this on a whim.",
    "The cast is good, the sets are cheap!",
    "Why did anyone make it?",
    'My friend called it "a treat."',
    "The best part was the popcorn.",
]


def test_sentences_end_at_stops_quotes_and_line_breaks():
    assert sentences(REVIEW) == PARTS
    assert sentences("No stop at the end") == ["No stop at the end"]
    assert sentences("  ") == []


@pytest.mark.parametrize("from_end, edge", [(1.0, "end"), (0.0, "start")])
def test_a_crop_is_consecutive_sentences_at_one_edge_of_the_review(from_end, edge):
    rng = random.Random(0)
    crops = {review_crop(REVIEW, rng, max_sentences=3, from_end=from_end) for _ in range(200)}
    expected = {" ".join(PARTS[-k:] if edge == "end" else PARTS[:k]) for k in (1, 2, 3)}
    assert crops == expected


def test_a_crop_keeps_to_max_words_and_is_never_the_whole_review():
    rng = random.Random(1)
    long_first = " ".join(["word"] * 50) + ". Short end. Another short one."
    for _ in range(100):
        crop = review_crop(long_first, rng, max_sentences=3, max_words=20, from_end=0.5)
        assert len(crop.split()) <= 20
    assert review_crop("Only one sentence here.", random.Random(0)) is None  # nothing shorter to learn from
    assert review_crop("One line.<br /><br />", random.Random(0)) is None


def test_crops_are_seeded_labelled_as_their_review_and_drawn_once():
    texts, labels = [REVIEW, "Bad. Worse. The worst."], [1, 0]
    a = review_crops(texts, labels, 4, seed=3)
    assert a == review_crops(texts, labels, 4, seed=3)
    assert a != review_crops(texts, labels, 4, seed=4)
    crops, crop_labels = a
    for crop, label in zip(crops, crop_labels):
        assert label == (1 if crop in " ".join(PARTS) else 0)
    assert len(set(crops)) == len(crops)


def test_the_task_adds_crops_of_training_reviews_only():
    """The crops join the training rows with their review's label; the held-out reviews give none and stay whole."""
    imdb = pd.DataFrame(read_jsonl("imdb_tiny.jsonl"))
    base = dict(val_size=8, seed=0, limit=None, vocab_size=300, max_len=64, head=16)
    plain, cropped = (
        SentimentTask(SimpleNamespace(**base, review_crops=n), {"train": imdb}, log=lambda _: None) for n in (0, 2)
    )
    train_texts, train_labels = plain.sets["imdb"]["train"]
    crops, crop_labels = review_crops(train_texts, train_labels, 2, seed=0)
    assert crops  # the tiny reviews have two sentences or more
    assert len(cropped.train_ids) == len(plain.train_ids) + len(crops)
    assert cropped.train_ids[: len(plain.train_ids)] == plain.train_ids
    assert cropped.train_y[len(plain.train_ids) :] == [float(y) for y in crop_labels]
    assert cropped.train_ids[len(plain.train_ids) :] == encode(plain.tokenizer, crops, 64, 16)
    assert cropped.val == plain.val


def test_review_crops_is_a_whole_number_of_zero_or_more():
    parser = build_parser()
    assert parser.parse_args(["sentiment", "--out", "x", "--review-crops", "2"]).review_crops == 2
    assert parser.parse_args(["sentiment", "--out", "x"]).review_crops == 0
    with pytest.raises(SystemExit):
        parser.parse_args(["sentiment", "--out", "x", "--review-crops", "-1"])
