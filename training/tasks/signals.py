"""The typicality signals (pipelines/trust/domain.py) each task's out-of-domain statistics are fitted on, as
`python -m training.calibrate` measures them on held-out texts: a classifier reads its tokens' `words` and
`piece_length`; a translator its tokens' `words` and the `output_logprob` of its translation (a German model's piece
lengths were not measured against other languages, so it does not fit them). training/tasks/table.py names each task's.
"""


def review_signals(pipe, domain, texts: list[str], batch_size: int) -> dict[str, list[float]]:
    """{signal: its value for each text} of a classifier's inputs: every token signal."""
    return by_signal([domain.token_signals(ids) for ids in pipe.encode_many(texts)])


def sentence_signals(pipe, domain, texts: list[str], batch_size: int) -> dict[str, list[float]]:
    """{signal: its value for each text} of a translator's inputs: the source tokens' `words` and the log-probability
    of the translation."""
    pipe.domain = None
    ids, _, _ = pipe.encode_source(texts)
    eos = pipe.model.config.eos_id
    return {
        "words": [domain.token_signals([i for i in s if i != eos])["words"] for s in ids],
        "output_logprob": [t[1] for t in pipe.translate_scored(texts, batch_size=batch_size)],
    }


def by_signal(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    """Each signal's values over the texts, from each text's signals."""
    return {name: [row[name] for row in rows] for name in rows[0]} if rows else {}
