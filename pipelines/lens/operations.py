"""The lens operations, each written once as a method of LensMethods over its pipeline's `lens_family` (family.py: the
pass to run, the stack read out, where the answer is read, the positions' labels, how a target is named): the logit
and tuned lens, direct logit attribution, both from one pass, each head switched off, and activation patching. Every
pipeline of ours inherits them; a served pipeline gets them all from @runs_model (pipelines.hosting.serving). Steps
and positions count from 0; a bad request raises ValueError with a plain message."""

from dataclasses import dataclass

import torch

from pipelines.lens import attribution, patching, why_head
from pipelines.lens.attribution import Attribution
from pipelines.lens.family import Family, Read
from pipelines.lens.logit_lens import Lens, logit_lens, logit_lens_at
from pipelines.lens.tuned import translators_for
from pipelines.pipeline import runs_model


@dataclass(frozen=True)
class LayerByLayer:
    """What the Layer by layer section draws for one step, from one pass: the lens and the attribution; a step whose
    outputs do not name the contrast asked for (layer_by_layer_steps) has none, and `why_not` says so."""

    lens: Lens
    attribution: Attribution | None
    why_not: str = ""


def output_id(family: Family, pipe, value, logits: torch.Tensor, what: str = "output") -> int:
    """An output id from an id, or from the text of one of the 10 most likely outputs of logits (V,) (a label's name),
    or from a text that is one token; ValueError otherwise."""
    if isinstance(value, (int, torch.Tensor)) and not isinstance(value, bool):
        i = int(value)
        if not 0 <= i < logits.numel():
            raise ValueError(f"{what} {i} is not an id of this model (0..{logits.numel() - 1})")
        return i
    text = family.output_text(pipe)
    for i in logits.topk(min(10, logits.numel())).indices.tolist():
        if text(i).strip() == str(value).strip():
            return i
    ids = family.tokenize(pipe, str(value))
    if len(ids) == 1:
        return ids[0]
    raise ValueError(f"{value!r} is not one of the 10 most likely outputs here, nor one token: give its id")


def _cached(pipe, read: Read, names: list[str]):
    with torch.no_grad():
        return pipe.adapter.run_with_cache(lambda: read.forward(read.ids), names)


def _lens(family: Family, pipe, read: Read, cache: dict, kind: str) -> Lens:
    translators, said = translators_for(pipe, read.stack, kind)
    return logit_lens(read.stack, cache, read.tokens, family.output_text(pipe), read.real, translators, said)


def _answer(family: Family, pipe, read: Read, logits: torch.Tensor, position: int, target, contrast):
    """(target, contrast) output ids at `position` (logits (V,) there): target by default the output produced there,
    else the most likely."""
    default = read.produced[position] if read.produced else logits.argmax()
    t = output_id(family, pipe, default if target is None else target, logits, "target")
    return t, None if contrast is None else output_id(family, pipe, contrast, logits, "contrast")


def _attribute(family: Family, pipe, read: Read, out, cache: dict, position: int, target, contrast) -> Attribution:
    logits = family.answers(out)[0, position].float()  # (V,)
    t, c = _answer(family, pipe, read, logits, position, target, contrast)
    total = float(logits[t] - (logits[c] if c is not None else 0.0))
    text = family.output_text(pipe)
    labels = (text(t), None if c is None else text(c))
    return attribution.direct_logit_attribution(read.stack, cache, total, t, c, position, labels, family.pool(out))


def _runner(family: Family, pipe, read: Read) -> patching.Runner:
    """The read's answer (B, V) from a batch of ids into its stack, run under hooks; from a block's input on where
    the family's model can start there."""
    registry, logits_from = pipe.adapter.model.hook_registry, family.from_layer(pipe, read)

    def run(ids, hooks):
        with registry.hooks(hooks):
            return family.answers(read.forward(ids))[:, read.position].float()

    def run_from(layer, resid, ids, hooks):
        with registry.hooks(hooks):
            return logits_from(layer, resid, ids).float()

    return patching.Runner(run, read.stack, run_from if logits_from is not None else None)


