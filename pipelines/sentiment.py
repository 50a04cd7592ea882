"""SentimentPipeline: review text -> label, probabilities, tokens with offsets, every attention map."""

from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import nn

from pipelines import explanations
from pipelines.attention import heads, inside_head
from pipelines.attention.attention_maps import AttentionMaps, sentiment_maps
from pipelines.attention.heads import HeadKey
from pipelines.batching import pad, sorted_batches
from pipelines.contracts import ClassifierAdapter
from pipelines.lens.family import Review
from pipelines.lens.operations import LensMethods
from pipelines.models import hf_adapter
from pipelines.models.adapter import OurClassifier
from pipelines.models.folders import load_folder
from pipelines.pipeline import AdapterBacked, BatchRunner, runs_model
from pipelines.text import TokenSpan, clean_text, head_tail, kept_positions
from pipelines.trust.calibration import Temperature
from pipelines.trust.domain import DomainModel, load_domain
from pipelines.trust.finite import guarded, require_finite
from pipelines.trust.weak_spots import WeakSpot, contrast_scores, find_weak_spots
from transformer import TransformerClassifier


@dataclass
class SentimentResult:
    label: str
    probabilities: dict[str, float]  # label -> probability
    tokens: list[TokenSpan]  # the tokens the model saw (after cutting a long review)
    attentions: list[torch.Tensor]  # per layer (H, T, T), rows = queries (on the CPU, as every result tensor)
    pool_weights: torch.Tensor  # (T,) the weight of each token in the pooled vector
    truncated: bool  # True when the review was longer than the model reads
    n_tokens: int  # tokens in the whole review before cutting
    # per layer (H, T): ||v_j W_O^h||, each value vector through its head's slice of the output projection (with
    # the maps; pipelines.attention.inside_head): the maps weighted by what each value carries are attentions * these
    value_norms: list[torch.Tensor] = field(default_factory=list)
    # Out of domain: the text does not look like the English reviews the model learned from (pipelines/trust/domain.py).
    # domain_score is the share of held-out in-domain texts that looked at most as typical (None: not fitted).
    out_of_domain: bool = False
    domain_score: float | None = None
    domain_reason: str | None = None  # the least typical signal ("words", "piece_length", "repeats"); None: not fitted

    @property
    def confidence(self) -> float:
        return self.probabilities[self.label]

    def attention_maps(self) -> AttentionMaps:
        """Every map by kind ("self"), layer and head: (L, H, T, T), with the tokens."""
        return sentiment_maps(self)


class ReviewInput(NamedTuple):
    """One review as the model reads it, tokenized once: a server sizes its batch by it (pipelines/hosting/serving.py)
    and the batch runs it (analyze_inputs)."""

    ids: list[int]  # the kept ids with the model's special tokens around them ([] for a text without tokens)
    tokens: list[TokenSpan]  # one per id (a special token covers no characters)
    n_tokens: int  # the whole review's tokens before cutting, special tokens not counted


def _uniform(T: int) -> torch.Tensor:
    """(T,) equal weights: what a model without pooling weights reads of each token, for lack of better."""
    return torch.full((T,), 1.0 / T)


