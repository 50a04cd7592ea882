"""The adapter contract (pipelines/contracts.py) holds for every adapter: ours (classifier, translator, language
model) and `transformers`' classifier and translator. Each has every member, and every method takes the parameters
the contract names (a renamed or missing parameter fails here, not in a pipeline at run time)."""

import inspect

import pytest
import torch

from pipelines import LanguageModelPipeline, SentimentPipeline, TranslationPipeline
from pipelines.contracts import Adapter, CausalLMAdapter, ClassifierAdapter, Seq2SeqAdapter

pytest.importorskip("transformers")


def members(protocol) -> dict[str, object]:
    """The contract's members: name -> the protocol's function (None for a plain attribute)."""
    names = {n for cls in protocol.__mro__ if cls.__module__ == "pipelines.contracts" for n in vars(cls)}
    names |= {n for cls in protocol.__mro__ if cls.__module__ == "pipelines.contracts" for n in cls.__annotations__}
    return {n: getattr(protocol, n, None) for n in names if not n.startswith("_")}


def check(adapter, protocol) -> None:
    assert isinstance(adapter, Adapter) and isinstance(adapter, protocol)
    for name, spec in members(protocol).items():
        assert hasattr(adapter, name), f"{type(adapter).__name__} lacks {name}"
        if inspect.isfunction(spec):
            want = list(inspect.signature(spec).parameters)[1:]
            got = list(inspect.signature(getattr(adapter, name)).parameters)
            assert got[: len(want)] == want, f"{type(adapter).__name__}.{name}{tuple(got)}: the contract says {want}"


@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
    from tiny_hf_models import make_bert_dir, make_marian_dir

    root = tmp_path_factory.mktemp("hf-contract")
    return make_bert_dir(root / "bert"), make_marian_dir(root / "marian")


def test_our_classifier_and_translator(sentiment, translation):
    check(sentiment.adapter, ClassifierAdapter)
    check(translation.adapter, Seq2SeqAdapter)
    assert not isinstance(translation.adapter, ClassifierAdapter)


def test_our_language_model(lm_dir):
    check(LanguageModelPipeline.from_pretrained(str(lm_dir)).adapter, CausalLMAdapter)


def test_transformers_classifier_and_translator(hf_dirs):
    bert, marian = hf_dirs
    check(SentimentPipeline.from_pretrained(str(bert)).adapter, ClassifierAdapter)
    check(TranslationPipeline.from_pretrained(str(marian)).adapter, Seq2SeqAdapter)


def test_a_missing_member_breaks_the_contract(sentiment):
    class Partial:
        kind = "ours"

    assert not isinstance(Partial(), ClassifierAdapter)
    renamed = type("Renamed", (type(sentiment.adapter),), {"forward": lambda self, x, weights=False, mask=None: x})
    adapter = renamed.__new__(renamed)
    adapter.__dict__.update(sentiment.adapter.__dict__)
    with pytest.raises(AssertionError, match="forward"):
        check(adapter, ClassifierAdapter)


def parameters(fn) -> list[tuple]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_methods_that_run_the_model_are_declared_where_they_are_defined(sentiment):
    """@runs_model on the pipelines' methods (not a list in serving.py): each task's served class (Task.served)
    writes out every one of them, and the run itself, with the pipeline's own parameters, and runs them through the
    batcher; what runs no model (a text search) is read from the pipeline here."""
    from pipelines.contracts import Pipeline
    from pipelines.hosting.microbatch import MicroBatcher
    from pipelines.pipeline import declared_runs_model, in_background
    from pipelines.tasks import SENTIMENT, TASKS

    for cls, names in (
        (SentimentPipeline, {"explain", "faithfulness", "head_table"}),
        (TranslationPipeline, {"explain", "faithfulness", "head_table", "score"}),
        (LanguageModelPipeline, {"explain", "faithfulness", "head_table"}),
    ):
        declared = {n for n in dir(cls) if declared_runs_model(cls, n)}
        assert names <= declared, f"{cls.__name__}: {names - declared} not declared @runs_model"
    for task in TASKS.values():
        runs = {n for n in dir(task.pipeline) if declared_runs_model(task.pipeline, n)} | {"__call__"}
        written = {n for n, f in vars(task.served).items() if inspect.isfunction(f) and not n.startswith("_")}
        for name in sorted(runs | written):
            served, own = getattr(task.served, name, None), getattr(task.pipeline, name)
            assert served is not None and "__getattr__" not in vars(task.served), f"{task.served.__name__}.{name}"
            assert parameters(served) == parameters(own), f"{task.served.__name__}.{name}: not the pipeline's"
    batcher = MicroBatcher(4)
    served = SENTIMENT.served(sentiment, batcher)
    assert isinstance(served, Pipeline) and isinstance(sentiment, Pipeline)
    assert served.weak_spots("not bad at all") == sentiment.weak_spots("not bad at all")
    assert batcher.batches_run == 0
    row = served.internals("Good film.").head("self", 0, 0, 1).weights
    torch.testing.assert_close(row, sentiment.internals("Good film.").head("self", 0, 0, 1).weights)
    assert batcher.batches_run == 1
    long_analyses = {  # what a page waits on goes before them
        SentimentPipeline: {"faithfulness", "head_table", "head_table_over", "patch", "switch_off"},
        TranslationPipeline: {"faithfulness", "head_table", "head_table_over", "patch", "switch_off"},
        LanguageModelPipeline: {
            "faithfulness",
            "head_table",
            "head_table_over",
            "patch",
            "switch_off",
            "explain_steps",
        },
    }
    for cls, expected in long_analyses.items():
        assert {n for n in dir(cls) if in_background(getattr(cls, n))} == expected, cls.__name__


def test_a_new_operation_is_served_without_a_line_of_its_own():
    """A method a pipeline declares @runs_model is served (alone, with its own parameters) by the served class that
    names the pipeline: one method on the pipeline, none on the served class."""
    from pipelines.hosting.serving import ServedPipeline
    from pipelines.pipeline import runs_model

    class Pipe(SentimentPipeline):
        @runs_model
        def new_operation(self, text: str, n: int = 1):
            return text * n

    class Served(ServedPipeline, pipeline=Pipe):
        pass

    assert "new_operation" in vars(Served) and parameters(Served.new_operation) == parameters(Pipe.new_operation)
    assert Served.new_operation.__wrapped__ is Pipe.new_operation and Served.logit_lens.__wrapped__ is Pipe.logit_lens
