"""explain(pipe, ...) for every task: the registered method's scores, wrapped in one Explanation.

A translation is explained on a TranslationResult (the decoding on screen, reused: no new decoding); the
agreement of every cross-attention head with the scores uses the one rank correlation (head_stats.agreement).
"""

import functools
import inspect
import time

import numpy as np
import torch

from pipelines.attention.head_stats import agreement
from pipelines.explanations import registry
from pipelines.explanations.result import Explanation
from pipelines.explanations.words import word_ids


def _with_progress(fn, *args, progress=None):
    """fn(*args, progress=progress) for a method that reports its progress, fn(*args) for one that does not
    (a registered method may leave the parameter out)."""
    if progress is not None and "progress" in inspect.signature(fn).parameters:
        return fn(*args, progress=progress)
    return fn(*args)


def explain_review(
    pipe, text: str, method: str | None = None, target: str | None = None, progress=None, contrast: str | None = None
) -> Explanation:
    """Attribution of each token read toward `target` (default: the predicted label) by `method`;
    progress(done, total) as a slow method (occlusion) goes. contrast: the other label (why target rather than it):
    with two labels every method's objective, the log-odds log p(t) / (1 - p(t)), is already log p(t) - log p(c),
    so the scores are the same and the explanation names the contrast (contrast_not_applied for a method that reads
    attention, which is the same whatever the alternative); a model with more labels refuses one (ValueError)."""
    m = registry.get("sentiment", method or pipe.default_explanation["method"])
    ids, toks, _ = pipe.encode(text)
    if not ids:
        raise ValueError("the text has no tokens")
    a = pipe.adapter
    x = torch.tensor([ids], device=a.device)  # (1, T)
    with torch.no_grad():
        probs = pipe.calibrated(a.forward(x).logits, [len(ids)])[0]  # (C,) the prediction's probability
    t = int(probs.argmax()) if target is None else pipe.labels.index(target)
    against = _review_contrast(pipe.labels, t, contrast)
    applied = against if m.contrastive else None
    words = word_ids(toks)
    start = time.perf_counter()
    attr = _with_progress(m.review, a, x, t, words, progress=progress)
    scores = np.array(attr.scores, dtype=np.float32)
    scores[: a.n_prefix] = 0.0  # special tokens ([CLS], [SEP]) are not the review's words
    scores[len(ids) - a.n_suffix :] = 0.0
    return Explanation(
        task="sentiment",
        method=m.name,
        signed=m.signed,
        tokens=toks,
        ids=ids,
        outputs=[pipe.labels[t]],
        output_ids=[t],
        scores=scores,
        seconds=time.perf_counter() - start,
        n_prefix=a.n_prefix,
        n_suffix=a.n_suffix,
        probability=float(probs[t]),
        words=words,
        steps=attr.steps,
        delta=attr.delta,
        contrast={} if applied is None else {0: pipe.labels[applied]},
        contrast_not_applied={} if against is None or applied is not None else {0: pipe.labels[against]},
        contrast_id=applied,
    )


def _review_contrast(labels: list[str], target: int, contrast: str | None) -> int | None:
    """The contrast's label index (None for none): the label other than the target, of a two-label model."""
    if contrast is None:
        return None
    if contrast not in labels:
        raise ValueError(f"the contrast {contrast!r} is not one of the labels ({', '.join(labels)})")
    c = labels.index(contrast)
    if c == target:
        raise ValueError("the contrast is the label explained: name the other one")
    if len(labels) != 2:
        raise ValueError("a contrast needs a two-label model: the methods' objective is one label's log-odds")
    return c


def _alternatives(pipe, src, tgt_in, produced: list[int], contrast: dict | None, k: int = 5) -> list[int]:
    """alts[t]: the id of the top-k alternative named for step t, -1 for a plain step. The teacher-forced pass
    that ranks them runs only when a contrast is asked for (every translation's default explanation asks none)."""
    alts = [-1] * len(produced)
    if not contrast:
        return alts
    with torch.no_grad():
        logp = pipe.adapter.forward(src, tgt_in).logits[0].log_softmax(-1)  # (Tt, V)
    for step, text in contrast.items():
        t = int(step)
        if not 0 <= t < len(produced):
            raise ValueError(f"step {t} is outside the translation's {len(produced)} steps (0-based)")
        top = [int(i) for i in logp[t].topk(k).indices]
        match = [i for i in top if pipe.token_text(i) == text and i != produced[t]]
        if not match:
            raise ValueError(f"{text!r} is not one of the top-{k} alternatives at step {t}")
        alts[t] = match[0]
    return alts


def head_agreement(scores: np.ndarray, cross: list[np.ndarray]) -> np.ndarray:
    """(L, H): per decoder layer and head, the mean over steps of the rank correlation (Spearman, ties at their
    average rank) between the head's cross-attention and |scores| (Tt, Ts); NaN where it is undefined."""
    return np.stack([agreement(attn, scores) for attn in cross]).astype(np.float32)