class LensMethods:
    """Layer by layer, for a pipeline whose `lens_family` describes its passes. text: the input (a prompt, review or
    sentence); step: which answer (a new token or decoding step of `result`, from 0; a review has one, 0); result:
    the output the steps are of (None: decoded greedily now, where a step needs one); chat: the prompt through the
    chat template; target, contrast: outputs as ids, labels or texts (default: the output produced, else the most
    likely; no contrast)."""

    lens_family: Family

    @runs_model
    def logit_lens(self, text: str, step: int = 0, result=None, chat: bool = False, kind: str = "logit") -> Lens:
        """pipelines.lens.Lens of what the model read for answer `step`; kind "tuned": through this model's tuned
        lens (the logit lens, said so in its note, where it has none)."""
        read = self.lens_family.read(self, text, step, result, chat)
        return _lens(self.lens_family, self, read, _cached(self, read, read.stack.names())[1], kind)

    @runs_model
    def direct_logit_attribution(self, text: str, target=None, contrast=None, step=0, result=None, chat=False):
        """pipelines.lens.Attribution: each head's and feed-forward layer's direct part of the logit of `target`
        (minus `contrast`'s) at answer `step`."""
        read = self.lens_family.read(self, text, step, result, chat)
        out, cache = _cached(self, read, attribution.names(read.stack))
        return _attribute(self.lens_family, self, read, out, cache, read.position, target, contrast)

    @runs_model
    def layer_by_layer(self, text: str, target=None, contrast=None, step=0, result=None, chat=False, kind="logit"):
        """LayerByLayer: logit_lens and direct_logit_attribution of one pass."""
        family, read = self.lens_family, self.lens_family.read(self, text, step, result, chat)
        out, cache = _cached(self, read, read.stack.names() + attribution.names(read.stack))
        lens = _lens(family, self, read, cache, kind)
        return LayerByLayer(lens, _attribute(family, self, read, out, cache, read.position, target, contrast))

    @runs_model
    def layer_by_layer_steps(self, text: str, target=None, contrast=None, result=None, chat=False, kind="logit"):
        """[LayerByLayer] of every step of `result`, layer_by_layer's for each, from ONE pass over it (causal: what
        the model read at step s is that pass's first positions): the section moves from step to step without
        running the model. A step whose outputs do not name `contrast` has no attribution (why_not)."""
        family, (read, positions) = self.lens_family, self.lens_family.read_steps(self, text, result, chat)
        out, cache = _cached(self, read, read.stack.names() + attribution.names(read.stack))
        if family.prefix_lens:
            translators, said = translators_for(self, read.stack, kind)
            text_of = family.output_text(self)
            lenses = logit_lens_at(read.stack, cache, read.tokens, text_of, positions, translators, said)
        else:  # every step reads the whole pass
            lenses = [_lens(family, self, read, cache, kind)] * len(positions)
        steps = []
        for lens, p in zip(lenses, positions):
            try:
                steps.append(LayerByLayer(lens, _attribute(family, self, read, out, cache, p, target, contrast)))
            except ValueError as e:  # this step's outputs do not name the contrast: said for this step only
                steps.append(LayerByLayer(lens, None, str(e)))
        return steps

    @runs_model(background=True)
    def switch_off(self, text: str, target=None, contrast=None, step=0, result=None, chat=False, progress=None,
                   stop=None) -> patching.SwitchedOff:  # fmt: skip
        """pipelines.lens.patching.SwitchedOff: each head's whole effect on the logit (difference) that
        direct_logit_attribution splits (same arguments), the intact run's minus that with the head's output zeroed
        (`cross`: the cross-attention heads', where there are); progress(layers done, layers), stop() ends it there
        (the rows not run are NaN)."""
        family, read = self.lens_family, self.lens_family.read(self, text, step, result, chat)
        runner = _runner(family, self, read)
        with torch.no_grad():
            logits = runner.run(read.ids, [])[0]
        t, c = _answer(family, self, read, logits, read.position, target, contrast)
        n, L = len(family.switched), runner.n_layers
        part = lambda i: None if progress is None else lambda done, _: progress(i * L + done, n * L)  # noqa: E731
        grids = [patching.switch_off(runner, read.ids, t, c, part(i), stop, a) for i, a in enumerate(family.switched)]
        text_of = family.output_text(self)
        cross = grids[1][0] if n > 1 else None
        return patching.SwitchedOff(grids[0][0], grids[0][1], text_of(t), None if c is None else text_of(c), cross)

    @runs_model(background=True)
    def patch(self, clean: str, corrupted: str, over: str = "resid", exact: bool = True, target=None, contrast=None,
              step=None, progress=None, stop=None, last_only: bool = False, cells=None,
              max_seconds=None) -> patching.Patching:  # fmt: skip
        """pipelines.lens.patching.Patching: each state (over "resid", "attn_out", "mlp_out" or "heads") of the clean
        input put back into a run on the corrupted one; the metric the logit difference of the two runs' answers
        (target, contrast: others; a translation's at decoding `step`, None: the first at which they differ), 0 the
        corrupted run and 1 the clean one. exact=False: attribution patching (one forward and one backward).
        progress(done, total) a layer at a time of an exact grid; stop() True ends it there (the rows not run are
        NaN). last_only: heads patched at the last position only (by default at every position, inputs of one
        length). cells: an exact grid's positions grouped or the last ones only (pipelines.lens.cost.Cells);
        max_seconds: an exact grid estimated past it is not run (pipelines.lens.cost.TooCostly, naming the coarser
        grids that fit)."""
        family = self.lens_family
        first, second, where = family.patch_reads(self, clean, corrupted, step)
        runner = _runner(family, self, second)
        with torch.no_grad():
            a, b = (runner.run(r.ids, [])[0] for r in (first, second))
        t = output_id(family, self, a.argmax() if target is None else target, a, "target")
        c = output_id(family, self, family.patch_contrast(self, t, b) if contrast is None else contrast, b, "contrast")
        text_of = family.output_text(self)
        if t == c:
            raise ValueError(f"both inputs answer {text_of(t)!r}: there is no difference to patch back; name another "
                             "answer as the contrast")  # fmt: skip
        said = f"The metric: the logit of {text_of(t)!r} (the first input's answer) minus {text_of(c)!r}'s{where}."
        run = dict(progress=progress, stop=stop, last_only=last_only, cells=cells, max_seconds=max_seconds)
        return patching.patch(runner, first.ids, second.ids, t, c, over, exact, second.tokens, said=said, **run)

    @runs_model
    def score_attribution(self, text: str, layer: int, head: int, query: int, key: int, step=None, kind=None,
                          result=None):  # fmt: skip
        """pipelines.lens.score_parts.ScoreParts: head `head` of layer `layer`'s pre-softmax score at (query, key)
        taken apart into (query-side part x key-side part) terms over the parts of the residual stream feeding the
        layer (every norm's scale frozen); positions into the model's own token sequence(s). kind: the attention
        (None: the family's own, "causal", "self" or "cross"; a translator: "encoder", "decoder" or "cross", the
        query a decoding step); result: the output the positions are of (None: the input as the model reads it; a
        translation: greedy now)."""
        family = self.lens_family
        return family.score_parts(self, text, layer, head, query, key, step, kind or family.score_kind, result)

    @runs_model
    def composition(self, kind: str = "k", attention: str | None = None):
        """pipelines.lens.composition.Composition: Q-, K- or V-composition (kind "q", "k", "v") of every earlier head
        into every later head of `attention` (None: the model's first kind), from the weights, beside a random
        baseline."""
        return why_head.composition(self, kind, attention)

    @runs_model
    def copying_scores(self, attention: str | None = None):
        """pipelines.lens.composition.Copying: each head's copying score (L, H) from its full OV circuit."""
        return why_head.copying_scores(self, attention)

    @runs_model
    def copied_tokens(self, layer: int, head: int, n: int = 10, attention: str | None = None):
        """[(token, how much the head's OV circuit raises it when it attends to it)]: the n tokens the head copies
        most (the diagonal of W_E W_OV W_U, the norms folded in)."""
        return why_head.copied_tokens(self, layer, head, n, attention)

    @runs_model(background=True)
    def head_table_over(self, texts, progress=None, stop=None, name: str = "", effects: bool = True):
        """pipelines.attention.over_set.HeadTableOverSet: the head table's numbers on each of `texts` (or a bundled
        set's name: pipelines.attention.over_set.SETS), their mean and standard deviation per head, n; progress(done,
        n) after each input, stop() True ends it between inputs; effects=False: the attention columns alone, without
        switching every head off on every input (most of the cost). A language model (its effect on its first new
        token) also takes an over_set.InductionSet (random tokens repeated): the attention columns and induction
        score."""
        return why_head.head_table_over(self, texts, progress, stop, name, effects)
