"""The layer-by-layer views of each task's pipeline: which pass to cache (the input as the pipeline reads it), which
stack to read out (readout.py, by adapter), and targets given as an output id, a label's index, or the text of an
output. The pipelines' `logit_lens` and `direct_logit_attribution` call these."""

from collections.abc import Callable

import torch

from pipelines.attention.attention_maps import token_texts
from pipelines.lens import attribution, patching
from pipelines.lens.attribution import Attribution
from pipelines.lens.logit_lens import Lens, logit_lens, logit_lens_at
from pipelines.lens.readout import ClassifierReadout, Readout, decoder_readout, lm_readout
from pipelines.lens.tuned import tuned_lens_for
from pipelines.models.adapter import OurCausalLM, OurClassifier, OurSeq2Seq

READOUTS: dict[type, Callable] = {
    OurCausalLM: lm_readout,
    OurSeq2Seq: decoder_readout,
    OurClassifier: ClassifierReadout,
}


def readout_of(adapter) -> Readout:
    """The stack an adapter's model answers from; ValueError for a model read through `transformers`, whose residual
    stream this project does not name."""
    for cls, make in READOUTS.items():
        if isinstance(adapter, cls):
            return make(adapter.model)
    raise ValueError(
        "Layer by layer reads the residual stream through this project's hook points: it is there for the models "
        "of this project (from scratch or with public weights loaded into our code), not for a transformers model."
    )


def output_id(value, logits: torch.Tensor, text: Callable[[int], str], tokenize=None, what: str = "output") -> int:
    """An output id from an id, or from the text of one of the 10 most likely outputs of logits (V,) (then from a text
    that tokenizes to one token, where tokenize is given); ValueError otherwise."""
    if isinstance(value, (int, torch.Tensor)) and not isinstance(value, bool):
        i = int(value)
        if not 0 <= i < logits.numel():
            raise ValueError(f"{what} {i} is not an id of this model (0..{logits.numel() - 1})")
        return i
    wanted = str(value).strip()
    for i in logits.topk(min(10, logits.numel())).indices.tolist():
        if text(i).strip() == wanted:
            return i
    ids = tokenize(str(value)) if tokenize is not None else []
    if len(ids) == 1:
        return ids[0]
    raise ValueError(f"{value!r} is not one of the 10 most likely outputs here, nor one token: give its id")


def _cached(adapter, forward, names) -> tuple[object, dict]:
    with torch.no_grad():
        return adapter.run_with_cache(forward, names)


def _attribute(readout, cache, logits, target, contrast, text, tokenize, position=-1, pool=None) -> Attribution:
    t = output_id(logits.argmax() if target is None else target, logits, text, tokenize, "target")
    c = None if contrast is None else output_id(contrast, logits, text, tokenize, "contrast")
    total = float(logits[t] - (logits[c] if c is not None else 0.0))
    return attribution.direct_logit_attribution(
        readout, cache, total, t, c, position, (text(t), None if c is None else text(c)), pool
    )


# --- next word ---------------------------------------------------------------------------------------------------


def lm_ids(pipe, prompt: str, result=None, step: int = 1, chat: bool = False) -> list[int]:
    """What the model read when it chose new token `step` (1-based) of `result`, or the prompt as it reads it."""
    if result is None:
        return list(pipe.encode(prompt, chat).ids)
    if not 1 <= step <= max(len(result.steps), 1):
        raise ValueError(f"step {step} is not one of this continuation's steps (1..{len(result.steps)})")
    return list(result.sequence_ids[: len(result.tokens) + step - 1])


def _lm_pass(pipe, ids: list[int], names: list[str]):
    if not ids:
        raise ValueError("the prompt has no tokens")
    a = pipe.adapter
    x = torch.tensor([ids], device=a.device)  # (1, T)
    return _cached(a, lambda: a.forward(x), names)


def names_for(readout: Readout, lens: bool, attribute: bool) -> list[str]:
    """The hook points a lens and/or an attribution read: one pass serves both."""
    return (readout.names() if lens else []) + (attribution.names(readout) if attribute else [])


LENS_KINDS = ("logit", "tuned")  # how a state is read out: as it is, or through its layer's translator (tuned.py)
NO_TUNED_LENS = (
    "This model has no tuned lens (one is trained by `python -m training.tuned_lens --model ...`, for these very "
    "weights; a training step's snapshot has none): the logit lens is shown."
)


