"""Every generated token attributed (inseq's headline view): for a continuation, one explanation a new token, each
over the tokens read before it (the prompt, then the tokens generated earlier), with its faithfulness by row where
asked. Row s is `pipe.explain(prompt, method, step=s, result=result)`'s scores followed by its prefix_scores: the same
function, on the same continuation (no decoding again), or, for a method with a batched form (gradient x input), every
row from one forward and one backward of a batch (the same numbers, tests/pipelines/test_explain_steps.py)."""

import time
from dataclasses import dataclass

import numpy as np
import torch

from pipelines.explanations import registry
from pipelines.explanations.faithfulness import measure
from pipelines.explanations.run import explain_next_token, next_token_explanation
from pipelines.hosting.microbatch import pause_point


@dataclass
class StepExplanations:
    """One row a generated token: scores[s] over tokens[: n_prompt + s], what the model had read when it chose
    outputs[s]."""

    method: str
    signed: bool
    tokens: list[str]  # the prompt's tokens, then the generated ones but the last (which no step read)
    outputs: list[str]  # the generated tokens, one a row
    n_prompt: int
    scores: list[np.ndarray]  # [s]: (n_prompt + s,) the attribution of row s
    probabilities: list[float]  # [s]: p(outputs[s]) where it was chosen
    faithfulness: list[tuple[float, float, float, float]] | None  # [s]: (comprehensiveness, sufficiency, and both
    # for random rankings of the same tokens), over the prompt's own tokens; None when not measured
    seconds: float

    def matrix(self) -> np.ndarray:
        """(S, n_prompt + S - 1) the rows side by side, 0 where a row's token had not been read yet (read())."""
        out = np.zeros((len(self.scores), len(self.tokens)), dtype=np.float32)
        for s, row in enumerate(self.scores):
            out[s, : len(row)] = row
        return out

    def read(self) -> np.ndarray:
        """(S, n_prompt + S - 1) bool: whether row s had read token t."""
        return np.arange(len(self.tokens))[None, :] < (self.n_prompt + np.arange(len(self.scores)))[:, None]


def explain_steps(pipe, result, method=None, faithfulness: bool = False, progress=None) -> StepExplanations:
    """The StepExplanations of every new token of `result` (a LanguageModelResult), by `method` (None: the model's
    default); faithfulness: measure each row too (a few passes a row); progress(done, total) a row at a time; a pause
    point before each row (pipelines.hosting.microbatch)."""
    n = len(result.generated_ids)
    if n == 0:
        raise ValueError("the continuation has no new tokens to explain")
    start = time.perf_counter()
    rows, probs, faith, name, signed = [], [], [] if faithfulness else None, None, False
    explained = _batched(pipe, result, method)
    for s in range(n):
        pause_point()  # between rows, as a background call: the model's waiting calls and decoding steps run here
        expl = explained[s] if explained else explain_next_token(pipe, result.prompt, method, step=s, result=result)
        rows.append(np.concatenate([np.asarray(expl.scores), np.asarray(expl.prefix_scores)]).astype(np.float32))
        probs.append(expl.probability)
        name, signed = expl.method, expl.signed
        if faith is not None:
            r = measure(pipe, expl)
            faith.append((r.method.comprehensiveness, r.method.sufficiency, r.random.comprehensiveness,
                          r.random.sufficiency))  # fmt: skip
        if progress is not None:
            progress(s + 1, n)
    a = pipe.adapter
    tokens = list(result.tokens) + [a.token_text(i) for i in result.generated_ids[:-1]]
    outputs = [a.token_text(i) for i in result.generated_ids]
    return StepExplanations(name, signed, tokens, outputs, len(result.tokens), rows, probs, faith,
                            time.perf_counter() - start)  # fmt: skip


def _batched(pipe, result, method) -> list | None:
    """Every step's Explanation from the method's batched form (Method.next_tokens: all the steps of one pass),
    or None where it has none."""
    m = registry.get("lm", method or pipe.default_explanation["method"])
    a, Tp = pipe.adapter, len(result.tokens)
    ids = torch.tensor([result.sequence_ids], device=a.device)  # (1, Tp + S - 1)
    positions = [Tp + s - 1 for s in range(len(result.generated_ids))]  # step s read ids[: Tp + s]
    start = time.perf_counter()
    attrs = m.next_tokens(a, ids, positions, list(result.generated_ids))
    if attrs is None:
        return None
    seconds = (time.perf_counter() - start) / len(attrs)
    return [
        next_token_explanation(pipe, m, result, s, t, attr, seconds, probability=step.probability)
        for s, (t, attr, step) in enumerate(zip(result.generated_ids, attrs, result.steps))
    ]
