"""Switching heads off and the head table: per-call head masks from {(kind, layer, head): multiplier},
and each head's effect measured in one batched pass with a (B, H) mask per layer (row b: head b off).

Kinds as pipelines.kinds names them ("self" for the classifier; "encoder", "decoder" and "cross" for the
translator; "causal" for the language model); layers and heads count from 0.
"""

import dataclasses
from collections.abc import Mapping
from itertools import groupby

import numpy as np
import torch

from pipelines.attention.head_stats import agreement as rank_agreement
from pipelines.attention.head_stats import punctuation_keys, stats_rows
from pipelines.attention.passes import at_once, run_passes
from pipelines.contracts import Adapter, CausalLMAdapter, Seq2SeqAdapter
from pipelines.hosting.budget import ModelSize, head_rows
from pipelines.trust.finite import require_finite

HeadKey = tuple[str, int, int]


def head_keys(layers: Mapping[str, int], n_heads: int) -> list[HeadKey]:
    """Every (kind, layer, head), kinds in the given order, then layers, then heads."""
    return [(kind, layer, head) for kind, n in layers.items() for layer in range(n) for head in range(n_heads)]


def _check_key(key, layers: Mapping[str, int], n_heads: int) -> HeadKey:
    try:
        kind, layer, head = key
        layer, head = int(layer), int(head)
    except (TypeError, ValueError):
        raise ValueError(f"a head is named by (kind, layer, head), got {key!r}") from None
    if kind not in layers:
        raise ValueError(f"unknown kind of attention {kind!r}: this model has {', '.join(layers)}")
    if not (0 <= layer < layers[kind] and 0 <= head < n_heads):
        raise ValueError(f"no head {key!r}: {kind} has layers 0..{layers[kind] - 1} and heads 0..{n_heads - 1}")
    return kind, layer, head


def mask_tensors(
    head_mask: Mapping[HeadKey, float] | None, layers: Mapping[str, int], n_heads: int, device="cpu"
) -> dict[str, torch.Tensor] | None:
    """{(kind, layer, head): multiplier} -> {kind: (L, H) multipliers on `device`, 1 where not given}; None for
    no mask."""
    if not head_mask:
        return None
    out = {kind: torch.ones(n, n_heads) for kind, n in layers.items()}
    for key, value in head_mask.items():
        kind, layer, head = _check_key(key, layers, n_heads)
        out[kind][layer, head] = float(value)
    return {kind: m.to(device) for kind, m in out.items()}


def single_head_off(
    keys: list[HeadKey], layers: Mapping[str, int], n_heads: int, device="cpu"
) -> dict[str, torch.Tensor]:
    """{kind: (L, N, H)} batch masks on `device` where row n switches off head keys[n] and nothing else."""
    out = {kind: torch.ones(n, len(keys), n_heads) for kind, n in layers.items()}
    for row, (kind, layer, head) in enumerate(keys):
        out[kind][layer, row, head] = 0.0
    return {kind: m.to(device) for kind, m in out.items()}