def translators_for(pipe, readout: Readout, kind: str):
    """(a tuned lens's translators or None, a note) for reading `readout` the `kind` way (LENS_KINDS)."""
    if kind not in LENS_KINDS:
        raise ValueError(f"lens kind {kind!r} is not one of {', '.join(LENS_KINDS)}")
    if kind == "logit":
        return None, ""
    tuned = tuned_lens_for(getattr(pipe, "source", None), readout, pipe.adapter.device)
    return (tuned.translators, "") if tuned is not None else (None, NO_TUNED_LENS)


def lm_layer_by_layer(
    pipe, prompt, target=None, contrast=None, result=None, step=1, chat=False, lens=True, attr=True, kind="logit"
):
    """(Lens or None, Attribution or None) of what the model had read at `step`, from one pass; kind: LENS_KINDS."""
    ids, readout, a = lm_ids(pipe, prompt, result, step, chat), readout_of(pipe.adapter), pipe.adapter
    run, cache = _lm_pass(pipe, ids, names_for(readout, lens, attr))
    tokenize = lambda s: a.tokenize(s)[0]  # noqa: E731
    out = None
    if lens:
        translators, missing = translators_for(pipe, readout, kind)
        out = logit_lens(readout, cache, [a.token_text(i) for i in ids], a.token_text, translators=translators)
        out.note = f"{missing} {out.note}" if missing else out.note
    return (
        out,
        _attribute(readout, cache, run.logits[0, -1].float(), target, contrast, a.token_text, tokenize)
        if attr
        else None,
    )


def lm_layer_by_layer_steps(pipe, result, target=None, contrast=None, kind="logit") -> list[tuple]:
    """[(Lens, Attribution or the error that made it fail: a contrast no step's tokens name)] of every step of
    `result`, from ONE pass over its sequence (causal: what the model read at step s is that pass's first
    Tp + s - 1 positions): the Layer by layer section moves from step to step without running the model."""
    ids, readout, a = list(result.sequence_ids), readout_of(pipe.adapter), pipe.adapter
    run, cache = _lm_pass(pipe, ids, names_for(readout, True, True))
    positions = [len(result.tokens) + s - 2 for s in range(1, len(result.steps) + 1)]  # each step's last read
    translators, missing = translators_for(pipe, readout, kind)
    lenses = logit_lens_at(readout, cache, [a.token_text(i) for i in ids], a.token_text, positions, translators)
    tokenize = lambda s: a.tokenize(s)[0]  # noqa: E731
    out = []
    for lens, p in zip(lenses, positions):
        lens.note = f"{missing} {lens.note}" if missing else lens.note
        try:
            logits = run.logits[0, p].float()
            out.append((lens, _attribute(readout, cache, logits, target, contrast, a.token_text, tokenize, p)))
        except ValueError as e:  # this step's tokens do not name the contrast: said for this step only
            out.append((lens, e))
    return out


def lm_lens(pipe, prompt: str, result=None, step: int = 1, chat: bool = False, kind: str = "logit") -> Lens:
    return lm_layer_by_layer(pipe, prompt, result=result, step=step, chat=chat, attr=False, kind=kind)[0]


def lm_attribution(pipe, prompt, target=None, contrast=None, result=None, step=1, chat=False) -> Attribution:
    return lm_layer_by_layer(pipe, prompt, target, contrast, result, step, chat, lens=False)[1]


# --- sentiment ---------------------------------------------------------------------------------------------------


def _review_pass(pipe, text: str, names: list[str]):
    read = pipe.encode(text)
    if not read.ids:
        raise ValueError("the text has no tokens")
    a = pipe.adapter
    x = torch.tensor([read.ids], device=a.device)  # (1, T)
    run, cache = _cached(a, lambda: a.forward(x), names)
    return read, x != a.pad_id, run, cache


def sentiment_layer_by_layer(pipe, text: str, target=None, contrast=None, lens=True, attr=True):
    """(Lens or None, Attribution or None) from one pass; target, contrast: a label's index or name (default: the
    predicted label, no contrast)."""
    readout = readout_of(pipe.adapter)
    read, real, run, cache = _review_pass(pipe, text, names_for(readout, lens, attr))
    name = lambda i: pipe.labels[i]  # noqa: E731
    out = logit_lens(readout, cache, token_texts(read.tokens), name, real) if lens else None
    if not attr:
        return out, None
    label = lambda v: pipe.labels.index(v) if isinstance(v, str) and v in pipe.labels else v  # noqa: E731
    pool = run.token_weights[0] if run.token_weights is not None else None
    return out, _attribute(readout, cache, run.logits[0].float(), label(target), label(contrast), name, None, pool=pool)


def sentiment_lens(pipe, text: str) -> Lens:
    return sentiment_layer_by_layer(pipe, text, attr=False)[0]


