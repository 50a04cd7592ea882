"""Inside one head (pipelines/attention/inside_head.py), for every model kind the adapter knows (ours and transformers'
BERT, DistilBERT, RoBERTa and Marian, all tiny and offline): q, k and v computed here by hand from the layer's own
weights and the block's input, then every step (scores, scaled, mask, softmax, weighted values, the head's output,
its projection through the head's slice of W_O) checked; the softmax weights are exactly the result's heatmap row."""

import numpy as np
import pytest
import torch

from pipelines.attention import attention_views as av
from pipelines.attention.inside_head import AttentionInternals
from pipelines.models.hf_adapter import AttentionParts
from pipelines.models.model_registry import ModelRegistry

REVIEW = "A wonderful film, but the ending was dull and far too long."
GERMAN = "Ein Mann fährt mit dem Fahrrad."


def inputs_of(parts, call):
    """call() with every q, k, v projection's input and every output projection's output recorded, by hand."""
    seen, hooks = {}, []
    for kind, layers in parts.items():
        for i, p in enumerate(layers):
            for name in ("q", "k", "v"):
                hook = lambda m, args, key=(kind, i, name): seen.__setitem__(key, args[0][0].detach())  # noqa: E731
                hooks.append(getattr(p, name).register_forward_pre_hook(hook))
            out_hook = lambda m, args, out, key=(kind, i, "out"): seen.__setitem__(key, out[0].detach())  # noqa: E731
            hooks.append(p.out.register_forward_hook(out_hook))
    try:
        return call(), seen
    finally:
        for h in hooks:
            h.remove()


def check_head(parts, seen, internals: AttentionInternals, heatmap_row, kind, layer, head, query, n_heads):
    """Every step of one query of one head against arithmetic done here from the layer's weights."""
    p = parts[kind][layer]
    D = p.out.weight.size(0)
    hs = D // n_heads
    cols = slice(head * hs, (head + 1) * hs)
    lin = lambda m, x: (x @ m.weight.T + (m.bias if m.bias is not None else 0))[:, cols]  # noqa: E731
    with torch.no_grad():
        q = lin(p.q, seen[(kind, layer, "q")])[query]  # (hs,)
        k, v = lin(p.k, seen[(kind, layer, "k")]), lin(p.v, seen[(kind, layer, "v")])  # (Tk, hs)
        w_o = p.out.weight[:, cols].detach()  # (D, hs)
    h = internals.head(kind, layer, head, query)
    tol = dict(atol=1e-5, rtol=1e-4)
    assert torch.allclose(h.q, q, **tol) and torch.allclose(h.keys, k, **tol) and torch.allclose(h.values, v, **tol)
    assert torch.allclose(h.scores, k @ q, **tol)
    assert h.scale == pytest.approx(hs**-0.5)
    assert torch.allclose(h.scaled, (k @ q) / hs**0.5, **tol)
    expected_mask = torch.arange(k.size(0)) <= query if kind == "decoder" else torch.ones(k.size(0), dtype=torch.bool)
    assert torch.equal(h.mask, expected_mask)
    softmax = ((k @ q) / hs**0.5).masked_fill(~expected_mask, float("-inf")).softmax(-1)
    assert torch.allclose(h.weights, softmax, atol=1e-6)
    assert torch.equal(h.weights, heatmap_row)  # the same tensor the heatmap draws, not a recomputation
    assert torch.all(h.weights[~h.mask] == 0)
    assert torch.allclose(h.weighted_values, softmax[:, None] * v, **tol)
    assert torch.allclose(h.output, (softmax[:, None] * v).sum(0), **tol)
    assert torch.allclose(h.projected, w_o @ h.output, **tol)
    assert h.projected_norm == pytest.approx(float((w_o @ h.output).norm()), rel=1e-4)
    carried = (softmax[:, None] * (v @ w_o.T)).norm(dim=-1)  # (Tk,) ||w_j v_j W_O^h||
    assert torch.allclose(h.carried, carried, **tol)
    # The heads assemble: their projections plus the bias are the attention block's output.
    ki = internals.kinds[kind]
    total = ki.projected[layer, :, query].sum(0) + (p.out.bias if p.out.bias is not None else 0)  # (D,)
    assert torch.allclose(total, seen[(kind, layer, "out")][query], **tol)
    assert torch.allclose(ki.head_norms(layer, query)[head], torch.tensor(h.projected_norm), **tol)


