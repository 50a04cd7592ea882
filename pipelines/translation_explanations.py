"""TranslationPipeline.explain: which source tokens drove each produced token, how well each cross-attention
head agrees, contrastive steps, and faithfulness (ERASER over the source tokens of every step)."""

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .batching import pad
from .common import TokenSpan
from .explanations import default_method
from .faithfulness import Faithfulness, mean_faithfulness, random_rankings, ranking, ranking_batch, score_batch
from .translation_attribution import TRANSLATION_METHODS, head_agreement, step_attributions


@dataclass
class TranslationExplanation:
    source_tokens: list[TokenSpan]  # German subwords, the last one '</s>' (as in TranslationResult)
    target_tokens: list[str]  # produced English subwords, one per step
    method: str  # one of TRANSLATION_METHODS
    scores: np.ndarray  # (T_target, T_source): attribution of step t's log-probability to each source token
    prefix_scores: np.ndarray  # (T_target, T_target): to <s> and the earlier outputs (column j = input j)
    head_agreement: np.ndarray  # (L, H) mean rank correlation of each cross-attention head with |scores|
    translation: str
    src_ids: list[int]
    produced: list[int]  # the produced token ids, one per step
    contrast: dict[int, str] = field(default_factory=dict)  # step (0-based) -> the alternative explained against
    steps: int | None = None  # integrated gradients: interpolation steps
    deltas: np.ndarray | None = None  # integrated gradients: (T_target,) convergence delta per step
    seconds: float = 0.0


def _alternatives(pipe, logp: torch.Tensor, produced: list[int], contrast: dict | None, k: int = 5) -> list[int]:
    """alts[t]: the id of the top-k alternative named for step t, -1 for a plain step."""
    alts = [-1] * len(produced)
    for step, text in (contrast or {}).items():
        t = int(step)
        if not 0 <= t < len(produced):
            raise ValueError(f"step {t} is outside the translation's {len(produced)} steps (0-based)")
        top = [int(i) for i in logp[t].topk(k).indices]
        match = [i for i in top if pipe.token_text(i) == text and i != produced[t]]
        if not match:
            raise ValueError(f"{text!r} is not one of the top-{k} alternatives at step {t}")
        alts[t] = match[0]
    return alts


def explain_translation(pipe, text: str, method: str | None = None, contrast: dict | None = None, result=None):
    """Translate `text` (or reuse `result`, its TranslationResult) and attribute every produced token."""
    method = method or default_method("translation")["method"]
    if method not in TRANSLATION_METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(TRANSLATION_METHODS)}")
    result = result or pipe(text)
    a = pipe.adapter
    src_ids = [t.id for t in result.source_tokens]
    produced = result.target_ids
    src, tgt_in = torch.tensor([src_ids]), torch.tensor([[a.bos_id] + produced[:-1]])
    with torch.no_grad():
        logp = a.forward(src, tgt_in).logits[0].log_softmax(-1)  # (Tt, V)
    alts = _alternatives(pipe, logp, produced, contrast)
    start = time.perf_counter()
    cross = [a.float().numpy() for a in result.cross_attentions]  # per layer (H, Tt, Ts)
    if method == "attention":
        source = np.mean([a.mean(0) for a in cross], axis=0).astype(np.float32)  # (Tt, Ts), every layer and head
        attr = None
        prefix = np.zeros((len(produced), len(produced)), dtype=np.float32)
    else:
        attr = step_attributions(pipe.adapter, src, tgt_in, produced, alts, method)
        source, prefix = attr.source, attr.prefix
    return TranslationExplanation(
        source_tokens=result.source_tokens,
        target_tokens=result.target_tokens,
        method=method,
        scores=source,
        prefix_scores=prefix,
        head_agreement=head_agreement(source, cross),
        translation=result.translation,
        src_ids=src_ids,
        produced=produced,
        contrast={int(t): pipe.token_text(a) for t, a in enumerate(alts) if a >= 0},
        steps=attr.steps if attr else None,
        deltas=attr.deltas if attr else None,
        seconds=time.perf_counter() - start,
    )


@dataclass
class TranslationFaithfulness:
    method: Faithfulness  # mean over steps of the ranking of source tokens by the step's scores
    random: Faithfulness  # mean over steps of random rankings
    per_step: np.ndarray  # (Tt,) comprehensiveness - sufficiency of the method at each step
    seconds: float


def step_probs(pipe, queries: list[tuple[list[int], int, int]], tgt_in: list[int], batch_size: int = 128):
    """(N,) p(token at step t | tgt_in[:t+1], source) for (source ids, t, token) queries; an empty source
    reads as one padding token. The decoder is causal, so every row can carry the whole prefix."""
    a = pipe.adapter
    out = np.zeros(len(queries))
    with torch.no_grad():
        for s in range(0, len(queries), batch_size):
            part = queries[s : s + batch_size]
            src = pad([q[0] or [a.pad_id] for q in part], a.pad_id)
            tgt = a.embed_target(torch.tensor([tgt_in]).expand(len(part), -1))
            pos, tok = torch.tensor([q[1] for q in part]), torch.tensor([q[2] for q in part])
            logp = a.step_log_probs(a.embed_source(src), src, tgt, pos)  # (B, V)
            out[s : s + batch_size] = logp.gather(1, tok[:, None])[:, 0].exp().double().numpy()
    return out


def compare_rankings(pipe, src_ids: list[int], produced: list[int], score_mats: list[np.ndarray], seed: int = 0):
    """Faithfulness over the source tokens, step by step (teacher-forced on the produced prefix), of several
    (Tt, Ts) score matrices at once, and of random rankings, in one batched pass.
    Returns ([per matrix: mean over steps], random mean over steps, [per matrix: (Tt,) per-step score])."""
    tgt_in = [pipe.adapter.bos_id] + produced[:-1]
    n = len(score_mats)
    orders = [
        [*(ranking(m[t]) for m in score_mats), *random_rankings(len(src_ids), seed=seed + t)]
        for t in range(len(produced))
    ]
    batches = [ranking_batch(src_ids, o) for o in orders]  # one per step
    probs = step_probs(pipe, [(src, t, produced[t]) for t, b in enumerate(batches) for src in b], tgt_in)
    per_method: list[list[Faithfulness]] = [[] for _ in range(n)]
    rand, at = [], 0
    for t, batch in enumerate(batches):
        res = score_batch(probs[at : at + len(batch)], len(orders[t]))
        at += len(batch)
        for k in range(n):
            per_method[k].append(res[k])
        rand.append(mean_faithfulness(res[n:]))
    per_step = [np.array([r.score for r in rs], dtype=np.float32) for rs in per_method]
    return [mean_faithfulness(rs) for rs in per_method], mean_faithfulness(rand), per_step


def translation_faithfulness(pipe, expl: TranslationExplanation, seed: int = 0) -> TranslationFaithfulness:
    """ERASER comprehensiveness and sufficiency over the source tokens, step by step, averaged over steps;
    the same for random rankings."""
    start = time.perf_counter()
    (ours,), rand, (per_step,) = compare_rankings(pipe, expl.src_ids, expl.produced, [expl.scores], seed)
    return TranslationFaithfulness(ours, rand, per_step, time.perf_counter() - start)