def sentiment_attribution(pipe, text: str, target=None, contrast=None) -> Attribution:
    return sentiment_layer_by_layer(pipe, text, target, contrast, lens=False)[1]


# --- translation -------------------------------------------------------------------------------------------------


def _sentence_pass(pipe, text: str, result, names: list[str]):
    from pipelines.batching import pad

    result = pipe(text, beam_size=1) if result is None else result
    ids, _, _ = pipe.encode_source([text])
    if len(ids[0]) <= 1:
        raise ValueError("the text has no tokens")
    a = pipe.adapter
    src = pad(ids, a.pad_id, a.device)  # (1, Ts)
    tgt_in = pad([[a.bos_id] + list(result.target_ids)[:-1]], a.pad_id, a.device)  # (1, Tt)
    run, cache = _cached(a, lambda: a.forward(src, tgt_in), names)
    return result, run, cache


def translation_layer_by_layer(pipe, text, step=0, target=None, contrast=None, result=None, lens=True, attr=True):
    """(Lens or None, Attribution or None) from one teacher-forced pass on the translation: the lens over every
    decoding step, the attribution at step `step` (0-based; default target the token produced there)."""
    readout, a = readout_of(pipe.adapter), pipe.adapter
    result, run, cache = _sentence_pass(pipe, text, result, names_for(readout, lens, attr))
    out = logit_lens(readout, cache, ["<s>", *result.target_tokens[:-1]], a.token_text) if lens else None
    if not attr:
        return out, None
    if not 0 <= step < len(result.target_ids):
        raise ValueError(f"step {step} is not one of this translation's steps (0..{len(result.target_ids) - 1})")
    return out, _translation_step(pipe, readout, result, run, cache, step, target, contrast)


def _translation_step(pipe, readout, result, run, cache, step: int, target, contrast) -> Attribution:
    """The attribution at decoding step `step` of a teacher-forced pass (default target: the token produced there)."""
    a = pipe.adapter
    target = result.target_ids[step] if target is None else target
    tokenize = lambda s: a.tokenize(s)[0]  # noqa: E731
    return _attribute(readout, cache, run.logits[0, step].float(), target, contrast, a.token_text, tokenize, step)


def translation_layer_by_layer_steps(pipe, text, target=None, contrast=None, result=None) -> list[tuple]:
    """[(Lens, Attribution or the ValueError of a contrast that step cannot take)] of every decoding step, from the
    one teacher-forced pass translation_layer_by_layer makes (the lens, over every step, is the same for each)."""
    readout, a = readout_of(pipe.adapter), pipe.adapter
    result, run, cache = _sentence_pass(pipe, text, result, names_for(readout, True, True))
    lens = logit_lens(readout, cache, ["<s>", *result.target_tokens[:-1]], a.token_text)
    out = []
    for step in range(len(result.target_ids)):
        try:
            out.append((lens, _translation_step(pipe, readout, result, run, cache, step, target, contrast)))
        except ValueError as e:  # this step's top tokens do not name the contrast: said for this step only
            out.append((lens, e))
    return out


def translation_lens(pipe, text: str, result=None) -> Lens:
    """The decoder's residual stream at each decoding step (teacher-forced on the translation), read out."""
    return translation_layer_by_layer(pipe, text, result=result, attr=False)[0]


def translation_attribution(pipe, text: str, step: int = 0, target=None, contrast=None, result=None) -> Attribution:
    return translation_layer_by_layer(pipe, text, step, target, contrast, result, lens=False)[1]


# --- which state carries the answer (patching) -------------------------------------------------------------------


def _runner(adapter, readout, logits_of, logits_from=None) -> "patching.Runner":
    """A patching Runner over an adapter of ours: logits_of(ids) -> the answer's logits (B, V), run under hooks;
    logits_from(layer, resid, ids) the same from a block's input on, where the model can start there."""
    registry = adapter.model.hook_registry

    def run(ids, hooks):
        with registry.hooks(hooks):
            return logits_of(ids).float()

    def run_from(layer, resid, ids, hooks):
        with registry.hooks(hooks):
            return logits_from(layer, resid, ids).float()

    first = readout.blocks[0].attn
    return patching.Runner(
        run, registry, readout.prefix, len(readout.blocks), first.n_heads, run_from if logits_from else None
    )


def _answers(clean_logits, corrupt_logits, target, contrast, text, tokenize) -> tuple[int, int]:
    t = output_id(clean_logits.argmax() if target is None else target, clean_logits, text, tokenize, "target")
    c = output_id(corrupt_logits.argmax() if contrast is None else contrast, corrupt_logits, text, tokenize, "contrast")
    if t == c:
        raise ValueError(
            f"both inputs answer {text(t)!r}: there is no difference to patch back; name another answer as the contrast"
        )
    return t, c


