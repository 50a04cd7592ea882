"""What every task's pipeline is built from: its model reached only through the adapter (AdapterBacked), the runs
it declares (@runs_model: a server runs each as a batch of its own, pipelines.hosting.serving), and the one runner
the served path calls (BatchRunner)."""

from collections.abc import Callable

from pipelines.contracts import Adapter


class AdapterBacked:
    """A pipeline that reaches its model only through `self.adapter` (pipelines/models/adapter.py, hf_adapter.py)."""

    adapter: Adapter  # each task's pipeline narrows it to its kind of adapter (pipelines/contracts.py)

    @property
    def model(self):
        """The adapter's model (ours: a TransformerClassifier or Seq2SeqTransformer)."""
        return self.adapter.model

    @property
    def tokenizer(self):
        return self.adapter.tokenizer

    @property
    def head_layers(self) -> dict[str, int]:
        """Layers per kind of attention (pipelines.kinds): {"self": 6}; {"encoder": 3, "decoder": 3, "cross": 3}."""
        return self.adapter.head_layers

    @property
    def n_layers(self) -> int:
        """The deepest kind's layers (a translator: the deeper of its encoder and decoder; the app's layer control
        covers every kind)."""
        return max(self.head_layers.values())

    @property
    def n_heads(self) -> int:
        return self.adapter.n_heads


def runs_model(method=None, *, background: bool = False):
    """Declares a pipeline method that runs the model: a server runs each call as a batch of its own on the
    model's one runner (pipelines.hosting.serving, whose served classes write out each such method; the contract
    test holds them to this declaration), in the model's process where it has one. `@runs_model(background=True)`:
    a long analysis the page starts after a response and no click waits on (the head table, faithfulness, exact
    patching, switching each head off); the server runs every other waiting call first, and the calls that come while
    it runs at its pause points: its loop calls pipelines.hosting.microbatch.pause_point() between its passes (an
    analysis over a set of inputs: once between inputs)."""

    def declare(fn):
        fn.runs_model, fn.runs_in_background = True, background
        return fn

    return declare if method is None else declare(method)


def declared_runs_model(cls, name: str) -> bool:
    """Whether `cls.name` is a method declared with @runs_model."""
    return bool(getattr(getattr(cls, name, None), "runs_model", False))


def in_background(method: Callable) -> bool:
    """Whether a pipeline method is declared @runs_model(background=True)."""
    return bool(getattr(method, "runs_in_background", False))


class BatchRunner:
    """The one entry the served path runs a pipeline by (pipelines.hosting.serving), in this process or a model
    process: one runner per model, so that the batcher never runs two batches of one model at once."""

    def run_batch(self, items: list, pipeline_method: Callable, one_by_one: bool = False, **options) -> list:
        """pipeline_method(self, items, **options): a batch method (SentimentPipeline.analyze_inputs) takes every
        item at once. one_by_one: pipeline_method(self, *args, **kwargs) for each item, an (args, kwargs) pair, its
        error returned in place of its result."""
        if not one_by_one:
            return pipeline_method(self, items, **options)
        out = []
        for args, kwargs in items:
            try:
                out.append(pipeline_method(self, *args, **kwargs))
            except Exception as e:  # this caller gets the error; the others their results
                out.append(e)
        return out
