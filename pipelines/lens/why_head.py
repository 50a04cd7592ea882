"""Why a head looks there, per family: the glue between a pipeline (its tokenizing, its model's stacks) and the maths
of pipelines.lens.score_parts, pipelines.lens.composition and pipelines.attention.over_set. Each pipeline's methods
(score_attribution, composition, copying_scores, copied_tokens, head_table_over) call one function here."""


def score_attribution(pipe, text: str, layer: int, head: int, query: int, key: int, step=None, kind: str = "self"):
    raise NotImplementedError


def composition(pipe, kind: str = "k", attention: str | None = None):
    raise NotImplementedError


def copying_scores(pipe, attention: str | None = None):
    raise NotImplementedError


def copied_tokens(pipe, layer: int, head: int, n: int = 10, attention: str | None = None):
    raise NotImplementedError


def head_table_over(pipe, texts, progress=None, stop=None, name: str = ""):
    raise NotImplementedError