def _said(p: "patching.Patching", clean: str, corrupted: str, where: str = "") -> "patching.Patching":
    """p with its note saying what the metric compares."""
    p.note = f"The metric: the logit of {clean!r} (the first input's answer) minus {corrupted!r}'s{where}. {p.note}"
    p.note = p.note.strip()
    return p


def _lm_runner(pipe) -> "patching.Runner":
    a, readout = pipe.adapter, readout_of(pipe.adapter)
    last_layer = len(readout.blocks) - 1

    def from_layer(layer, resid, x):
        """The blocks from `layer` on; below the last block, the last one asks its last query alone (the patched
        block is not the last, so the last block's keys and values need no hook) and one row is unembedded."""
        return a.model.forward_from(layer, resid, last_only=layer < last_layer).logits[:, -1]

    return _runner(a, readout, lambda x: a.forward(x).logits[:, -1], from_layer)


def _sentiment_runner(pipe) -> "patching.Runner":
    a = pipe.adapter
    return _runner(
        a, readout_of(a), lambda x: a.forward(x).logits, lambda i, r, x: a.model.forward_from(i, r, x).logits
    )


def _switched_off(runner, ids, logits, target, contrast, text, tokenize, progress, stop) -> "patching.SwitchedOff":
    t = output_id(logits.argmax() if target is None else target, logits, text, tokenize, "target")
    c = None if contrast is None else output_id(contrast, logits, text, tokenize, "contrast")
    grid, intact = patching.switch_off(runner, ids, t, c, progress, stop)
    return patching.SwitchedOff(grid, intact, text(t), None if c is None else text(c))


def lm_switch_off(pipe, prompt, target=None, contrast=None, result=None, step=1, chat=False, progress=None, stop=None):
    """Each head's whole effect on the logit (difference) that direct_logit_attribution splits, on what the model
    had read at `step`."""
    a, runner = pipe.adapter, _lm_runner(pipe)
    ids = torch.tensor([lm_ids(pipe, prompt, result, step, chat)], device=a.device)  # (1, T)
    with torch.no_grad():
        logits = runner.run(ids, [])[0]
    tokenize = lambda s: a.tokenize(s)[0]  # noqa: E731
    return _switched_off(runner, ids, logits, target, contrast, a.token_text, tokenize, progress, stop)


def sentiment_switch_off(pipe, text: str, target=None, contrast=None, progress=None, stop=None):
    """Each head's whole effect on the label's logit (difference) that direct_logit_attribution splits."""
    ids = torch.tensor([pipe.encode(text).ids], device=pipe.adapter.device)
    if not ids.numel():
        raise ValueError("the text has no tokens")
    runner = _sentiment_runner(pipe)
    with torch.no_grad():
        logits = runner.run(ids, [])[0]
    label = lambda v: pipe.labels.index(v) if isinstance(v, str) and v in pipe.labels else v  # noqa: E731
    name = lambda i: pipe.labels[i]  # noqa: E731
    return _switched_off(runner, ids, logits, label(target), label(contrast), name, None, progress, stop)


def translation_switch_off(pipe, text, step=0, target=None, contrast=None, result=None, progress=None, stop=None):
    """Each decoder head's and cross-attention head's whole effect on the logit (difference) that
    direct_logit_attribution splits at decoding step `step` (0-based), teacher-forced on the translation."""
    from pipelines.batching import pad

    a = pipe.adapter
    result = pipe(text, beam_size=1) if result is None else result
    if not 0 <= step < len(result.target_ids):
        raise ValueError(f"step {step} is not one of this translation's steps (0..{len(result.target_ids) - 1})")
    src = pad(pipe.encode_source([text])[0], a.pad_id, a.device)  # (1, Ts)
    tgt = torch.tensor([[a.bos_id] + list(result.target_ids)[:-1]], device=a.device)  # (1, Tt)
    runner = _runner(a, readout_of(a), lambda x: a.forward(src.expand(x.size(0), -1), x).logits[:, step])
    with torch.no_grad():
        logits = runner.run(tgt, [])[0]
    tokenize = lambda s: a.tokenize(s)[0]  # noqa: E731
    L = runner.n_layers
    t = output_id(result.target_ids[step] if target is None else target, logits, a.token_text, tokenize, "target")
    c = None if contrast is None else output_id(contrast, logits, a.token_text, tokenize, "contrast")
    half = lambda offset: None if progress is None else lambda done, _: progress(offset + done, 2 * L)  # noqa: E731
    own, intact = patching.switch_off(runner, tgt, t, c, half(0), stop)
    cross, _ = patching.switch_off(runner, tgt, t, c, half(L), stop, attn="cross_attn")
    return patching.SwitchedOff(own, intact, a.token_text(t), None if c is None else a.token_text(c), cross)


