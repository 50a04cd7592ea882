"""TranslationPipeline: German text -> English text, with every attention map and each step's top-k."""

from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import nn

from pipelines import explanations
from pipelines.attention import heads, inside_head
from pipelines.attention.attention_maps import AttentionMaps, translation_maps
from pipelines.attention.heads import HeadKey
from pipelines.batching import pad, sorted_batches
from pipelines.contracts import Seq2SeqAdapter
from pipelines.explanations.faithfulness import QUICK_STEPS
from pipelines.lens.family import Sentence
from pipelines.lens.operations import LensMethods
from pipelines.models import hf_adapter
from pipelines.models.adapter import KindMasks, OurSeq2Seq
from pipelines.models.folders import load_folder
from pipelines.pipeline import AdapterBacked, BatchRunner, runs_model
from pipelines.text import TokenSpan, clean_text
from pipelines.trust.domain import DomainModel, load_domain
from pipelines.trust.finite import guarded
from transformer import Hypothesis, Seq2SeqTransformer

# What a translation may never hold a NaN or an infinity in (pipelines.trust.finite).
FINITE_FIELDS = ("encoder_attentions", "decoder_attentions", "cross_attentions", "steps", "score", "mean_logprob")


@dataclass
class DecodingStep:
    """What the decoder saw when it produced one target token."""

    token: str  # the token produced at this step ('</s>' for the end)
    top_k: list[tuple[str, float]]  # the k most likely next tokens and their probabilities


@dataclass
class TranslationResult:
    translation: str
    source_tokens: list[TokenSpan]  # German subwords (the last one is '</s>')
    target_tokens: list[str]  # produced English subwords, one per step, ending with '</s>' if finished
    encoder_attentions: list[torch.Tensor]  # per layer (H, Ts, Ts), on the CPU (as every result tensor)
    decoder_attentions: list[torch.Tensor]  # per layer (H, Tt, Tt): row t = step t, causal
    cross_attentions: list[torch.Tensor]  # per layer (H, Tt, Ts): row t = step t over the source
    steps: list[DecodingStep]
    score: float  # log-probability of the translation
    truncated: bool  # the source was cut to fit the model
    target_ids: list[int] = field(default_factory=list)  # the produced token ids, one per step
    mean_logprob: float = 0.0  # score per produced token (EOS included): the model's confidence in its output
    # Out of domain: the sentence is unlike the image captions the model learned from (pipelines/trust/domain.py).
    # domain_score is the share of held-out captions that looked at most as typical (None: not fitted).
    out_of_domain: bool = False
    domain_score: float | None = None
    domain_reason: str | None = None  # the least typical signal ("words", "output_logprob", "repeats")
    # kind -> per layer (H, Tk): ||v_j W_O^h||, each value vector through its head's slice of the output projection
    # (pipelines.attention.inside_head): the maps weighted by what each value carries are the maps * these, column by
    # column
    value_norms: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    text: str = ""  # the sentence as given
    beam_size: int | None = None  # the beam width it was decoded with (1 = greedy)

    def attention_maps(self) -> AttentionMaps:
        """Every map by kind ("encoder", "decoder", "cross"), layer and head: (L, H, Tq, Tk), with the tokens."""
        return translation_maps(self)


class SourceInput(NamedTuple):
    """One sentence as the encoder reads it, tokenized once: a server sizes its batch by it
    (pipelines/hosting/serving.py) and the batch runs it (explain_inputs)."""

    text: str  # the sentence as given
    ids: list[int]  # its token ids and EOS, cut to the model's length
    tokens: list[TokenSpan]  # one per id: the kept tokens, then '</s>' (covering no characters, at the end)
    truncated: bool  # the sentence was cut to fit the model


def keys(Ts: int, Tt: int) -> list[tuple[str, int]]:
    """(kind, how many keys it has): the encoder and cross-attention read the source, the decoder its own input."""
    return [("encoder", Ts), ("decoder", Tt), ("cross", Ts)]


def _no_maps() -> dict:
    """A result's map fields when none were computed (need_weights=False)."""
    return dict(encoder_attentions=[], decoder_attentions=[], cross_attentions=[], value_norms={})


def _row_maps(run, carried: dict, row: int, Ts: int, Tt: int) -> dict:
    """One row's maps and value norms (TranslationResult's fields), copied to the CPU (where the views read them; a
    copy even there, so a result does not hold the whole batch's maps)."""
    return dict(
        encoder_attentions=[m[row, :, :Ts, :Ts].to("cpu", copy=True) for m in run.encoder],
        decoder_attentions=[m[row, :, :Tt, :Tt].to("cpu", copy=True) for m in run.decoder],
        cross_attentions=[m[row, :, :Tt, :Ts].to("cpu", copy=True) for m in run.cross],
        value_norms={k: [n[:, :T].to("cpu", copy=True) for n in carried[k][row]] for k, T in keys(Ts, Tt)},
    )