def explain_translation(
    pipe, text: str, method: str | None = None, contrast: dict | None = None, result=None, progress=None
):
    """Attribute every produced token of `result` (a TranslationResult of `text`; None: translate it now);
    progress(steps done, steps) as a gradient method goes."""
    m = registry.get("translation", method)
    result = result or pipe(text)
    a = pipe.adapter
    src_ids = [t.id for t in result.source_tokens]
    produced = result.target_ids
    src = torch.tensor([src_ids], device=a.device)  # (1, Ts)
    tgt_in = torch.tensor([[a.bos_id] + produced[:-1]], device=a.device)  # (1, Tt)
    asked = _alternatives(pipe, src, tgt_in, produced, contrast)
    alts = asked if m.contrastive else [-1] * len(asked)  # attention is the same whatever the alternative
    start = time.perf_counter()
    cross = [c.float().numpy() for c in result.cross_attentions]  # per layer (H, Tt, Ts)
    attr = _with_progress(m.steps, a, src, tgt_in, produced, alts, cross, progress=progress)
    return Explanation(
        task="translation",
        method=m.name,
        signed=m.signed,
        tokens=result.source_tokens,
        ids=src_ids,
        outputs=list(result.target_tokens),
        output_ids=list(produced),
        scores=attr.scores,
        seconds=time.perf_counter() - start,
        prefix_scores=attr.prefix,
        head_agreement=head_agreement(attr.scores, cross),
        translation=result.translation,
        contrast={int(t): pipe.token_text(alt) for t, alt in enumerate(alts) if alt >= 0},
        contrast_not_applied={int(t): pipe.token_text(a) for t, (a, b) in enumerate(zip(asked, alts)) if a != b},
        steps=attr.steps,
        deltas=attr.deltas,
    )


def _next_token_target(result, step: int, token, besides: int | None = None) -> int:
    """The id explained at `step` of a LanguageModelResult: the token chosen (token None), an id, or the text of one
    of that step's top-k tokens (as written, else without surrounding spaces; besides: an id a text that several
    top tokens share stands for only where no other has it, as a contrast is not its target)."""
    if not 0 <= step < len(result.steps):
        raise ValueError(f"step {step} is outside the {len(result.steps)} generated steps (0-based)")
    chosen = result.steps[step]
    if token is None:
        return chosen.token_id
    if isinstance(token, int):
        return token
    match = [i for (text, _), i in zip(chosen.top_k, chosen.top_ids) if text == token]
    match = match or [i for (text, _), i in zip(chosen.top_k, chosen.top_ids) if text.strip() == str(token).strip()]
    match = [i for i in match if i != besides] or match
    if not match:
        raise ValueError(f"{token!r} is not one of the top-{len(chosen.top_k)} tokens at step {step}")
    return match[0]


def explain_next_token(
    pipe, prompt: str, method=None, step: int = 0, token=None, result=None, progress=None, contrast=None
):
    """Attribute the probability of one next token of a language model: at `step` of `result` (a LanguageModelResult
    of `prompt`; None: generate step + 1 tokens greedily now), the token chosen there, or `token` (an id, or the text
    of one of that step's top-k); against `contrast` (the same kinds) where given: log p(token) - log p(contrast),
    for a contrastive method (the gradients, occlusion; attention reads the same whatever the alternative, and says
    so in contrast_not_applied). Scores over the prompt's tokens (its special tokens at 0) and, as prefix_scores,
    over the tokens generated before the step; progress(done, total) as a slow method goes."""
    m = registry.get("lm", method or pipe.default_explanation["method"])
    result = result or pipe(prompt, max_new_tokens=step + 1)
    target = _next_token_target(result, step, token)
    against = None if contrast is None else _next_token_target(result, step, contrast, besides=target)
    if against == target:
        raise ValueError("the contrast is the token explained: name another of the step's top tokens")
    applied = against if m.contrastive else None
    extra = {} if applied is None else {"contrast": applied}
    a = pipe.adapter
    x = torch.tensor([result.prompt_ids + result.generated_ids[:step]], device=a.device)  # (1, T)
    start = time.perf_counter()
    attr = _with_progress(functools.partial(m.next_token, **extra), a, x, target, step_words(result, step),
                          progress=progress)  # fmt: skip
    return next_token_explanation(pipe, m, result, step, target, attr, time.perf_counter() - start, against, applied)


def step_words(result, step: int) -> np.ndarray:
    """The word of each token read at `step`: the prompt's words, then each generated token a word of its own."""
    words = word_ids(result.tokens)
    return np.concatenate([words, int(words.max()) + 1 + np.arange(step)]) if step else words


def next_token_explanation(pipe, m, result, step, target, attr, seconds, against=None, applied=None, probability=None):
    """The Explanation of `attr` (method m's scores over what the model read at `step` of `result`, toward
    `target`; against/applied: the contrast asked for and the one the method applied); probability: p(target)
    there, where known (else one forward computes it)."""
    a, Tp, words = pipe.adapter, len(result.tokens), step_words(result, step)
    context = result.prompt_ids + result.generated_ids[:step]
    scores = np.array(attr.scores, dtype=np.float32)  # (T,)
    prompt_scores = scores[:Tp].copy()
    prompt_scores[: result.n_prefix] = prompt_scores[Tp - result.n_suffix :] = 0.0  # <s>, the template: not the prompt
    if probability is None:
        with torch.no_grad():
            x = torch.tensor([context], device=a.device)  # (1, T)
            probability = float(a.next_log_probs(x, [len(context)])[0, target].exp())
    return Explanation(
        task="lm",
        method=m.name,
        signed=m.signed,
        tokens=result.tokens,
        ids=result.prompt_ids,
        outputs=[a.token_text(target)],
        output_ids=[target],
        scores=prompt_scores,
        seconds=seconds,
        n_prefix=result.n_prefix,
        n_suffix=result.n_suffix,
        probability=probability,
        words=words[:Tp],
        prefix_scores=scores[Tp:],
        prefix_ids=result.generated_ids[:step],
        at_step=step,
        contrast={} if applied is None else {step: a.token_text(applied)},
        contrast_not_applied={} if against is None or applied is not None else {step: a.token_text(against)},
        contrast_id=applied,
        steps=attr.steps,
        delta=attr.delta,
    )
