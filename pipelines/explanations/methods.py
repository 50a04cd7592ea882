"""The built-in explanation methods, one registered class each.

Classifier: every method scores each token toward a target label, its log-odds log p / (1 - p), so with two
labels an attribution toward one label is exactly minus the attribution toward the other. Translator: the
objective of step t is log p(y_t | y_<t, x), or log p(y_t) - log p(alt) for a contrastive step; each step is one
row, a few steps per call. Language model: log p(t | context), one next token t after the whole context. Captum
computes gradient x input and integrated gradients at the embedding output (pipelines.models.adapter: embed / forward
from embeddings); attention and rollout are read from the forward pass and are unsigned (they say where the model looks,
not which way a token pushes).

Integrated gradients' baseline: every embedding vector zero, with the same tokens present (same padding mask,
same positions). It removes only what each token says; an all-padding baseline would instead hide the tokens
from attention, which is not a neutral input. The convergence delta is reported with every result.
"""

import numpy as np
import torch

from pipelines.contracts import CausalLMAdapter, ClassifierAdapter, Seq2SeqAdapter
from pipelines.explanations.registry import Attribution, Method, register
from pipelines.kinds import CAUSAL
from pipelines.models.hook_names import attn_point

IG_STEPS = 32  # Gauss-Legendre points
IG_BATCH = 16  # classifier: interpolation points per forward pass (memory stays small for long reviews)
IG_STEP_BATCH = 64  # translator: rows (interpolation point x decoding step) per forward pass
STEPS_PER_CALL = 4  # translator: decoding steps per attribution call (progress is reported between calls)
OCCLUSION_BATCH = 32  # classifier: words left out per forward pass
STEP_LOGITS_BYTES = 128 * 2**20  # language model, every step at once: logits (and their gradient) a batch at most


def log_odds(logits: torch.Tensor) -> torch.Tensor:
    """(B, C) logits -> (B, C) log p(c) / (1 - p(c)). With two labels the two columns are exact opposites."""
    C = logits.size(-1)
    if C == 1:
        return logits
    others = logits.unsqueeze(1).expand(-1, C, -1)  # (B, C, C): row c lists every logit
    eye = torch.eye(C, dtype=torch.bool, device=logits.device)
    return logits - others.masked_fill(eye, float("-inf")).logsumexp(-1)


def attention_rollout(attentions: list[np.ndarray]) -> np.ndarray:
    """(T, T) attention rollout (Abnar & Zuidema 2020): head-averaged maps with the residual, multiplied
    through the layers. Row i says how much position i at the top draws on each input token."""
    T = attentions[0].shape[-1]
    eye = np.eye(T, dtype=np.float64)
    rollout = eye
    for attn in attentions:  # (H, T, T)
        a = 0.5 * attn.mean(axis=0, dtype=np.float64) + 0.5 * eye  # the residual stream carries half
        a = a / a.sum(axis=-1, keepdims=True)
        rollout = a @ rollout
    return rollout


def _review_fn(adapter):
    """f(emb, ids) -> (B, C) log-odds: what captum differentiates (it picks the target column)."""
    return lambda emb, ids: log_odds(adapter.logits_from_embeddings(emb, ids))


def _next_fn(adapter, contrast: int | None = None):
    """f(emb) -> (B, V) log-probabilities of the token after the last position: what captum differentiates (it picks
    the target's column); minus the contrast's log-probability where one is given (column t: log p(t) - log p(c))."""

    def f(emb):
        logp = adapter.logits_from_embeddings(emb)[:, -1].float().log_softmax(-1)  # (B, V)
        return logp if contrast is None else logp - logp[:, contrast : contrast + 1]

    return f


def next_token_log_probs(
    adapter, seqs: list[list[int]], target: int, batch_size: int = 8, contrast: int | None = None
) -> np.ndarray:
    """(N,) log p(target | seq) after the last token of each id list (an empty one reads as one padding token),
    minus log p(contrast | seq) where a contrast is given, batched by length (right padding: a causal model's
    positions never read what comes after them), with a pause point between batches."""
    from pipelines.batching import sorted_batches
    from pipelines.hosting.microbatch import pause_point

    seqs = [s or [adapter.pad_id] for s in seqs]
    out = np.zeros(len(seqs), dtype=np.float64)
    with torch.no_grad():
        for rows, x in sorted_batches(seqs, batch_size, adapter.pad_id, adapter.device):
            # as a background call, the waiting calls of this model run first (pipelines.hosting.microbatch)
            pause_point()
            logp = adapter.next_log_probs(x, [len(seqs[r]) for r in rows])  # (B, V)
            out[rows] = _numpy(logp[:, target] - (logp[:, contrast] if contrast is not None else 0.0))
    return out