def parts_of(adapter) -> dict[str, list[AttentionParts]]:
    """The four projections of every attention, by kind: a transformers adapter's own, or read off our model's blocks
    (the by-hand side of these checks hooks the projections themselves)."""
    if hasattr(adapter, "attention_parts"):
        return adapter.attention_parts()
    m = adapter.model
    of = lambda attn: AttentionParts(attn.q_proj, attn.k_proj, attn.v_proj, attn.o_proj)  # noqa: E731
    if "self" in adapter.head_layers:
        return {"self": [of(b.attn) for b in m.blocks]}
    return {
        "encoder": [of(b.attn) for b in m.encoder.blocks],
        "decoder": [of(b.attn) for b in m.decoder.blocks],
        "cross": [of(b.cross_attn) for b in m.decoder.blocks],
    }


def check_review(pipe):
    parts = parts_of(pipe.adapter)
    result, seen = inputs_of(parts, lambda: pipe(REVIEW))
    internals = pipe.internals(REVIEW)
    T = len(result.tokens)
    for layer in range(pipe.n_layers):
        for head in range(pipe.n_heads):
            for query in (0, T // 2, T - 1):
                row = result.attentions[layer][head, query]
                check_head(parts, seen, internals, row, "self", layer, head, query, pipe.n_heads)
    one = pipe.inside_head(REVIEW, 1, 2, 3)
    assert torch.equal(one.weights, result.attentions[1][2, 3])


def test_every_step_of_our_classifiers_heads(sentiment):
    check_review(sentiment)


def test_every_step_of_a_transformers_classifiers_heads(hf_classifier):
    check_review(hf_classifier)


def check_translation(pipe):
    parts = parts_of(pipe.adapter)
    result, seen = inputs_of(parts, lambda: pipe(GERMAN, beam_size=1))
    internals = pipe.internals(GERMAN, result.target_ids)
    maps = {"encoder": result.encoder_attentions, "decoder": result.decoder_attentions}
    maps["cross"] = result.cross_attentions
    for kind, per_layer in maps.items():
        for layer, m in enumerate(per_layer):
            for query in range(m.shape[1]):
                check_head(parts, seen, internals, m[1, query], kind, layer, 1, query, pipe.n_heads)
    one = pipe.inside_head(GERMAN, "cross", 0, 3, 0, result.target_ids)
    assert torch.equal(one.weights, result.cross_attentions[0][3, 0])


def test_every_step_of_our_translators_heads(translation):
    check_translation(translation)


def test_every_step_of_a_marian_translators_heads(marian):
    check_translation(marian)


def test_norm_maps_are_the_weights_times_what_each_value_carries(sentiment):
    """||w_ij v_j W_O|| per head: zero where the weight is zero, and a row's order can differ from the weights'."""
    ki = sentiment.internals(REVIEW).kinds["self"]
    norms = ki.norm_maps()  # (L, H, T, T)
    assert norms.shape == ki.weights.shape
    h = sentiment.internals(REVIEW).head("self", 1, 0, 2)
    assert torch.allclose(norms[1, 0, 2], h.carried)
    assert torch.all((norms > 0) == (ki.weights > 0))


def test_a_served_pipeline_records_through_the_batcher(sentiment):
    from pipelines.hosting.microbatch import MicroBatcher
    from pipelines.hosting.serving import serve
    from pipelines.tasks import SENTIMENT

    batcher = MicroBatcher(4)
    pipe = serve(SENTIMENT, sentiment, batcher)
    h = pipe.inside_head(REVIEW, 0, 1, 2)
    assert batcher.batches_run == 1  # it went through the batcher, as every call that runs the model
    assert torch.equal(h.weights, sentiment(REVIEW).attentions[0][1, 2])


def by_hand_layer_norms(internals, parts, kind, layer, n_heads):
    """(Tq, Tk) ||sum_h w^h_ij v^h_j W_O^h||, one (i, j) at a time from each head's steps."""
    ki = internals.kinds[kind]
    Tq, Tk = ki.weights.shape[-2:]
    D = parts.out.weight.size(0)
    hs = D // n_heads
    out = torch.zeros(Tq, Tk)
    for i in range(Tq):
        heads = [internals.head(kind, layer, h, i) for h in range(n_heads)]
        w_o = [parts.out.weight[:, h * hs : (h + 1) * hs].detach() for h in range(n_heads)]  # (D, hs) each
        for j in range(Tk):
            out[i, j] = sum(w_o[h] @ heads[h].weighted_values[j] for h in range(n_heads)).norm()
    return out


def test_attention_norm_explains_a_review_by_what_the_last_layer_carries(sentiment):
    e = sentiment.explain(REVIEW, "attention_norm")
    internals = sentiment.internals(REVIEW)
    last = sentiment.n_layers - 1
    parts = parts_of(sentiment.adapter)["self"][last]
    pool = sentiment(REVIEW).pool_weights  # (T,) what our classifier reads of each position
    expected = pool @ by_hand_layer_norms(internals, parts, "self", last, sentiment.n_heads)
    assert e.scores == pytest.approx((expected / expected.sum()).numpy(), abs=1e-5)
    assert not e.signed and e.scores.sum() == pytest.approx(1.0, abs=1e-5)


def test_attention_norm_reads_cls_for_a_transformers_classifier(hf_classifier):
    e = hf_classifier.explain(REVIEW, "attention_norm")
    last = hf_classifier.n_layers - 1
    parts = hf_classifier.adapter.attention_parts()["self"][last]
    row = by_hand_layer_norms(hf_classifier.internals(REVIEW), parts, "self", last, hf_classifier.n_heads)[0]
    n = len(e.ids)
    row[: hf_classifier.adapter.n_prefix] = 0  # the special tokens are not the review's words
    row[n - hf_classifier.adapter.n_suffix :] = 0
    assert e.scores / e.scores.sum() == pytest.approx((row / row.sum()).numpy(), abs=1e-5)


def test_attention_norm_explains_each_step_by_cross_attention_norms(translation):
    result = translation(GERMAN, beam_size=1)
    e = translation.explain(GERMAN, "attention_norm", result=result)
    internals = translation.internals(GERMAN, result.target_ids)
    parts = parts_of(translation.adapter)["cross"]
    maps = [by_hand_layer_norms(internals, p, "cross", i, translation.n_heads) for i, p in enumerate(parts)]
    assert e.scores == pytest.approx(torch.stack(maps).mean(0).numpy(), abs=1e-5)
    assert e.scores.shape == (len(result.target_tokens), len(result.source_tokens))


def test_the_main_run_keeps_what_each_value_carries(sentiment, translation):
    """The result's value norms (the norm scale's) come from the same run as its maps and equal the recording's."""
    result = sentiment(REVIEW)
    ki = sentiment.internals(REVIEW).kinds["self"]
    assert torch.allclose(torch.stack(result.value_norms), ki.value_norms, atol=1e-5)
    np.testing.assert_allclose(result.attention_maps().norm_maps("self"), ki.norm_maps().numpy(), atol=1e-5)
    t = translation(GERMAN, beam_size=1)
    recorded = translation.internals(GERMAN, t.target_ids).kinds
    for kind in ("encoder", "decoder", "cross"):
        assert torch.allclose(torch.stack(t.value_norms[kind]), recorded[kind].value_norms, atol=1e-5)
    assert not sentiment(REVIEW, need_weights=False).value_norms  # the fast path keeps none


def test_the_norm_scale_redraws_every_view_with_each_rows_shares(sentiment):
    from viz.attention import task_views
    from viz.attention import view_handlers as views
    from viz.sentiment.handlers import analyze_review

    view = analyze_review(sentiment, REVIEW)[0]
    weights = view.maps.layer("self", 1).astype(np.float32)  # (H, T, T)
    shares = av.norm_shares(weights, view.maps.carried["self"][1])
    np.testing.assert_allclose(shares.sum(-1), 1.0, atol=1e-5)
    assert not np.allclose(shares, weights, atol=1e-3)  # the values' norms differ: the picture changes
    norm = task_views.heatmap(view, 1, 0, "norm")
    np.testing.assert_allclose(np.asarray(norm.data[0].z) / 1000, np.minimum(shares[0], 0.999), atol=6e-4)
    assert av.color_scale("norm").label in norm.layout.title.subtitle.text
    km = task_views.kinds(view)["self"]
    for draw in (
        lambda scale: task_views.overview(view, 1, scale),
        lambda scale: views.token_focus(km, 1, "src:2", False, scale),
        lambda scale: views.model_view(km, scale),
    ):
        assert draw("norm").to_json() != draw("linear").to_json()
    assert "share of ‖w·v·W_O‖" in views.token_focus(km, 1, "src:2", False, "norm").to_json()


def test_the_view_writes_the_heatmap_row_and_follows_kind_token_and_step(sentiment, translation):
    import re

    from viz.attention import inside_head_panel as panel
    from viz.sentiment.handlers import analyze_review
    from viz.translation.handlers import translate

    view = analyze_review(sentiment, REVIEW)[0]
    internals = panel.record(ModelRegistry.of(sentiment), view)
    steps, bars = panel.figures(view, internals, "self", 1, 2, "src:3")
    cells = [float(x) for x in re.findall(r'<td data-key="\d+">([0-9.]+)</td>', steps)]
    np.testing.assert_allclose(cells, view.maps.head("self", 1, 2)[3].astype(np.float32), atol=6e-4)
    assert "layer 2, head 3" in steps and "<script" not in steps
    # every key is named as the heatmap's axis names it, with its place: a review holds the same token twice
    keys = re.findall(r'<table class="ih-top">.*?</table>', steps, re.S)[0]
    places = [int(j) for j in re.findall(r"<tr><td>(\d+):", keys)]
    order = np.argsort(-view.maps.head("self", 1, 2)[3], kind="stable")[: len(places)]
    assert places == [int(j) for j in order] and len(places) == 4
    assert len(bars.data[0].y) == sentiment.n_heads + 1  # each head, and their sum
    # no token chosen: the view opens on the first content token's row, says so, and draws it
    opened, bars = panel.figures(view, internals, "self", 1, 2, None)
    first = next(i for i, t in enumerate(view.maps.queries["self"]) if t.strip().isalpha())
    assert f'data-query="{first}"' in opened and "the first content token" in opened
    cells = [float(x) for x in re.findall(r'<td data-key="\d+">([0-9.]+)</td>', opened)]
    np.testing.assert_allclose(cells, view.maps.head("self", 1, 2)[first].astype(np.float32), atol=6e-4)
    assert len(bars.data[0].y) == sentiment.n_heads + 1
    assert "the first content token" not in steps  # a token chosen: no note
    t_view = translate(translation, GERMAN, "greedy")[0]
    t_internals = panel.record(ModelRegistry.of(translation), t_view)
    # a German token is no row of cross-attention: the step slider's row is shown
    assert (
        panel.query_of("cross", "src:1", 2) == (1, "the step's row") and panel.query_of("encoder", "src:1", 2)[0] == 1
    )
    german = t_view.maps.queries["encoder"]
    assert panel.query_of("encoder", None, 2, german) == (0, "the first content token") and german[0].strip().isalpha()
    assert panel.query_of("encoder", None, 2, ["<s>", ".", german[0]])[0] == 2  # nor a special token or punctuation
    steps, _ = panel.figures(t_view, t_internals, "decoder", 0, 1, "src:1", 2)
    cells = [float(x) for x in re.findall(r'<td data-key="\d+">([0-9.]+)</td>', steps)]
    np.testing.assert_allclose(cells, t_view.maps.head("decoder", 0, 1)[1].astype(np.float32), atol=6e-4)
    Tt = len(t_view.steps)
    assert Tt >= 2 and f"{Tt - 2} key(s) hidden" in steps  # causal: step 2 reads <s> and step 1's output only


def test_a_transformers_model_answers_to_the_cores_hook_names(hf_classifier):
    """The adapter of a transformers model caches the same names as ours, in the same layout (B, T, H, hs)."""
    a = hf_classifier.adapter
    ids = torch.tensor([a.wrap(a.tokenize(REVIEW)[0])], device=a.device)
    names = ["blocks.0.attn.hook_q", "blocks.0.attn.hook_v", "blocks.1.attn.hook_z"]
    run, cache = a.run_with_cache(lambda: a.forward(ids, need_weights=True), names)
    assert sorted(cache) == sorted(names)
    T, H = ids.size(1), a.n_heads
    assert all(cache[n].shape[:3] == (1, T, H) for n in names)
    # hook_z through W_O, summed over the heads, plus the bias, is the attention block's output projection
    out = a.attention_parts()["self"][1].out
    z = cache["blocks.1.attn.hook_z"]
    torch.testing.assert_close(
        torch.einsum("bthe,hed->btd", z, a.W_O("self")[1]) + out.bias, out(z.flatten(2)), rtol=0, atol=1e-5
    )
    with pytest.raises(KeyError, match="no hook point"):
        a.run_with_cache(lambda: a.forward(ids), ["blocks.9.attn.hook_z"])