def _chunks(
    adapter: Adapter, keys: list[HeadKey], tokens: int, by_layer: bool = False, passes: int = 1
) -> list[list[HeadKey]]:
    """The heads in batches as large as the memory budget allows for this model and input with `passes` batches
    running at once (pipelines.hosting.budget), as even as that allows; by_layer: a batch holds heads of one (kind,
    layer)."""
    size = ModelSize(sum(adapter.head_layers.values()), adapter.n_heads, tokens)
    rows = head_rows(size, tokens, at_once=passes)
    groups = [list(g) for _, g in groupby(keys, key=lambda k: k[:2])] if by_layer else [keys]
    out = []
    for group in groups:
        n = -(-len(group) // rows)  # batches this group needs
        bounds = [len(group) * i // n for i in range(n + 1)]
        out += [group[a:b] for a, b in zip(bounds, bounds[1:])]
    return out


# --- the classifier ------------------------------------------------------------------------------------


@torch.no_grad()
def classifier_effects(pipe, ids: list[int], label: int, run=None) -> tuple[float, dict[HeadKey, float]]:
    """(probability of `label` with every head on, {head: change of that probability with the head off}), on
    the calibrated probability the pipeline returns (pipe.calibrated), so an effect is what the prediction shows.
    run: the adapter's pass on ids with need_hidden (None: run it here).
    A head off changes nothing before its layer, nor what the heads of its layer compute: only how that layer mixes
    them. So the layers from it on run again on what it read with every head on, and its own heads are not run
    again (adapter.logits_from_layer)."""
    adapter = pipe.adapter
    layers, H = adapter.head_layers, adapter.n_heads
    x = torch.tensor([ids], device=adapter.device)  # (1, T)
    if run is None:
        run = adapter.forward(x, need_hidden=True)
    intact = float(pipe.calibrated(run.logits, [len(ids)])[0, label])
    passes = at_once(adapter.device)

    def probs(keys: list[HeadKey]) -> list[float]:
        layer = keys[0][1]
        masks = single_head_off(keys, layers, H, adapter.device)
        rows = lambda kept: kept[layer].expand(len(keys), *kept[layer].shape[1:]) if kept else None  # noqa: E731
        logits = adapter.logits_from_layer(layer, rows(run.hidden), x.expand(len(keys), -1), masks, rows(run.heads))
        return pipe.calibrated(logits, [len(ids)] * len(keys))[:, label].tolist()  # (N,)

    # by layer where the adapter kept what each layer read (a transformers model runs whole: one batch serves all)
    chunks = _chunks(adapter, head_keys(layers, H), len(ids), by_layer=bool(run.hidden), passes=passes)
    measured = run_passes(probs, chunks, passes)
    effects = {k: p - intact for keys, values in zip(chunks, measured) for k, p in zip(keys, values)}
    return intact, effects


def sentiment_head_table(pipe, text: str, effects: bool = True) -> list[dict]:
    """The head table of the classifier on one text: statistics of each head's attention and its effect
    (change of the predicted label's calibrated probability when that head alone is off; effects=False: left out).
    One pass gives the maps, the label and what each layer read (the pipeline's own call would make a second one)."""
    ids, spans, _ = pipe.encode(text)
    if not ids:
        raise ValueError("the text has no tokens")
    x = torch.tensor([ids], device=pipe.adapter.device)  # (1, T)
    with torch.no_grad():
        run = pipe.adapter.forward(x, need_weights=True, need_hidden=True)
    probs = pipe.calibrated(run.logits, [len(ids)])[0]  # (C,)
    require_finite("sentiment", {"probabilities": probs, "attentions": run.attentions})
    tokens = [t.text for t in spans]
    maps = [a[0].float().cpu().numpy() for a in run.attentions]  # (H, T, T) each
    # The classifier reads no special tokens: its 'end' is the last token of the text.
    rows = stats_rows("self", maps, end_key=len(tokens) - 1, punct=punctuation_keys(tokens))
    del maps
    if not effects:
        return rows
    run = dataclasses.replace(run, attentions=[])  # the maps are not needed any more: their memory goes back
    _, measured = classifier_effects(pipe, ids, int(probs.argmax()), run)
    for row in rows:
        row["effect"] = measured[(row["kind"], row["layer"], row["head"])]
    return rows


# --- the translator ------------------------------------------------------------------------------------


@torch.no_grad()
def teacher_forced_log_prob(adapter: Seq2SeqAdapter, src_ids: list[int], produced: list[int], masks, rows: int = 1):
    """(rows,) log-probability, on the CPU, of the token ids `produced` (EOS included if it is there) given the source,
    in one teacher-forced pass; masks {kind: (L, H) or (L, rows, H)}, one row per variant."""
    if not produced:
        return torch.zeros(rows)
    device = adapter.device
    src = torch.tensor([src_ids], device=device).expand(rows, -1)  # (rows, Ts)
    tgt_in = torch.tensor([[adapter.bos_id] + produced[:-1]], device=device).expand(rows, -1)  # (rows, Tt)
    logp = adapter.forward(src, tgt_in, head_mask=masks).logits.log_softmax(-1)  # (rows, Tt, V)
    gold = torch.tensor(produced, device=device)[None, :, None].expand(rows, -1, -1)  # (rows, Tt, 1)
    return logp.gather(-1, gold)[..., 0].sum(-1).cpu()


def masked_effects(adapter: Adapter, tokens: int, score) -> tuple[float, dict[HeadKey, float]]:
    """(score with every head on, {head: its change with that head alone off}): score(masks, rows) -> (rows,) is
    one batched pass, masks {kind: (L, rows, H)} (None: every head on); inputs of `tokens` tokens size the batches."""
    layers, H = adapter.head_layers, adapter.n_heads
    intact = float(score(None, 1)[0])
    passes = at_once(adapter.device)

    def scores(keys: list[HeadKey]) -> list[float]:
        return score(single_head_off(keys, layers, H, adapter.device), len(keys)).tolist()

    chunks = _chunks(adapter, head_keys(layers, H), tokens, passes=passes)
    measured = run_passes(scores, chunks, passes)
    effects = {k: v - intact for keys, values in zip(chunks, measured) for k, v in zip(keys, values)}
    return intact, effects


def translator_effects(
    adapter: Seq2SeqAdapter, src_ids: list[int], produced: list[int]
) -> tuple[float, dict[HeadKey, float]]:
    """(log-probability of the produced translation with every head on, {head: its change with the head off})."""
    score = lambda masks, rows: teacher_forced_log_prob(adapter, src_ids, produced, masks, rows)  # noqa: E731
    return masked_effects(adapter, max(len(src_ids), len(produced)), score)


def _explain(pipe, text: str, result):
    """pipe.explain on this result (no new decoding where explain accepts it), by a gradient method when the
    default would be attention itself."""
    methods = getattr(pipe, "explanation_methods", ())
    method = "gradient_x_input" if "gradient_x_input" in methods else None
    try:
        return pipe.explain(text, method=method, result=result)
    except TypeError:
        return pipe.explain(text)


def _cross_agreement(pipe, text: str, result) -> dict[HeadKey, float] | None:
    """Agreement of each cross-attention head with the attribution of pipe.explain (where it exists): the
    mean over target tokens of the rank correlation between the head's attention and |attribution|."""
    if not hasattr(pipe, "explain"):
        return None
    try:
        scores = np.asarray(_explain(pipe, text, result).scores, dtype=np.float64)  # (Tt, Ts)
    except Exception:  # an explanation that fails must not take the head table down
        return None
    out = {}
    for layer, cross in enumerate(result.cross_attentions):  # (H, Tt, Ts)
        if scores.shape != tuple(cross.shape[1:]):
            return None
        for head, value in enumerate(rank_agreement(cross.float().numpy(), scores)):
            out[("cross", layer, head)] = None if np.isnan(value) else float(value)
    return out


def translation_head_table(
    pipe, text: str, beam_size=None, alpha=None, agreement: bool = True, result=None, effects: bool = True
) -> list[dict]:
    """The head table of the translator on one sentence: statistics of each head's attention, agreement of
    cross-attention heads with the attribution (None without one), and each head's effect (change of the
    log-probability of the produced translation, teacher-forced, when that head alone is off).
    result: the TranslationResult of `text` to measure (None: decode it now); effects=False: no effect column."""
    result = result or pipe(text, beam_size=beam_size, alpha=alpha)
    src_ids = [t.id for t in result.source_tokens]
    produced = result.target_ids
    src_text = [t.text for t in result.source_tokens[:-1]] + ["</s>"]
    tgt_keys = ["<s>"] + result.target_tokens[:-1]  # what the decoder reads: BOS, then its own output
    end_src = len(src_text) - 1
    src_punct, tgt_punct = punctuation_keys(src_text), punctuation_keys(tgt_keys)
    np_maps = lambda maps: [a.float().numpy() for a in maps]  # noqa: E731
    rows = (
        stats_rows("encoder", np_maps(result.encoder_attentions), end_src, src_punct)
        + stats_rows("decoder", np_maps(result.decoder_attentions), 0, tgt_punct)  # 'end': the start token
        + stats_rows("cross", np_maps(result.cross_attentions), end_src, src_punct)
    )
    measured = translator_effects(pipe.adapter, src_ids, produced)[1] if effects else None
    agree = (_cross_agreement(pipe, text, result) if agreement else None) or {}
    for row in rows:
        key = (row["kind"], row["layer"], row["head"])
        row["agreement"] = agree.get(key)
        if measured is not None:
            row["effect"] = measured[key]
    return rows


# --- the language model --------------------------------------------------------------------------------


@torch.no_grad()
def next_token_log_prob(
    adapter: CausalLMAdapter, ids: list[int], token: int, masks=None, rows: int = 1
) -> torch.Tensor:
    """(rows,) log p(token | ids), on the CPU, in one pass; masks {"causal": (L, H) or (L, rows, H)}."""
    x = torch.tensor([ids], device=adapter.device).expand(rows, -1)  # (rows, T)
    return adapter.next_log_probs(x, [len(ids)] * rows, masks)[:, token].cpu()  # (rows,)


@torch.no_grad()
def lm_effects(
    adapter: CausalLMAdapter, ids: list[int], token: int, progress=None
) -> tuple[float, dict[HeadKey, float]]:
    """(log p(token | ids) with every head on, {head: its change with that head alone off}); progress(heads done,
    heads) after each batch. The numbers of a pass with every head on but one (masked_effects over
    next_token_log_prob), cheaper: a head off in layer L changes nothing below L, so one pass keeps what each block
    read (need_hidden), the heads of one layer run as one batch from their layer on, and only the last position's
    logits are computed (adapter.last_log_probs_from_layer)."""
    layers, H = adapter.head_layers, adapter.n_heads
    run = adapter.forward(torch.tensor([ids], device=adapter.device), need_hidden=True)  # (1, T) in
    intact = float(run.logits[0, -1].float().log_softmax(-1)[token])
    passes = at_once(adapter.device)

    def scores(keys: list[HeadKey]) -> list[float]:
        layer = keys[0][1]
        hidden = run.hidden[layer].expand(len(keys), -1, -1)  # (N, T, D): what the layer read, every head on
        masks = single_head_off(keys, layers, H, adapter.device)
        return adapter.last_log_probs_from_layer(layer, hidden, masks)[:, token].tolist()  # (N,)

    chunks = _chunks(adapter, head_keys(layers, H), len(ids), by_layer=True, passes=passes)  # layer 0 (longest) first
    heads_done = np.cumsum([len(keys) for keys in chunks])
    report = None if progress is None else lambda done, _: progress(int(heads_done[done - 1]), int(heads_done[-1]))
    measured = run_passes(scores, chunks, passes, report)
    effects = {k: v - intact for keys, values in zip(chunks, measured) for k, v in zip(keys, values)}
    return intact, effects


def lm_head_table(pipe, result, induction=None, progress=None, effects: bool = True) -> list[dict]:
    """The head table of a language model on one LanguageModelResult: statistics of each head's causal attention
    over the sequence it shows (prompt and generated tokens), its roles (sink: the first token's share; duplicate:
    earlier occurrences of the same token; induction: on repeated random tokens, from `induction` (L, H), None:
    left out) and its effect: the change of the first generated token's log-probability when that head alone is
    off (at the first step: the prompt alone is read; effects=False: left out); progress(heads done, heads) as
    lm_effects measures."""
    from pipelines.attention.head_roles import duplicate_share, sink_share

    if not result.generated_ids:
        raise ValueError("the result generated no token: there is no next token to measure a head's effect on")
    maps = [a.float().numpy() for a in result.attentions]  # per layer (H, T, T)
    texts, ids = result.sequence_texts, result.sequence_ids
    rows = stats_rows("causal", maps, end_key=0, punct=punctuation_keys(texts))  # 'end': the first token
    roles = {"sink": [sink_share(m) for m in maps], "duplicate": [duplicate_share(m, ids) for m in maps]}
    if induction is not None:
        roles["induction"] = list(np.asarray(induction, dtype=np.float64))
    measured = lm_effects(pipe.adapter, result.prompt_ids, result.generated_ids[0], progress)[1] if effects else None
    for row in rows:
        layer, head = row["layer"], row["head"]
        row.update({name: _number(v[layer][head]) for name, v in roles.items()})
        if measured is not None:
            row["effect"] = measured[(row["kind"], layer, head)]
    return rows


def _number(x) -> float | None:
    """A float, None for NaN (undefined: no repeated token, say)."""
    return None if np.isnan(x) else float(x)


# --- over many inputs (the benchmark) ----------------------------------------------------------------


def summarize_tables(tables: list[list[dict]]) -> list[dict]:
    """Head tables of many inputs -> one row per head: mean and standard deviation of every number,
    (effect_mean, effect_std, entropy_mean, ...), and the mean of |effect|. None where a number is undefined."""
    out = []
    for rows in zip(*tables):  # the same head across inputs
        head = {k: rows[0][k] for k in ("kind", "layer", "head")}
        for name in rows[0]:
            if name in head:
                continue
            values = np.array([r[name] for r in rows if r[name] is not None], dtype=np.float64)
            head[f"{name}_mean"] = float(values.mean()) if len(values) else None
            head[f"{name}_std"] = float(values.std()) if len(values) else None
        head["abs_effect_mean"] = float(np.mean([abs(r["effect"]) for r in rows]))
        out.append(head)
    return out


def least_effective(summary: list[dict], k: int) -> dict[HeadKey, float]:
    """A head mask switching off the k heads with the smallest mean |effect|."""
    order = sorted(summary, key=lambda r: r["abs_effect_mean"])
    return {(r["kind"], r["layer"], r["head"]): 0.0 for r in order[:k]}
