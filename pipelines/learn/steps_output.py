"""What each family does with its last states: the classifier's pooling and label probabilities, the translator's
cross-attention, and the next token's logits (the translator's decoder and the language model)."""

import numpy as np
import torch

from pipelines.learn.code import code_span, shapes
from pipelines.learn.model_pass import Pass, labels, numpy
from pipelines.learn.open_math import apply_norm, check, entropy, f64, softmax
from pipelines.learn.steps_attention import linear_heads
from pipelines.learn.walk import Step
from pipelines.models.hook_names import stack_point
from transformer.classifier import TransformerClassifier
from transformer.generation import next_token as sampling
from transformer.layers import Block

TOP = 50  # the next token's most likely tokens the step keeps: enough to redraw temperature and top-p


def _pool_weights(model, x: np.ndarray) -> np.ndarray:
    """(T,) the pooling weights over the T real tokens of x (T, D), in the open."""
    if model.pooler is not None:  # BERT's [CLS]: the first token alone
        return np.eye(x.shape[0])[0]
    if model.pool_query is None:  # the mean
        return np.full(x.shape[0], 1.0 / x.shape[0])
    return softmax(x @ f64(model.pool_query) / np.sqrt(x.shape[1]))  # a learnt query attends over the tokens


def classifier(p: Pass) -> Step:
    m = p.model
    x = f64(p.at(p.stack.final_point))  # (T, D) the encoder's last states
    w = _pool_weights(m, x)
    pooled = w @ x  # (D,)
    if m.pooler is not None:
        dense = m.pooler[0]
        pooled = np.tanh(pooled @ f64(dense.weight).T + f64(dense.bias))
    head = m.head[1]
    logits = pooled @ f64(head.weight).T + f64(head.bias)  # (C,)
    probs = softmax(logits)
    model_logits = p.output.logits[0]
    model_probs = model_logits.float().softmax(-1)
    calibrated = p.pipe.calibrated(p.output.logits, [len(p.labels)])[0]
    labels = list(p.pipe.labels)
    best = int(np.argmax(probs))
    how = {
        "mean": "the mean of the last layer's vectors",
        "attention": "a weighted mean, its weights from one more learnt query (attention pooling)",
        "cls": "the first token's vector ([CLS]) through a dense layer",
    }
    text = (
        f"To classify a text the model needs one vector, not {len(p.labels)}: it pools the last layer's vectors, here "
        f"by {how[m.config.pooling]}. A linear layer, the classifier, maps that vector to one score (a logit) per "
        f"label, and a softmax turns the scores into probabilities: {labels[best]} {probs[best]:.3f}. The app shows "
        "the probability after calibration (a correction fitted on reviews kept out of training): "
        f"{float(calibrated[best]):.3f}."
    )  # fmt: skip
    return p.step(
        "classifier",
        title="The classifier: pooling and the label",
        text=text,
        part="output",
        arrays={"pool_weights": w.astype(np.float32), "logits": logits.astype(np.float32),
                "probabilities": probs.astype(np.float32), "calibrated": numpy(calibrated),
                "labels": np.array(labels)},  # fmt: skip
        code=code_span(TransformerClassifier.pool_weights, shapes=shapes(states=p.cache[p.stack.final_point],
                                                                         logits=p.output.logits)),  # fmt: skip
        check=check(
            "pooling and head from hook_final in the open vs the model's probabilities and pooling weights",
            (probs, model_probs), (w, p.output.pool_weights[0]),
        ),
    )  # fmt: skip


def cross_attention(p: Pass) -> Step:
    dec = p.model.decoder
    layer = len(dec.blocks) - 1  # the last decoder layer: where the alignment is clearest
    block, attn = dec.blocks[layer], dec.blocks[layer].cross_attn
    mid = f64(
        p.at(stack_point("decoder.", layer, "hook_resid_mid"))
    )  # (Tt, D) what cross-attention reads its queries from
    h = apply_norm(mid, block.cross_norm) if p.stack.norm_first else mid
    memory = f64(p.at("encoder.hook_final"))  # (Ts, D) the encoder's output
    q = linear_heads(h, attn.q_proj, attn.n_heads, attn.head_dim)  # (Tt, H, hs)
    k = linear_heads(memory, attn.k_proj, attn.n_kv_heads, attn.head_dim)  # (Ts, H, hs)
    weights = softmax(np.einsum("qhe,khe->hqk", q, k) / np.sqrt(attn.head_dim))  # (H, Tt, Ts)
    point = stack_point("decoder.", layer, "cross_attn.hook_pattern")
    target = p.read.extra["target_tokens"]
    text = (
        "A translator has two stacks. The encoder reads the German sentence (the steps so far); the decoder writes "
        "the English one token at a time, with a causal mask over its own tokens. Between them, cross-attention: "
        "the queries come from the decoder (the English written so far), the keys and values from the encoder's "
        "output. Each row shows where the decoder looked in the German sentence while writing that English token: "
        f"layer {layer}, every head."
    )
    return p.step(
        "cross_attention",
        title="Cross-attention: English reads German",
        text=text,
        part="cross",
        arrays={"weights": weights.astype(np.float32), "target": np.array(labels(target))},
        code=code_span(
            Block.forward,
            "if self.cross_attn is not None",
            "x = at(self.hook_resid_cross",
            shapes(
                queries=p.cache[stack_point("decoder.", layer, "hook_resid_mid")],
                memory=p.cache["encoder.hook_final"],
                pattern=p.cache[point],
            ),
        ),  # fmt: skip
        check=check(
            f"softmax(q k^T / sqrt({attn.head_dim})) decoder queries x encoder keys vs {point}", (weights, p.at(point))
        ),  # fmt: skip
    )


def next_token(p: Pass) -> Step:
    u = p.family.unembedding(p)
    state = f64(u.state)  # (D,) the last block's output at the position read
    logits = apply_norm(state, u.norm) @ f64(u.W_U)  # (V,) the final norm, then the unembedding
    model_logits = u.logits.float()
    top = torch.topk(model_logits, min(TOP, model_logits.numel()))
    probs_all = model_logits.softmax(-1)
    ids = top.indices.cpu().numpy()
    tokens = np.array(labels([u.text(int(i)) for i in ids]))
    text = (
        f"{u.where} The last block's vector goes through the final norm and the unembedding, a matrix with one "
        f"column per token of the vocabulary ({model_logits.numel():,}): one score, a logit, per token. A softmax "
        "turns them into probabilities. To write, the model picks one: the most likely (greedy), or a sample. "
        "Temperature divides the logits first (below 1 sharpens, above 1 flattens); top-p keeps the smallest set "
        "of likeliest tokens whose probabilities reach p. Move the sliders: no model runs."
    )
    return p.step(
        "next_token",
        title="The next token: logits, softmax, sampling",
        text=text,
        part="output",
        arrays={
            "logits": numpy(top.values),
            "ids": ids,
            "tokens": tokens,
            "probabilities": numpy(probs_all[ids]),
            "entropy": np.array(entropy(numpy(probs_all)), dtype=np.float32),
        },  # fmt: skip
        code=code_span(sampling, shapes=shapes(state=u.state[None], logits=model_logits[None])),
        check=check(
            f"final norm and unembedding of {u.point} in the open vs the model's logits", (logits, model_logits)
        ),  # fmt: skip
    )