class SentimentPipeline(AdapterBacked, BatchRunner, LensMethods, hf_adapter.OursOrTransformers):
    adapter: ClassifierAdapter

    """A classifier behind a model adapter (pipelines.models.adapter): ours (a TransformerClassifier with its tokenizer)
    or a `transformers` sequence classifier (pipelines.models.hf_adapter), from a local folder or a Hub repo id."""

    lens_family = Review()  # what the lens operations (pipelines.lens.operations) run and read

    def __init__(
        self,
        model,
        tokenizer,
        max_len: int,
        head_tokens: int,
        labels: list[str],
        calibration: Temperature | None = None,
        domain: DomainModel | None = None,
        contrast: dict[str, tuple[int, int]] | None = None,
    ):
        # model: a TransformerClassifier (with its tokenizer) or a ready adapter (tokenizer None)
        self.adapter = OurClassifier(model, tokenizer) if isinstance(model, nn.Module) else model
        self.max_len, self.labels = max_len, labels
        self.head_tokens = head_tokens  # a long review keeps its first head_tokens and last max_len - head_tokens
        self.calibration = calibration or Temperature()  # applied to every probability the pipeline returns
        self.domain = domain
        # {kind: (pairs flipped, pairs)} on the contrast set, from metrics.json (pipelines/trust/weak_spots.py)
        self.contrast = contrast or {}
        self.metrics: dict = {}  # metrics.json of the model folder, when it has one (from_pretrained)

    @classmethod
    def from_folder(cls, name_or_path: str, device: str | None, hub_revision: str | None) -> "SentimentPipeline":
        """Our classifier's folder or repo (from_pretrained's path for ours)."""
        model, tok, prep, metrics = load_folder(TransformerClassifier, name_or_path, device, hub_revision)
        max_len = min(prep.get("max_len", model.config.max_len), model.config.max_len)
        labels = prep.get("labels", ["negative", "positive"])
        domain = load_domain(prep, tok, model.config.vocab_size, name_or_path)
        calibration = Temperature.from_preprocessing(prep)
        contrast = contrast_scores(metrics)
        pipe = cls(model, tok, max_len, prep.get("head", max_len // 4), labels, calibration, domain, contrast)
        pipe.metrics = metrics  # what training measured on this model (metrics.json): the app's claims come from here
        return pipe

    @classmethod
    def from_transformers(cls, name_or_path: str, device: str | None = None) -> "SentimentPipeline":
        adapter = hf_adapter.HFClassifier.from_pretrained(name_or_path, device)
        prep = hf_adapter.read_preprocessing(name_or_path)
        max_len = min(prep.get("max_len", adapter.max_len), adapter.max_len)
        labels = prep.get("labels", adapter.labels)
        domain = load_domain(prep, adapter.tokenizer, adapter.vocab_size, name_or_path)
        calibration = Temperature.from_preprocessing(prep)
        pipe = cls(adapter, None, max_len, prep.get("head", max_len // 4), labels, calibration, domain)
        pipe.source = str(name_or_path)
        return pipe

    def preprocessing(self) -> dict:
        """What preprocessing.json holds for this pipeline: cutting, labels, temperature, domain statistics."""
        prep = {"max_len": self.max_len, "head": self.head_tokens, "labels": self.labels}
        prep |= self.calibration.to_preprocessing()
        return prep | ({"domain": self.domain.to_preprocessing()} if self.domain else {})

    def save_pretrained(self, folder) -> None:
        """Save model, tokenizer and preprocessing.json (temperature included) for from_pretrained."""
        self.adapter.save(folder, self.max_len, self.preprocessing())

    def calibrated(self, logits: torch.Tensor, lengths) -> torch.Tensor:
        """(B, C) logits of inputs of `lengths` tokens -> (B, C) calibrated probabilities: the one probability
        every result, explanation, deletion curve and head effect shows."""
        return self.calibration.scale(logits, lengths).softmax(-1)

    def domain_check(self, ids: list[int]) -> tuple[bool, float | None, str | None]:
        """(out of domain, domain score, why: the least typical signal) of one text's token ids; (False, None, None)
        without domain statistics."""
        if self.domain is None:
            return False, None, None
        return self.domain.check(ids, self.domain.token_signals(ids))

    def weak_spots(self, text: str) -> list[WeakSpot]:
        """The constructions in `text` this model is measured to misread (negation, "but", "yet" when it flips
        fewer than WEAK_BELOW of the contrast set's pairs of that kind); [] without contrast scores."""
        return find_weak_spots(text, self.contrast)

    @property
    def n_special(self) -> int:
        """Special tokens the model reads around the text's own ([CLS] ... [SEP]; none for ours)."""
        return self.adapter.n_prefix + self.adapter.n_suffix

    def encode(self, text: str) -> ReviewInput:
        """The text as the model reads it, tokenized once: (kept ids, kept TokenSpans, total token count); ids and
        spans include the model's special tokens (a special token covers no characters), the count does not."""
        text = clean_text(text)
        ids, toks = self.adapter.tokenize(text)
        if not ids:
            return ReviewInput([], [], 0)
        keep = kept_positions(len(ids), self.max_len - self.n_special, self.head_tokens)
        kept_ids, kept_toks = [ids[i] for i in keep], [toks[i] for i in keep]
        return ReviewInput(self.adapter.wrap(kept_ids), self.adapter.wrap_spans(kept_toks, text), len(ids))

    def __call__(
        self, text: str, head_mask: dict[HeadKey, float] | None = None, need_weights: bool = True
    ) -> SentimentResult:
        """Classify one text, with every attention map. head_mask: {("self", layer, head): multiplier}, 0
        switches a head off (this call only). need_weights=False: no attention maps (`attentions` is empty), on
        the model's fast path, for callers that only want the answer. ValueError when it has no tokens."""
        result = self.analyze_many([text], head_mask, need_weights)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def analyze_many(
        self, texts: list[str], head_mask: dict[HeadKey, float] | None = None, need_weights: bool = True
    ) -> list[SentimentResult | ValueError]:
        """__call__ for several texts in one padded batch (a ValueError in place of a text without tokens)."""
        return self.analyze_inputs([self.encode(t) for t in texts], head_mask, need_weights)

    @torch.no_grad()
    def analyze_inputs(
        self, encoded: list[ReviewInput], head_mask: dict[HeadKey, float] | None = None, need_weights: bool = True
    ) -> list[SentimentResult | ValueError]:
        """analyze_many for texts already tokenized (encode): what a server's batch runs.

        Padding changes nothing: the classifier pools over real tokens only and padded keys get zero weight,
        so each row's maps, cut to its own length, are those of a run on that text alone."""
        real = [i for i, (ids, _, _) in enumerate(encoded) if ids]
        results: list = [ValueError("the text has no tokens")] * len(encoded)
        if not real:
            return results
        device = self.adapter.device
        masks = heads.mask_tensors(head_mask, self.head_layers, self.n_heads, device)
        batch = pad([encoded[i][0] for i in real], self.adapter.pad_id, device)  # (B, T)
        run = lambda: self.adapter.forward(batch, need_weights=need_weights, head_mask=masks)  # noqa: E731
        # With the maps, each value vector's norm through its head's W_O, from the same pass (the norm views)
        out, carried = inside_head.with_value_norms(self.adapter, run) if need_weights else (run(), {})
        lengths = [len(encoded[i][0]) for i in real]
        probs = self.calibrated(out.logits, lengths).cpu()  # (B, labels)
        weights = out.token_weights  # (B, T) or None
        for row, i in enumerate(real):
            ids, toks, n = encoded[i]
            T = len(ids)
            out_of_domain, domain_score, domain_reason = self.domain_check(ids)
            results[i] = SentimentResult(
                label=self.labels[int(probs[row].argmax())],
                probabilities={lab: float(p) for lab, p in zip(self.labels, probs[row])},
                tokens=toks,
                attentions=[a[row, :, :T, :T].to("cpu", copy=True) for a in out.attentions],  # (H, T, T)
                pool_weights=_uniform(T) if weights is None else weights[row, :T].to("cpu", copy=True),
                value_norms=[n[:, :T].to("cpu", copy=True) for n in carried["self"][row]] if carried else [],
                truncated=n > T - self.n_special,
                n_tokens=n,
                out_of_domain=out_of_domain,
                domain_score=domain_score,
                domain_reason=domain_reason,
            )
        return guarded(results, "sentiment", ("probabilities", "attentions", "pool_weights"))

    @runs_model(background=True)
    def head_table(self, text: str) -> list[dict]:
        """One dict per head (kind, layer, head from 0): attention statistics on this text and the effect of
        switching that head alone off (change of the predicted label's probability). See pipelines.attention.heads."""
        return heads.sentiment_head_table(self, text)

    @property
    def default_explanation(self) -> dict:
        """{'method', 'why'}: the default explanation measured on this model (its metrics.json), or the project's
        method with a 'why' saying it was not measured on this model (explanations.default_method)."""
        return explanations.default_method("sentiment", self.metrics)

    @property
    def explanation_methods(self) -> tuple[str, ...]:
        """The registered methods that explain a classifier (pipelines.explanations.registry)."""
        return explanations.names("sentiment")

    @runs_model
    def explain(self, text: str, method: str | None = None, target: str | None = None, progress=None, contrast=None):
        """Attribution of each token read toward `target` (default: the predicted label); `method` is one of
        explanation_methods, None = the default (the most faithful in benchmarks/faithfulness.py).
        progress(done, total) is called as a slow method (occlusion) goes; contrast: the other label (why target
        rather than it: pipelines.explanations.run.explain_review).
        Returns a pipelines.explanations.Explanation (tokens, scores (T,), target, method, ...)."""
        return explanations.explain_review(self, text, method, target, progress, contrast)

    @runs_model
    def internals(self, text: str):
        """What every head read and wrote on this review (pipelines.attention.inside_head.AttentionInternals), from the
        same forward pass that makes the result's maps: queries, keys, values, outputs, projections, value norms."""
        return inside_head.sentiment_internals(self, text)

    @runs_model
    def inside_head(self, text: str, layer: int, head: int, query: int, kind: str = "self"):
        """One row of one head, step by step (pipelines.attention.inside_head.HeadInternals): q, every k and v, the
        scores, scaled, masked, the softmax weights (== result.attentions[layer][head, query]), the weighted values, the
        head's output and its projection through the head's slice of W_O."""
        return self.internals(text).head(kind, layer, head, query)

    @runs_model(background=True)
    def faithfulness(self, explanation):
        """Comprehensiveness and sufficiency of an explanation on its own input, beside random rankings."""
        return explanations.faithfulness(self, explanation)

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """The ids the model reads for each text (cut to max_len; [pad] for a text with no tokens)."""
        ids = self.adapter.tokenize_many([clean_text(t) for t in texts])
        cut = self.max_len - self.n_special
        return [self.adapter.wrap(head_tail(i, cut, self.head_tokens)) if i else [self.adapter.pad_id] for i in ids]

    @torch.no_grad()
    def raw_logits(
        self, texts: list[str], batch_size: int = 64, head_mask: dict[HeadKey, float] | None = None
    ) -> tuple[torch.Tensor, list[int]]:
        """((N, C) logits before calibration, on the CPU, tokens read per text), on the fast path, in input order."""
        device = self.adapter.device
        masks = heads.mask_tensors(head_mask, self.head_layers, self.n_heads, device)
        ids = self.encode_many(texts)
        logits = torch.zeros(len(ids), len(self.labels))
        for rows, batch in sorted_batches(ids, batch_size, self.adapter.pad_id, device):
            logits[rows] = self.adapter.forward(batch, head_mask=masks).logits.cpu()
        return logits, [len(i) for i in ids]

    def predict(
        self, texts: list[str], batch_size: int = 64, head_mask: dict[HeadKey, float] | None = None
    ) -> list[dict[str, float]]:
        """Calibrated probabilities for many texts, on the fast path (no attention weights), in input order."""
        logits, lengths = self.raw_logits(texts, batch_size, head_mask)
        probs = self.calibrated(logits, lengths)
        require_finite("sentiment", {"probabilities": probs})
        return [{lab: float(x) for lab, x in zip(self.labels, p)} for p in probs]

    def domain_scores(self, texts: list[str]) -> list[tuple[bool, float | None]]:
        """(out of domain, domain score) for many texts."""
        return [self.domain_check(ids)[:2] for ids in self.encode_many(texts)]
