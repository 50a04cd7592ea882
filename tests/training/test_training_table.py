"""The training side of each task is one entry of training/tasks/table.py: the commands list their sub-commands from
it, and what they do per task (columns read, options, calibration, model card) follows the entry."""

import json

import pytest

from pipelines.tasks import TASKS
from training.tasks.table import TRAINING_TASKS


def subcommands(parser) -> list[str]:
    return list(next(a for a in parser._actions if a.dest == "task").choices)


def test_every_task_has_one_entry_holding_the_library_task():
    assert list(TRAINING_TASKS) == list(TASKS)
    for name, entry in TRAINING_TASKS.items():
        assert entry.task is TASKS[name] and entry.name == name
        assert entry.card.pipeline_class == TASKS[name].pipeline.__name__


def test_the_commands_list_the_tasks_of_the_table():
    from training import calibrate, evaluate, publish, ship

    assert subcommands(evaluate.build_parser()) == list(TRAINING_TASKS)
    assert subcommands(publish.build_parser()) == [*TRAINING_TASKS, "space"]
    assert ship.build_parser().parse_args(["lm", "--run", "r", "--to", "t", "--test-data", "f"]).task == "lm"
    assert calibrate.CALIBRATED == ["sentiment", "translation"]  # the next-word model has no calibration
    with pytest.raises(SystemExit):
        calibrate.build_parser().parse_args(["lm", "--model", "m", "--data", "d", "--train-data", "t"])


def test_only_a_task_that_decodes_takes_decoding_options():
    from training import evaluate

    parser = evaluate.build_parser()
    args = parser.parse_args(["translation", "--model", "m", "--data", "d", "--beam", "4", "--alpha", "0.6"])
    assert (args.beam, args.alpha) == (4, 0.6)
    with pytest.raises(SystemExit):
        parser.parse_args(["sentiment", "--model", "m", "--data", "d", "--beam", "4"])


def test_calibration_reads_the_columns_of_its_task(tmp_path):
    from training.calibrate import read_texts

    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text("\n".join(json.dumps({"sentence": s, "label": y}) for s, y in (("Great.", 1), ("Dull.", 0))))
    assert read_texts(str(reviews), "sentiment") == (["Great.", "Dull."], [1, 0])  # SST-2's `sentence` as `text`
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"de": "Ein Hund.", "en": "A dog."}))
    assert read_texts(str(pairs), "translation") == (["Ein Hund."], None)


def test_only_a_classifier_gets_a_temperature(tmp_path):
    from training.calibrate import build_parser, temperature_files
    from training.engine.data import DataError

    argv = ["--model", "m", "--data", "a.jsonl", "--train-data", "t", "--temperature-data", "a.jsonl"]
    assert temperature_files(build_parser().parse_args(["sentiment", *argv])) == ["a.jsonl"]
    with pytest.raises(DataError, match="a translation model has no temperature"):
        temperature_files(build_parser().parse_args(["translation", *argv]))


@pytest.mark.parametrize(
    ("task", "config", "words"),
    [
        ("sentiment", {"n_layers": 2, "d_model": 64, "n_heads": 4, "pooling": "cls"}, "encoder classifier"),
        ("translation", {"n_encoder_layers": 3, "n_decoder_layers": 3, "d_model": 64, "n_heads": 4}, "encoder-decoder"),
        ("lm", {"n_layers": 6, "d_model": 64, "n_heads": 6, "n_kv_heads": 2}, "decoder-only"),
    ],
)
def test_the_model_card_describes_the_architecture_of_its_task(task, config, words):
    from training.release.model_card import model_card

    text = model_card(task, "alice/demo", config, 1000, None).content
    assert f"parameter {'transformer ' if task == 'sentiment' else ''}{words}" in text
    assert TRAINING_TASKS[task].card.pipeline_tag in text