def _step_fn(adapter):
    """f(src_emb, tgt_emb, src_ids, pos, tok, alt) -> (B,) log p(tok) - log p(alt) at position pos of each row
    (alt < 0: no contrast). Every row is one decoding step, so captum attributes steps independently."""

    def f(src_emb, tgt_emb, src_ids, pos, tok, alt):
        at = adapter.step_log_probs(src_emb, src_ids, tgt_emb, pos)  # (B, V)
        out = at.gather(1, tok[:, None])[:, 0]
        other = at.gather(1, alt.clamp(min=0)[:, None])[:, 0]
        return out - torch.where(alt >= 0, other, torch.zeros_like(other))

    return f


def _step_inputs(adapter, src, tgt_in, produced, alts):
    """Every step as one row: (src_emb (Tt, Ts, D), tgt_emb (Tt, Tt, D)), (src ids, pos, tok, alt)."""
    Tt = tgt_in.size(1)
    src_ids = src.expand(Tt, -1)
    src_emb = adapter.embed_source(src_ids).detach()
    tgt_emb = adapter.embed_target(tgt_in.expand(Tt, -1)).detach()
    dev = src.device
    pos, tok, alt = torch.arange(Tt, device=dev), torch.tensor(produced, device=dev), torch.tensor(alts, device=dev)
    return (src_emb, tgt_emb), (src_ids, pos, tok, alt)  # pos, tok, alt: (Tt,)


def _by_steps(attribute, inputs: tuple, extra: tuple, progress=None) -> tuple:
    """attribute(inputs, extra) -> (source, prefix, delta or None) run STEPS_PER_CALL steps (rows) at a time and
    concatenated: each step is attributed on its own, so this changes no number; progress(done, steps) after
    each call."""
    Tt = inputs[0].size(0)
    parts = []
    for start in range(0, Tt, STEPS_PER_CALL):
        rows = slice(start, min(start + STEPS_PER_CALL, Tt))
        parts.append(attribute(tuple(x[rows] for x in inputs), tuple(x[rows] for x in extra)))
        if progress is not None:
            progress(rows.stop, Tt)
    return tuple(None if parts[0][k] is None else torch.cat([p[k] for p in parts]) for k in range(3))