def lm_patch(pipe, clean: str, corrupted: str, over="resid", exact=True, target=None, contrast=None, **run):
    a = pipe.adapter
    ids = [torch.tensor([lm_ids(pipe, text)], device=a.device) for text in (clean, corrupted)]  # (1, T) each
    runner = _lm_runner(pipe)
    with torch.no_grad():
        first, second = (runner.run(x, [])[0] for x in ids)
    t, c = _answers(first, second, target, contrast, a.token_text, lambda s: a.tokenize(s)[0])
    tokens = [a.token_text(i) for i in ids[1][0].tolist()]
    return _said(patching.patch(runner, ids[0], ids[1], t, c, over, exact, tokens, **run), a.token_text(t),
                 a.token_text(c))  # fmt: skip


def sentiment_patch(pipe, clean: str, corrupted: str, over="resid", exact=True, target=None, contrast=None, **run):
    a = pipe.adapter
    ids = [torch.tensor([pipe.encode(text).ids], device=a.device) for text in (clean, corrupted)]
    if not ids[0].numel() or not ids[1].numel():
        raise ValueError("the text has no tokens")
    runner = _sentiment_runner(pipe)
    with torch.no_grad():
        first, second = (runner.run(x, [])[0] for x in ids)
    label = lambda v: pipe.labels.index(v) if isinstance(v, str) and v in pipe.labels else v  # noqa: E731
    target = int(first.argmax()) if target is None else label(target)
    contrast = (1 - target if len(pipe.labels) == 2 else int(second.argmax())) if contrast is None else label(contrast)
    t, c = _answers(first, second, target, contrast, lambda i: pipe.labels[i], None)
    p = patching.patch(runner, ids[0], ids[1], t, c, over, exact, token_texts(pipe.encode(corrupted).tokens), **run)
    return _said(p, pipe.labels[t], pipe.labels[c])


def first_difference(pipe, srcs: list, target_ids: list[int]) -> int:
    """The first decoding step at which the two sources (1, Ts) each, teacher-forced on the clean translation
    target_ids, put different tokens first; ValueError where they never do."""
    a = pipe.adapter
    tgt = torch.tensor([[a.bos_id] + list(target_ids)[:-1]], device=a.device)  # (1, Tt)
    with torch.no_grad():
        first, second = (a.forward(x, tgt).logits[0].argmax(-1) for x in srcs)  # (Tt,) each
    differ = (first != second).nonzero()
    if not len(differ):
        raise ValueError("the two sentences put the same token first at every step of the translation: no answer "
                         "differs, so there is nothing to patch back")  # fmt: skip
    return int(differ[0, 0])


def translation_patch(
    pipe, clean: str, corrupted: str, over="resid", exact=True, target=None, contrast=None, step=None, **run
):
    """The encoder's states patched from the clean sentence into the corrupted one; the metric at decoding step
    `step` of the clean translation (both runs teacher-forced on it; None: the first step at which their answers
    differ): its token against the corrupted run's."""
    from pipelines.batching import pad

    a = pipe.adapter
    readout = readout_of(a)
    encoder = Readout(
        "encoder.", a.model.encoder.blocks, a.model.encoder.final_norm, readout.norm_first, readout.unembed
    )
    result = pipe(clean, beam_size=1)
    srcs = [pad(pipe.encode_source([text])[0], a.pad_id, a.device) for text in (clean, corrupted)]  # (1, Ts) each
    step = first_difference(pipe, srcs, result.target_ids) if step is None else step
    if not 0 <= step < len(result.target_ids):
        raise ValueError(f"step {step} is not one of this translation's steps (0..{len(result.target_ids) - 1})")
    tgt = torch.tensor([[a.bos_id] + list(result.target_ids)[:step]], device=a.device)  # (1, step + 1)
    runner = _runner(a, encoder, lambda x: a.forward(x, tgt.expand(x.size(0), -1)).logits[:, -1])
    with torch.no_grad():
        first, second = (runner.run(x, [])[0] for x in srcs)
    t, c = _answers(first, second, target, contrast, a.token_text, lambda s: a.tokenize(s)[0])
    tokens = [a.token_text(i) for i in srcs[1][0].tolist()]
    p = patching.patch(runner, srcs[0], srcs[1], t, c, over, exact, tokens, **run)
    return _said(p, a.token_text(t), a.token_text(c), f" at decoding step {step + 1}")