class TranslationPipeline(AdapterBacked, BatchRunner, LensMethods, hf_adapter.OursOrTransformers):
    adapter: Seq2SeqAdapter

    """A translator behind a model adapter (pipelines.models.adapter): ours (a Seq2SeqTransformer with its tokenizer)
    or a `transformers` seq2seq model (pipelines.models.hf_adapter), from a local folder or a Hub repo id."""

    lens_family = Sentence()  # what the lens operations (pipelines.lens.operations) run and read

    def __init__(
        self,
        model,
        tokenizer,
        beam_size: int = 4,
        alpha: float = 0.6,
        domain: DomainModel | None = None,
    ):
        # model: a Seq2SeqTransformer (with its tokenizer) or a ready adapter (tokenizer None)
        self.adapter = OurSeq2Seq(model, tokenizer) if isinstance(model, nn.Module) else model
        self.beam_size, self.alpha = beam_size, alpha
        self.domain = domain

    @property
    def max_src(self) -> int:
        return self.adapter.max_source

    @classmethod
    def from_folder(cls, name_or_path: str, device: str | None, hub_revision: str | None) -> "TranslationPipeline":
        """Our translator's folder or repo (from_pretrained's path for ours)."""
        model, tok, prep, _ = load_folder(Seq2SeqTransformer, name_or_path, device, hub_revision)
        domain = load_domain(prep, tok, model.config.vocab_size, name_or_path)
        return cls(model, tok, prep.get("beam_size", 4), prep.get("alpha", 0.6), domain)

    @classmethod
    def from_transformers(cls, name_or_path: str, device: str | None = None) -> "TranslationPipeline":
        adapter = hf_adapter.HFSeq2Seq.from_pretrained(name_or_path, device)
        prep = hf_adapter.read_preprocessing(name_or_path)
        beams = prep.get("beam_size", getattr(adapter.model.generation_config, "num_beams", None) or 4)
        domain = load_domain(prep, adapter.tokenizer, adapter.vocab_size, name_or_path)
        pipe = cls(adapter, None, beams, prep.get("alpha", 0.6), domain)
        pipe.source = str(name_or_path)
        return pipe

    def save_pretrained(self, folder) -> None:
        """Save model, tokenizer and preprocessing.json (decoding and domain statistics) for from_pretrained."""
        prep = {"beam_size": self.beam_size, "alpha": self.alpha}
        prep |= {"domain": self.domain.to_preprocessing()} if self.domain else {}
        self.adapter.save(folder, prep)

    def domain_check(self, src_ids: list[int], mean_logprob: float) -> tuple[bool, float | None, str | None]:
        """(out of domain, domain score, why: the least typical signal) from the source tokens (EOS dropped) and the
        output's log-probability."""
        if self.domain is None:
            return False, None, None
        ids = [i for i in src_ids if i != self.adapter.eos_id]
        return self.domain.check(ids, {**self.domain.token_signals(ids), "output_logprob": mean_logprob})

    def source_input(self, text: str) -> SourceInput:
        """The sentence tokenized as the encoder reads it: ids (tokens + EOS, cut to the model's length) and spans."""
        cleaned = clean_text(text)
        own, spans = self.adapter.tokenize(cleaned)  # without special tokens
        ids = self.adapter.source_ids(own)
        eos = TokenSpan(self.adapter.eos_id, "", len(cleaned), len(cleaned), "</s>")
        return SourceInput(text, ids, spans[: len(ids) - 1] + [eos], len(own) > self.max_src - 1)

    def encode_source(self, texts: list[str]) -> tuple[list[list[int]], list[SourceInput], list[bool]]:
        """Source ids (tokens + EOS, cut to the model's length), the inputs (source_input), truncated flags."""
        inputs = [self.source_input(t) for t in texts]
        return [i.ids for i in inputs], inputs, [i.truncated for i in inputs]

    def search(
        self, src: torch.Tensor, beam_size: int, alpha: float, head_mask: KindMasks | None = None, limits=None
    ) -> list[Hypothesis]:
        """The best output ids for each row of src (B, Ts): greedy for beam_size 1, else beam search.
        limits (B,): row b stops after limits[b] tokens (adapter.row_limits: as if each row ran alone)."""
        return self.adapter.generate(src, beam_size, alpha, head_mask, limits)

    def head_masks(self, head_mask: dict[HeadKey, float] | None) -> KindMasks | None:
        """{(kind, layer, head): multiplier} -> {kind: (L, H)} (ValueError for a head the model lacks)."""
        return heads.mask_tensors(head_mask, self.head_layers, self.n_heads, self.adapter.device)

    def detokenize(self, ids: list[int]) -> str:
        """Output ids -> English text."""
        return self.adapter.detokenize(ids)

    def token_text(self, token_id: int) -> str:
        return self.adapter.token_text(token_id)

    @property
    def explanation_methods(self) -> tuple[str, ...]:
        """The registered methods that explain a translation (pipelines.explanations.registry)."""
        return explanations.names("translation")

    @runs_model
    def explain(
        self, text: str, method: str | None = None, contrast: dict[int, str] | None = None, result=None, progress=None
    ):
        """Attribution of every produced token to the source tokens (and the target prefix), with each
        cross-attention head's agreement. method: one of explanation_methods (None = the benchmark's most
        faithful); contrast={step: token_text} (0-based step, a top-5 alternative) explains "this token
        rather than that one" at that step. result: a TranslationResult of `text` to reuse (no new decoding).
        progress(steps done, steps) is called as a gradient method goes.
        Returns a pipelines.explanations.Explanation (scores (Tt, Ts))."""
        return explanations.explain_translation(self, text, method, contrast, result, progress)

    @runs_model
    def internals(self, text: str, target_ids: list[int] | None = None):
        """What every head read and wrote (pipelines.attention.inside_head.AttentionInternals, kinds "encoder",
        "decoder", "cross") on this sentence and its output ids (TranslationResult.target_ids; None: translate it now),
        from the same teacher-forced pass that makes the result's maps."""
        target_ids = self(text).target_ids if target_ids is None else target_ids
        return inside_head.translation_internals(self, text, target_ids)

    @runs_model
    def inside_head(self, text: str, kind: str, layer: int, head: int, query: int, target_ids=None):
        """One row of one head, step by step (pipelines.attention.inside_head.HeadInternals); query: a source position
        for "encoder", a decoding step (0-based) for "decoder" and "cross". Its weights equal the result's map row."""
        return self.internals(text, target_ids).head(kind, layer, head, query)

    @runs_model(background=True)
    def faithfulness(self, explanation, max_steps: int | None = QUICK_STEPS):
        """Comprehensiveness and sufficiency over the source tokens, step by step, beside random rankings; on
        at most max_steps steps, evenly spaced (None: every step). The report says which steps (.steps)."""
        return explanations.faithfulness(self, explanation, max_steps=max_steps)

    @torch.no_grad()
    def translate_scored(
        self,
        texts: list[str],
        beam_size: int | None = None,
        alpha: float | None = None,
        batch_size: int = 64,
        head_mask: dict[HeadKey, float] | None = None,
    ) -> list[tuple[str, float, bool, float | None]]:
        """(translation, mean log-probability per token, out of domain, domain score) per sentence, batched."""
        beam_size = self.beam_size if beam_size is None else beam_size
        alpha = self.alpha if alpha is None else alpha
        masks = self.head_masks(head_mask)
        ids, _, _ = self.encode_source(texts)
        out: list = [None] * len(ids)
        for rows, src in sorted_batches(ids, batch_size, self.adapter.pad_id, self.adapter.device):
            for i, hyp in zip(rows, self.search(src, beam_size, alpha, masks)):
                mean_lp = hyp.score / max(1, len(hyp.tokens) + int(hyp.finished))
                out[i] = (self.detokenize(hyp.tokens), mean_lp, *self.domain_check(ids[i], mean_lp)[:2])
        return out

    def translate(self, texts: list[str], *args, **options) -> list[str]:
        """Translations of many sentences (batched, fast path), in input order; the options of translate_scored
        (beam_size, alpha, batch_size, head_mask as in __call__)."""
        return [t[0] for t in self.translate_scored(texts, *args, **options)]

    @torch.no_grad()
    def __call__(
        self,
        text: str,
        beam_size: int | None = None,
        alpha: float | None = None,
        top_k: int = 5,
        head_mask: dict[HeadKey, float] | None = None,
        need_weights: bool = True,
    ) -> TranslationResult:
        """Translate one sentence and show how: attentions of every layer and head, and each step's top-k.
        head_mask: {(kind, layer, head): multiplier}, kind "encoder", "decoder" or "cross"; 0 switches a head
        off for this call only (decoding and the attention maps both run with it). need_weights=False: the
        decoding alone (an API call): no maps, no value norms, and each step's top_k empty. ValueError: no tokens."""
        result = self.explain_many([text], beam_size, alpha, top_k, head_mask, need_weights)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def explain_many(
        self, texts: list[str], beam_size=None, alpha=None, top_k: int = 5, head_mask=None, need_weights=True
    ) -> list[TranslationResult | ValueError]:
        """__call__ for several sentences in one padded batch (a ValueError in place of one without tokens)."""
        inputs = [self.source_input(t) for t in texts]
        return self.explain_inputs(inputs, beam_size, alpha, top_k, head_mask, need_weights)

    @torch.no_grad()
    def _teacher_forced(self, src: torch.Tensor, produced: list[list[int]], masks, top_k: int):
        """One teacher-forced pass over the chosen outputs: (the run with every map, the value norms carried,
        each step's top-k probabilities and ids (B, Tt, k) on the CPU)."""
        a = self.adapter
        tgt_in = pad([[a.bos_id] + p[:-1] for p in produced], a.pad_id, a.device)  # (B, Tt)
        # the maps, and each value vector's norm through its head's W_O from the same pass (the norm views)
        run, carried = inside_head.with_value_norms(
            a, lambda: a.forward(src, tgt_in, need_weights=True, head_mask=masks)
        )
        topv, topi = (t.cpu() for t in run.logits.softmax(-1).topk(top_k, dim=-1))  # (B, Tt, k)
        return run, carried, topv, topi

    @torch.no_grad()
    def explain_inputs(
        self, inputs: list[SourceInput], beam_size=None, alpha=None, top_k: int = 5, head_mask=None, need_weights=True
    ) -> list[TranslationResult | ValueError]:
        """explain_many for sentences already tokenized (source_input): what a server's batch runs.
        Rows do not see each other's padding (masked keys get zero weight; the decoder is causal) and each
        keeps its own length limit, so each result, cut to its lengths, is that of a run on it alone.
        need_weights=False: the decoding alone, without the teacher-forced pass (no maps, norms or top-k)."""
        masks = self.head_masks(head_mask)
        beam_size = self.beam_size if beam_size is None else beam_size
        alpha = self.alpha if alpha is None else alpha
        a = self.adapter
        ids = [i.ids for i in inputs]
        real = [i for i in range(len(inputs)) if len(ids[i]) > 1]
        results: list = [ValueError("the text has no tokens")] * len(inputs)
        if not real:
            return results
        src = pad([ids[i] for i in real], a.pad_id, a.device)  # (B, Ts)
        hyps = self.search(src, beam_size, alpha, masks, a.row_limits(src))
        produced = [h.tokens + ([a.eos_id] if h.finished else []) for h in hyps]
        # One teacher-forced pass over the chosen outputs gives, row by row, exactly what the decoder
        # saw at each step (the decoder is causal), for every layer and head.
        run, carried, topv, topi = self._teacher_forced(src, produced, masks, top_k) if need_weights else (None,) * 4
        for row, i in enumerate(real):
            Ts, Tt = len(ids[i]), max(len(produced[row]), 1)
            tops = zip(topv[row], topi[row]) if need_weights else [((), ())] * len(produced[row])
            steps = [
                DecodingStep(self.token_text(tok), [(self.token_text(int(t)), float(v)) for v, t in zip(vs, ts)])
                for tok, (vs, ts) in zip(produced[row], tops)
            ]
            maps = _row_maps(run, carried, row, Ts, Tt) if need_weights else _no_maps()
            mean_lp = hyps[row].score / max(1, len(produced[row]))
            out_of_domain, domain_score, domain_reason = self.domain_check(ids[i], mean_lp)
            results[i] = TranslationResult(
                translation=self.detokenize(hyps[row].tokens),
                source_tokens=inputs[i].tokens,
                target_tokens=[s.token for s in steps],
                **maps,
                steps=steps,
                score=hyps[row].score,
                truncated=inputs[i].truncated,
                target_ids=produced[row],
                mean_logprob=mean_lp,
                out_of_domain=out_of_domain,
                domain_score=domain_score,
                domain_reason=domain_reason,
                text=inputs[i].text,
                beam_size=beam_size,
            )
        return guarded(results, "translation", FINITE_FIELDS)

    @runs_model
    def score(self, text: str, target_ids: list[int], head_mask: dict[HeadKey, float] | None = None) -> float:
        """Log-probability of the output ids `target_ids` (e.g. TranslationResult.target_ids) given the
        sentence, teacher-forced, with the heads of head_mask switched off."""
        ids, _, _ = self.encode_source([text])
        masks = self.head_masks(head_mask)
        return float(heads.teacher_forced_log_prob(self.adapter, ids[0], list(target_ids), masks)[0])

    @runs_model(background=True)
    def head_table(
        self,
        text: str,
        beam_size: int | None = None,
        alpha: float | None = None,
        agreement: bool = True,
        result: TranslationResult | None = None,
    ) -> list[dict]:
        """One dict per head (kind "encoder" / "decoder" / "cross", layer, head from 0): attention statistics
        on this sentence, agreement of cross-attention heads with the attribution (when explain exists) and
        the effect of switching that head alone off (change of the translation's log-probability).
        result: a TranslationResult of `text` to reuse (no new decoding)."""
        return heads.translation_head_table(self, text, beam_size, alpha, agreement, result)