def _token_sums(a: torch.Tensor) -> np.ndarray:
    return a.sum(-1).detach().cpu().numpy().astype(np.float32)


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A float64 copy on the CPU (of a tensor on the model's device)."""
    return t.detach().double().cpu().numpy()


def _shares(w: np.ndarray) -> Attribution:
    """Unsigned weights (T,) scaled to sum to 1: what share of the reading each token gets."""
    return Attribution((w / max(w.sum(), 1e-12)).astype(np.float32))


def _source_only(scores: np.ndarray, produced: list[int]) -> Attribution:
    """(Tt, Ts) scores read from cross-attention: nothing on the target prefix, which these maps do not cover."""
    return Attribution(scores.astype(np.float32), np.zeros((len(produced), len(produced)), dtype=np.float32))


@register
class AttentionMethod(Method):
    """Classifier: what it reads of each token (its pooling weights; the first token's last-layer attention for
    a `transformers` model). Translator: cross-attention averaged over every layer and head."""

    name = "attention"
    label = "Attention (pooling weights)"
    function_labels = {
        "steps": "Cross-attention (mean of every head)",
        "next_token": "Attention (the predicting position's, mean of every head)",
    }
    signed = False

    @torch.no_grad()
    def review(self, adapter: ClassifierAdapter, ids, target, words, progress=None):
        return _shares(_numpy(adapter.forward(ids, need_weights=True).token_weights[0]))  # (T,)

    def steps(self, adapter: Seq2SeqAdapter, src, tgt_in, produced, alts, cross, progress=None):
        return _source_only(np.mean([a.mean(0) for a in cross], axis=0), produced)  # (Tt, Ts)

    @torch.no_grad()
    def next_token(self, adapter: CausalLMAdapter, ids, target, words, progress=None):
        """Language model: the last position's row (the one that predicts), averaged over every layer and head."""
        maps = adapter.forward(ids, need_weights=True).attentions  # per layer (1, H, T, T)
        return _shares(np.mean([_numpy(a[0, :, -1]).mean(0) for a in maps], axis=0))  # (T,)


@register
class RolloutMethod(Method):
    """The classifier's reading weights (a language model: its last position) traced back to the input through
    every layer (attention rollout)."""

    name = "rollout"
    label = "Attention rollout"
    signed = False

    @torch.no_grad()
    def review(self, adapter: ClassifierAdapter, ids, target, words, progress=None):
        out = adapter.forward(ids, need_weights=True)
        return _shares(_numpy(out.token_weights[0]) @ attention_rollout([_numpy(a[0]) for a in out.attentions]))

    @torch.no_grad()
    def next_token(self, adapter: CausalLMAdapter, ids, target, words, progress=None):
        """Language model: the rollout's last row, what the predicting position draws on."""
        maps = adapter.forward(ids, need_weights=True).attentions  # per layer (1, H, T, T)
        return _shares(attention_rollout([_numpy(a[0]) for a in maps])[-1])  # (T,)


def _reads_first_token(adapter) -> bool:
    """A `transformers` classifier reads its first token ([CLS]); ours pools every token (its token_weights)."""
    return adapter.kind == "transformers"


@register
class AttentionNorm(Method):
    """Attention weighted by what it carries (Kobayashi et al. 2020): the norm of each token's weighted value
    vectors, summed over the last layer's heads and projected, ||sum_h w^h_ij v^h_j W_O^h||. Classifier: mixed
    over the positions the classifier reads (its pooling weights, or [CLS]). Translator: cross-attention, the
    mean over the decoder's layers. Language model: the last layer's predicting row. Read from the one forward
    pass, as attention."""

    name = "attention_norm"
    label = "Attention norm (weight × what the value carries)"
    signed = False

    @torch.no_grad()
    def review(self, adapter: ClassifierAdapter, ids, target, words, progress=None):
        from pipelines.attention import inside_head

        run = {}
        internals = inside_head.record(adapter, lambda: run.setdefault("out", adapter.forward(ids, need_weights=True)))
        T, last = ids.size(1), adapter.head_layers["self"] - 1
        readout = torch.zeros(1, T)
        if _reads_first_token(adapter):
            readout[0, 0] = 1.0
        else:
            readout[0] = run["out"].token_weights[0].float().cpu()
        w_o = adapter.W_O("self")[last]  # (H, hs, D)
        return _shares(_numpy(inside_head.combined_norms(internals.kinds["self"], w_o, last, readout)[0]))  # (T,)

    @torch.no_grad()
    def steps(self, adapter: Seq2SeqAdapter, src, tgt_in, produced, alts, cross, progress=None):
        from pipelines.attention import inside_head

        internals = inside_head.record(adapter, lambda: adapter.forward(src, tgt_in, need_weights=True))
        ki, w_o = internals.kinds["cross"], adapter.W_O("cross")  # (L, H, hs, D)
        eye = torch.eye(ki.weights.size(2))  # (Tt, Tt): every step its own row
        maps = [inside_head.combined_norms(ki, w, layer, eye) for layer, w in enumerate(w_o)]  # (Tt, Ts) each
        return _source_only(torch.stack(maps).mean(0).numpy(), produced)

    @torch.no_grad()
    def next_token(self, adapter: CausalLMAdapter, ids, target, words, progress=None):
        """Language model: the last layer's row of the last position, ||sum_h w^h_j v^h_j W_O^h|| for each key j
        (grouped key/value heads: each query head reads its key/value head's values)."""
        last = adapter.head_layers[CAUSAL.name] - 1
        point = attn_point(CAUSAL.name, last, "hook_v")
        run, cache = adapter.run_with_cache(lambda: adapter.forward(ids, need_weights=True), [point])
        v = cache[point][0].float().transpose(0, 1)  # (Hkv, T, hs)
        w_o = adapter.W_O("causal")[last].float().to(v.device)  # (H, hs, D)
        carried = v.repeat_interleave(w_o.size(0) // v.size(0), 0) @ w_o  # (H, T, D): v_j^h W_O^h
        w = run.attentions[last][0, :, -1].float()  # (H, T) the predicting row of every head
        return _shares(_numpy(torch.einsum("hk,hkd->kd", w, carried).norm(dim=-1)))  # (T,)


@register
class GradientXInput(Method):
    """Gradient of the objective times the embedding, summed over the embedding's dimensions."""

    name = "gradient_x_input"
    label = "Gradient × input"
    signed = True
    contrastive = True

    def review(self, adapter: ClassifierAdapter, ids, target, words, progress=None):
        from captum.attr import InputXGradient  # captum (and matplotlib, which it loads) only when asked for

        emb = adapter.embed(ids).detach().requires_grad_()
        attr = InputXGradient(_review_fn(adapter)).attribute(emb, target=target, additional_forward_args=(ids,))
        return Attribution(_token_sums(attr)[0])

    def steps(self, adapter: Seq2SeqAdapter, src, tgt_in, produced, alts, cross, progress=None):
        from captum.attr import InputXGradient

        def attribute(inputs, extra):
            inputs = tuple(x.detach().requires_grad_() for x in inputs)
            return (*InputXGradient(_step_fn(adapter)).attribute(inputs, additional_forward_args=extra), None)

        src_a, tgt_a, _ = _by_steps(attribute, *_step_inputs(adapter, src, tgt_in, produced, alts), progress)
        return Attribution(_token_sums(src_a), _token_sums(tgt_a))

    def next_token(self, adapter: CausalLMAdapter, ids, target, words, progress=None, contrast=None):
        from captum.attr import InputXGradient

        emb = adapter.embed(ids).detach().requires_grad_()  # (1, T, D)
        f = _next_fn(adapter, contrast)
        return Attribution(_token_sums(InputXGradient(f).attribute(emb, target=target))[0])

    def next_tokens(self, adapter: CausalLMAdapter, ids, positions, targets) -> list[Attribution]:
        """A row a token, the whole sequence in each (causal: position p reads nothing after it), one forward and one
        backward for as many rows as STEP_LOGITS_BYTES of logits hold (the first batch one row, which tells the
        vocabulary's size): every generated token of a 20-token SmolLM2 continuation in 2.96 s against 9.51 s one
        by one (benchmarks/explain_steps.py)."""
        out, start, per = [], 0, 1
        while start < len(positions):
            pos, tgt = positions[start : start + per], targets[start : start + per]
            emb = adapter.embed(ids).detach().expand(len(pos), -1, -1).clone().requires_grad_()  # (B, T, D)
            logits = adapter.logits_from_embeddings(emb)  # (B, T, V)
            rows, device = torch.arange(len(pos), device=emb.device), emb.device
            chosen = logits[rows, torch.tensor(pos, device=device)].float().log_softmax(-1)  # (B, V)
            (grad,) = torch.autograd.grad(chosen.gather(1, torch.tensor(tgt, device=device)[:, None]).sum(), emb)
            out += [Attribution(row[: p + 1]) for row, p in zip(_token_sums(grad * emb), pos)]
            start += len(pos)
            per = max(1, STEP_LOGITS_BYTES // (2 * 4 * logits[0].numel()))  # the logits and their gradient, float32
        return out


@register
class IntegratedGradients(Method):
    """Integrated gradients at the embedding output, from zero vectors with the tokens kept in place."""

    name = "integrated_gradients"
    label = "Integrated gradients"
    signed = True
    contrastive = True
    n_steps = IG_STEPS

    def review(self, adapter: ClassifierAdapter, ids, target, words, progress=None):
        from captum.attr import IntegratedGradients as IG

        emb = adapter.embed(ids).detach()
        attr, delta = IG(_review_fn(adapter)).attribute(
            emb,
            baselines=torch.zeros_like(emb),
            target=target,
            additional_forward_args=(ids,),
            n_steps=self.n_steps,
            internal_batch_size=IG_BATCH,
            return_convergence_delta=True,
        )
        return Attribution(_token_sums(attr)[0], steps=self.n_steps, delta=float(delta[0]))

    def steps(self, adapter: Seq2SeqAdapter, src, tgt_in, produced, alts, cross, progress=None):
        from captum.attr import IntegratedGradients as IG

        def attribute(inputs, extra):
            (src_a, tgt_a), delta = IG(_step_fn(adapter)).attribute(
                inputs,
                baselines=tuple(torch.zeros_like(x) for x in inputs),
                additional_forward_args=extra,
                n_steps=self.n_steps,
                internal_batch_size=IG_STEP_BATCH,
                return_convergence_delta=True,
            )
            return src_a, tgt_a, delta

        inputs, extra = _step_inputs(adapter, src, tgt_in, produced, alts)
        src_a, tgt_a, delta = _by_steps(attribute, inputs, extra, progress)
        deltas = _numpy(delta).astype(np.float32)
        return Attribution(_token_sums(src_a), _token_sums(tgt_a), steps=self.n_steps, deltas=deltas)

    def next_token(self, adapter: CausalLMAdapter, ids, target, words, progress=None, contrast=None):
        from captum.attr import IntegratedGradients as IG

        emb = adapter.embed(ids).detach()  # (1, T, D)
        attr, delta = IG(_next_fn(adapter, contrast)).attribute(
            emb,
            baselines=torch.zeros_like(emb),
            target=target,
            n_steps=self.n_steps,
            internal_batch_size=IG_BATCH,
            return_convergence_delta=True,
        )
        return Attribution(_token_sums(attr)[0], steps=self.n_steps, delta=float(delta[0]))


@register
class Occlusion(Method):
    """The drop in the label's log-odds when a word's tokens are replaced by padding (masked out of attention
    and pooling), shared evenly by the word's pieces; a language model's next token: deleted from the context."""

    name = "occlusion"
    label = "Occlusion (leave one word out)"
    signed = True
    contrastive = True  # a next token: the drop in log p(target) - log p(contrast)

    @torch.no_grad()
    def review(self, adapter: ClassifierAdapter, ids, target, words, progress=None):
        """One forward pass per word, OCCLUSION_BATCH words a pass (captum's FeatureAblation's numbers, in
        batches of our own so that a long review reports its progress: progress(words done, words))."""
        words = np.asarray(words)
        n_words = int(words.max()) + 1
        f = lambda x: log_odds(adapter.forward(x).logits)[:, target]  # noqa: E731
        intact = float(f(ids)[0])
        drops = np.zeros(n_words, dtype=np.float64)
        which = torch.as_tensor(words, dtype=torch.long, device=ids.device)  # (T,)
        for start in range(0, n_words, OCCLUSION_BATCH):
            stop = min(start + OCCLUSION_BATCH, n_words)
            chunk = torch.arange(start, stop, device=ids.device)  # (N,) the words left out
            batch = ids.expand(len(chunk), -1).clone()  # (N, T)
            batch[which[None, :] == chunk[:, None]] = adapter.pad_id  # row n without word chunk[n]
            drops[start:stop] = intact - _numpy(f(batch))
            if progress is not None:
                progress(stop, n_words)
        pieces = np.bincount(words)[words]  # (T,) how many pieces each token's word has
        return Attribution((drops[words] / pieces).astype(np.float32))

    def next_token(self, adapter: CausalLMAdapter, ids, target, words, progress=None, contrast=None):
        """Language model: the drop in log p(target) (minus log p(contrast), where given) when a word's tokens are
        deleted from the context (a causal model has no padding mask to hide them with), shared evenly by the
        word's pieces."""
        seq, words = ids[0].tolist(), np.asarray(words)
        n_words = int(words.max()) + 1
        seqs = [seq] + [[t for t, w in zip(seq, words) if w != k] for k in range(n_words)]  # intact, then without k
        logp = next_token_log_probs(adapter, seqs, target, contrast=contrast)
        if progress is not None:
            progress(n_words, n_words)
        pieces = np.bincount(words)[words]  # (T,)
        return Attribution(((logp[0] - logp[1:])[words] / pieces).astype(np.float32))
