"""Greedy and beam-search decoding for Seq2SeqTransformer, both on the key/value cache."""

from dataclasses import dataclass

import torch

from .encoder import EncoderOutput
from .head_mask import HeadMasks
from .seq2seq import Seq2SeqTransformer


@dataclass
class Hypothesis:
    """One output sequence of greedy_decode or beam_search."""

    tokens: list[int]  # generated ids, without BOS and EOS
    score: float  # sum of log-probabilities (EOS included when it was produced)
    finished: bool = True  # False when max_len was reached before EOS


def default_max_len(model: Seq2SeqTransformer, src_ids: torch.Tensor) -> int:
    """1.5x the longest source plus 10, within the model's position table."""
    return min(int(src_ids.size(1) * 1.5) + 10, model.config.max_len - 1)


def _strip(seq: list[int], eos_id: int) -> list[int]:
    return seq[: seq.index(eos_id)] if eos_id in seq else seq


def row_limits(model: Seq2SeqTransformer, src_ids: torch.Tensor) -> torch.Tensor:
    """(B,) each row's default_max_len from its own length: a padded batch then decodes each row exactly
    as a run on that row alone would."""
    real = (src_ids != model.config.pad_id).sum(1)  # (B,)
    return ((real * 3) // 2 + 10).clamp(max=model.config.max_len - 1)


@torch.no_grad()
def greedy_decode(
    model: Seq2SeqTransformer,
    src_ids: torch.Tensor,
    max_len: int | None = None,
    head_mask: HeadMasks | None = None,
    limits: torch.Tensor | None = None,
) -> list[Hypothesis]:
    """The most likely next token at every step, for each row of src_ids (B, Ts); head_mask switches heads off;
    row b stops after limits[b] tokens when limits (B,) is given."""
    c = model.config
    max_len = int(limits.max()) if limits is not None else max_len or default_max_len(model, src_ids)
    enc = model.encode(src_ids, head_mask=head_mask)
    B = src_ids.size(0)
    last = torch.full((B, 1), c.bos_id, dtype=torch.long, device=src_ids.device)
    done = torch.zeros(B, dtype=torch.bool, device=src_ids.device)
    scores = torch.zeros(B, device=src_ids.device)
    out, cache = [], None
    limits = torch.full((B,), max_len, device=src_ids.device) if limits is None else limits
    for i in range(max_len):
        step = model.decode(last, enc, cache=cache, use_cache=True, head_mask=head_mask)
        cache = step.cache
        logp = step.logits[:, -1].log_softmax(-1)  # (B, V)
        best = logp.argmax(-1)  # (B,)
        live = ~done & (i < limits)  # rows still decoding
        scores += torch.where(live, logp.gather(1, best[:, None])[:, 0], 0.0)
        best = best.masked_fill(~live, c.eos_id)
        out.append(best)
        done |= live & (best == c.eos_id)
        if not (~done & (i + 1 < limits)).any():
            break
        last = best[:, None]
    seqs = torch.stack(out, 1).tolist() if out else [[] for _ in range(B)]
    return [Hypothesis(_strip(s, c.eos_id), float(sc), bool(d)) for s, sc, d in zip(seqs, scores, done)]


def length_penalty(length: torch.Tensor, alpha: float) -> torch.Tensor:
    """GNMT length penalty ((5 + L) / 6) ** alpha; alpha = 0 ranks by raw log-probability."""
    return ((5.0 + length.float()) / 6.0) ** alpha


def _candidates(logits: torch.Tensor, finished: torch.Tensor, eos_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(log-probabilities, token ids), each (B, K, Kc), of the extensions worth ranking, from the next-token
    logits (B*K, V) of B rows of K beams. Within one beam the score of an extension only grows with the
    token's log-probability, so a row's K best extensions are among the K best tokens of each of its beams:
    K*K candidates, not K*V. A finished beam may only emit EOS, at no cost (its other candidates: -inf)."""
    B, K = finished.shape
    Kc = min(K, logits.size(-1))
    logp, tok = logits.log_softmax(-1).topk(Kc, dim=-1)  # (B*K, Kc) each
    logp, tok = logp.view(B, K, Kc), tok.view(B, K, Kc)
    stay = torch.full((1, 1, Kc), float("-inf"), device=logp.device)
    stay[..., 0] = 0.0
    return torch.where(finished[..., None], stay, logp), tok.masked_fill(finished[..., None], eos_id)


@torch.no_grad()
def beam_search(
    model: Seq2SeqTransformer,
    src_ids: torch.Tensor,
    beam_size: int = 4,
    alpha: float = 0.6,
    max_len: int | None = None,
    head_mask: HeadMasks | None = None,
    limits: torch.Tensor | None = None,
) -> list[Hypothesis]:
    """Batched beam search: the best hypothesis per row of src_ids (B, Ts), ranked by score / penalty.
    head_mask switches heads off (per-row masks follow their row into its beams). Finished beams keep their
    slot and score (they may only 'emit' EOS again), so every step compares finished and growing hypotheses
    by their length-normalised score. With limits (B,), row b stops after limits[b] steps (beams frozen)."""
    c = model.config
    K, dev = beam_size, src_ids.device
    max_len = int(limits.max()) if limits is not None else max_len or default_max_len(model, src_ids)
    B = src_ids.size(0)
    limits = torch.full((B,), max_len, device=dev) if limits is None else limits
    enc = model.encode(src_ids, head_mask=head_mask)
    beam_mask = head_mask.repeat_rows(K) if head_mask is not None else None  # (L, B*K, H) where per row
    enc = EncoderOutput(enc.memory.repeat_interleave(K, 0), enc.src_mask.repeat_interleave(K, 0))  # (B*K, ...)

    raw = torch.full((B, K), float("-inf"), device=dev)
    raw[:, 0] = 0.0  # only the first beam is live at the start, so the K beams do not repeat each other
    lengths = torch.zeros(B, K, dtype=torch.long, device=dev)
    finished = torch.zeros(B, K, dtype=torch.bool, device=dev)
    history = torch.empty(B, K, 0, dtype=torch.long, device=dev)
    last = torch.full((B * K, 1), c.bos_id, dtype=torch.long, device=dev)
    cache = None
    keep = torch.arange(K, device=dev).expand(B, K)  # a frozen row's beams stay where they are
    for i in range(max_len):
        step = model.decode(last, enc, cache=cache, use_cache=True, head_mask=beam_mask)
        logp, cand_tok = _candidates(step.logits[:, -1], finished, c.eos_id)  # (B, K, Kc) each
        Kc = logp.size(-1)
        cand_raw = raw[..., None] + logp  # (B, K, Kc)
        cand_len = (lengths + (~finished).long())[..., None]  # (B, K, 1)
        cand_norm = cand_raw / length_penalty(cand_len, alpha)
        top = cand_norm.view(B, K * Kc).topk(K, dim=-1).indices  # (B, K) into the row's candidates
        frozen = (i >= limits)[:, None]  # (B, 1) rows past their own limit
        beam = torch.where(frozen, keep, top // Kc)
        tok = torch.where(frozen, c.eos_id, cand_tok.view(B, K * Kc).gather(1, top))
        raw = torch.where(frozen, raw, cand_raw.view(B, K * Kc).gather(1, top))
        lengths = torch.where(frozen, lengths, cand_len[..., 0].gather(1, beam))  # the length of the beam extended
        finished = torch.where(frozen, finished, finished.gather(1, beam) | (tok == c.eos_id))
        history = torch.cat([history.gather(1, beam[..., None].expand(-1, -1, history.size(2))), tok[..., None]], 2)
        flat = (beam + torch.arange(B, device=dev)[:, None] * K).view(-1)  # (B*K,) rows to keep
        cache = step.cache.reorder(flat, cross=False)  # a row's beams share its source: cross K/V stay
        last = tok.view(B * K, 1)
        if (finished | (i + 1 >= limits)[:, None]).all():
            break
    norm = raw / length_penalty(lengths, alpha)
    best = norm.argmax(-1)  # (B,)
    seqs = history[torch.arange(B, device=dev), best].tolist()
    return [
        Hypothesis(_strip(s, c.eos_id), float(raw[b, best[b]]), bool(finished[b, best[b]])) for b, s in enumerate(seqs)
    ]


@dataclass
class LMStep:
    """One decoding step of a CausalLM: the token chosen and the distribution it was chosen from."""

    token: int
    logits: torch.Tensor  # (V,) the next-token logits before temperature
    attentions: list[torch.Tensor] | None = None  # per layer (H, 1, Tk): the new token's row, when need_weights


def next_token(logits: torch.Tensor, temperature: float = 0.0, top_p: float = 1.0, generator=None) -> int:
    """logits (V,) -> a token id: the most likely (temperature 0), or sampled from softmax(logits / temperature)
    restricted to the smallest set of most likely tokens whose probability reaches top_p (nucleus sampling)."""
    if temperature <= 0:
        return int(logits.argmax())
    probs = (logits.float() / temperature).softmax(-1)
    sorted_p, order = probs.sort(descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < top_p  # a token stays if the ones before it fall short of top_p
    sorted_p = sorted_p * keep
    pick = torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=generator)
    return int(order[pick])


@torch.no_grad()
def lm_steps(
    model,
    ids: list[int],
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    seed: int | None = None,
    need_weights: bool = False,
    head_mask=None,
    stop_ids: tuple[int, ...] | None = None,
):
    """Yield LMStep after LMStep of a CausalLM continuing `ids` (one prompt), on its key/value cache: greedy at
    temperature 0, else sampled with a torch.Generator seeded by `seed` (the same seed, the same continuation).
    Stops after max_new_tokens or at a token of stop_ids (the model's end of text by default; yielded too)."""
    device = next(model.parameters()).device
    stop_ids = (model.config.eos_id,) if stop_ids is None else stop_ids
    generator = torch.Generator().manual_seed(seed) if seed is not None else None
    x = torch.tensor([ids], device=device)  # (1, T)
    cache = None
    for _ in range(max_new_tokens):
        out = model(x, need_weights=need_weights, head_mask=head_mask, cache=cache, use_cache=True)
        cache = out.cache
        logits = out.logits[0, -1].cpu()  # (V,)
        token = next_token(logits, temperature, top_p, generator)
        rows = [a[0, :, -1:] for a in out.attentions] if need_weights else None  # per layer (H, 1, Tk)
        yield LMStep(token, logits, rows)
        if token in stop_ids:
            return
        x = torch.tensor([[token]], device=device)


def generate(model, ids: list[int], max_new_tokens: int, **options) -> list[int]:
    """The new token ids of lm_steps (greedy by default), the stop token included when it came."""
    return [step.token for step in lm_steps(model, ids, max_new_tokens, **options)]
