"""The model adapter: the one small interface the pipelines use to reach a model, and its implementation for the
from-scratch models of transformer/. pipelines/models/hf_adapter.py implements it for `transformers` models.

What a pipeline may ask of a model: its device (where every tensor fed to it must be), tokenize with character
offsets, add the special tokens, embed ids, run forward from embeddings (what attribution differentiates),
return attention weights by kind, layer and head, switch heads off for one call, (seq2seq) generate, and read its
internals through the core's named hook points: `run_with_cache(forward, names)` and the weight view `W_O(kind)`
(pipelines/models/hook_names.py names the points of each kind). Nothing else of a model's internals.

Head masks come in one form everywhere: {kind: (L, H) or (L, B, H) multipliers}, 0 = head off (pipelines.attention.heads
builds them from {(kind, layer, head): multiplier}).
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from pipelines.kinds import CAUSAL, CROSS, DECODER, ENCODER, SELF
from pipelines.models.folders import save_folder
from pipelines.models.hook_names import KIND_POINTS, attn_point, block_point
from pipelines.models.tokenizers_io import special_ids
from pipelines.text import SpecialTokensAround, TokenSpan, spans
from transformer import CausalLM, HeadMasks, Seq2SeqTransformer, TransformerClassifier, beam_search, greedy_decode
from transformer.batch_decoding import DecodingBatch
from transformer.generation import Hypothesis, lm_steps, row_limits
from transformer.masks import padding_mask

KindMasks = dict[str, torch.Tensor]  # kind -> (L, H) or (L, B, H) multipliers on the heads' outputs


def _config_field(name: str) -> property:
    """A read-only property: the model config's field `name`."""
    return property(lambda self: getattr(self.model.config, name))


@dataclass
class ClassifierRun:
    """One forward pass of a classifier adapter."""

    logits: torch.Tensor  # (B, C)
    attentions: list[torch.Tensor]  # per layer (B, H, T, T), rows = queries; [] without need_weights
    token_weights: torch.Tensor | None  # (B, T) what the classifier reads of each token (sums to 1), or None
    hidden: list[torch.Tensor] = dataclasses.field(default_factory=list)  # per layer (B, T, D) what it read, if asked
    heads: list[torch.Tensor] = dataclasses.field(default_factory=list)  # per layer (B, T, H, hs) its hook_z, too


@dataclass
class Seq2SeqRun:
    """One teacher-forced pass of a seq2seq adapter."""

    logits: torch.Tensor  # (B, Tt, V)
    encoder: list[torch.Tensor]  # per encoder layer (B, H, Ts, Ts)
    decoder: list[torch.Tensor]  # per decoder layer (B, H, Tt, Tt), causal
    cross: list[torch.Tensor]  # per decoder layer (B, H, Tt, Ts)


@dataclass
class LMRun:
    """One forward pass of a language-model adapter over whole sequences."""

    logits: torch.Tensor  # (B, T, V) the next token's logits after each position
    attentions: list[torch.Tensor]  # per layer (B, H, T, T), every query head, causal; [] without need_weights
    hidden: list[torch.Tensor] = dataclasses.field(default_factory=list)  # L + 1 (B, T, D) when need_hidden


class ModelDevice:
    """`device`: where the adapter's model keeps its weights, so where the pipelines build every tensor they feed it."""

    model: torch.nn.Module

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


class OurModel(ModelDevice):
    """What the adapters of our models (transformer/) share: the model, in eval mode, with its tokenizer, and the
    fields of its config that every one of them has."""

    def __init__(self, model: torch.nn.Module, tokenizer):
        self.model, self.tokenizer = model.eval(), tokenizer

    config = property(lambda self: self.model.config)
    pad_id = _config_field("pad_id")
    vocab_size = _config_field("vocab_size")
    n_heads = _config_field("n_heads")

    def config_dict(self) -> dict:
        return dataclasses.asdict(self.model.config)

    def run_with_cache(self, forward: Callable[[], object], names) -> tuple[object, dict[str, torch.Tensor]]:
        """(forward(), {name: activation}) of the model's hook points `names` (a list or a predicate), cached during
        forward() in this context only (transformer/hooks.py)."""
        cache: dict[str, torch.Tensor] = {}

        def keep(x, name):
            cache[name] = x.detach()

        registry = self.model.hook_registry
        with registry.hooks((name, keep) for name in registry.select(names)):
            run = forward()
        return run, cache

    def W_O(self, kind: str) -> torch.Tensor:
        """(L, H, hs, D) the output projection of each layer of kind `kind`, head by head (detached)."""
        prefix, attn = KIND_POINTS[kind]
        stack = self.model.get_submodule(prefix.rstrip(".")) if prefix else self.model
        return torch.stack([getattr(b, attn).W_O for b in stack.blocks]).detach()

    def hidden_and_heads(self, forward: Callable[[], object], kind: str, heads: bool = False):
        """(forward(), [what each block of kind `kind` read (B, T, D)], [each block's hook_z (B, T, H, hs)] if
        heads)."""
        n = self.head_layers[kind]
        names = [block_point(kind, i, "hook_resid_pre") for i in range(n)]
        names += [attn_point(kind, i, "hook_z") for i in range(n)] if heads else []
        run, cache = self.run_with_cache(forward, names)
        z = [cache[attn_point(kind, i, "hook_z")] for i in range(n)] if heads else []
        return run, [cache[names[i]] for i in range(n)], z


class TokenizerMixin:
    """tokenize / detokenize over a `tokenizers.Tokenizer` (ours) with character offsets."""

    tokenizer = None

    def tokenize(self, text: str) -> tuple[list[int], list[TokenSpan]]:
        """(ids, TokenSpans into `text`) of the text's own tokens, without special tokens."""
        enc = self.tokenizer.encode(text, add_special_tokens=False)
        return list(enc.ids), spans(enc, text)

    def tokenize_many(self, texts: list[str]) -> list[list[int]]:
        return [list(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)]


class DecodingMixin:
    """Text of a seq2seq adapter's output ids; both kinds of tokenizer (tokenizers', transformers') decode alike."""

    tokenizer = None
    eos_id: int

    def detokenize(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True).strip()

    def token_text(self, token_id: int) -> str:
        if token_id == self.eos_id:
            return "</s>"
        return self.tokenizer.decode([token_id], skip_special_tokens=False).strip() or "␣"


class OurClassifier(OurModel, TokenizerMixin, SpecialTokensAround):
    """The adapter for transformer.TransformerClassifier with a tokenizers.Tokenizer."""

    kind = "ours"

    def __init__(self, model: TransformerClassifier, tokenizer):
        super().__init__(model, tokenizer)
        # Special tokens around the text's own: none for our BPE, [CLS] ... [SEP] for a model from BERT weights.
        self.prefix, self.suffix = special_ids(tokenizer) if tokenizer is not None else ([], [])
        self.n_prefix, self.n_suffix = len(self.prefix), len(self.suffix)

    max_len = _config_field("max_len")

    @property
    def head_layers(self) -> dict[str, int]:
        return {SELF.name: self.model.config.n_layers}

    def special_name(self, token_id: int) -> str:
        return self.tokenizer.id_to_token(token_id)

    def forward(
        self, ids: torch.Tensor, need_weights: bool = False, head_mask: KindMasks | None = None, need_hidden=False
    ):
        """ids (B, T) padded with pad_id -> ClassifierRun (with what each layer read and its heads' outputs, read from
        the hook points, if need_hidden)."""
        mask = None if head_mask is None else head_mask["self"]
        run = lambda: self.model(ids, need_weights=need_weights, head_mask=mask)  # noqa: E731
        out, hidden, heads = self.hidden_and_heads(run, SELF.name, heads=True) if need_hidden else (run(), [], [])
        return ClassifierRun(out.logits, list(out.attentions or []), out.pool_weights, hidden, heads)

    def logits_from_layer(
        self,
        layer: int,
        hidden: torch.Tensor | None,
        ids: torch.Tensor,
        head_mask: KindMasks | None = None,
        heads: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits (B, C) of ids (B, T) when only the heads of layer `layer` and later ones change: the blocks from
        it on run again on hidden (B, T, D), what it read in a pass on ids (ClassifierRun.hidden[layer]); with heads
        (B, T, H, hs), its heads' outputs in that pass (ClassifierRun.heads[layer]), that block does not attend
        again."""
        mask = None if head_mask is None else head_mask["self"]
        return self.model.forward_from(layer, hidden, ids, head_mask=mask, z=heads).logits

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, D): token plus hashed n-gram embeddings, what the encoder scales and positions."""
        m = self.model
        tok = m.tok_emb(ids)
        if m.ngram_emb is not None:
            tok = tok + m.ngram_emb(ids) / m.encoder.scale
        return tok

    def logits_from_embeddings(self, emb: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """emb (B, T, D) in place of embed(ids), ids (B, T) for the mask -> logits (B, C)."""
        m = self.model
        mask = padding_mask(ids, m.config.pad_id)  # (B, 1, 1, T)
        x = m.encoder(emb, mask).memory  # (B, T, D)
        weights = m.pool_weights(x, mask[:, 0, 0, :])  # (B, T)
        return m.classify(x, weights)

    def save(self, folder: Path, max_len: int, preprocessing: dict) -> None:
        save_folder(self.model, self.tokenizer, folder, max_len, preprocessing)


class OurSeq2Seq(OurModel, DecodingMixin, TokenizerMixin):
    """The adapter for transformer.Seq2SeqTransformer with a tokenizers.Tokenizer (shared vocabulary)."""

    kind = "ours"

    model: Seq2SeqTransformer
    bos_id = _config_field("bos_id")  # what the decoder reads first
    eos_id = _config_field("eos_id")

    @property
    def max_source(self) -> int:
        """Source tokens the model reads at most, EOS included."""
        return self.model.config.max_len - 1

    @property
    def head_layers(self) -> dict[str, int]:
        c = self.model.config
        return {ENCODER.name: c.n_encoder_layers, DECODER.name: c.n_decoder_layers, CROSS.name: c.n_decoder_layers}

    def source_ids(self, ids: list[int]) -> list[int]:
        """The source the encoder reads: the text's ids cut to fit, then EOS."""
        return ids[: self.max_source - 1] + [self.eos_id]

    @staticmethod
    def _masks(head_mask: KindMasks | None) -> HeadMasks | None:
        return None if head_mask is None else HeadMasks(head_mask["encoder"], head_mask["decoder"], head_mask["cross"])

    def generate(
        self, src: torch.Tensor, beam_size: int, alpha: float, head_mask: KindMasks | None = None, limits=None
    ) -> list[Hypothesis]:
        """The best output for each row of src (B, Ts): greedy for beam_size 1, else beam search. limits (B,):
        row b stops after limits[b] tokens."""
        masks = self._masks(head_mask)
        if beam_size <= 1:
            return greedy_decode(self.model, src, head_mask=masks, limits=limits)
        return beam_search(self.model, src, beam_size=beam_size, alpha=alpha, head_mask=masks, limits=limits)

    def row_limits(self, src: torch.Tensor) -> torch.Tensor:
        """(B,) the most tokens each row may produce, from its own length (as if each row ran alone)."""
        return row_limits(self.model, src)

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, need_weights: bool = False, head_mask: KindMasks | None = None
    ) -> Seq2SeqRun:
        """Teacher-forced: src (B, Ts), tgt_in (B, Tt) = bos + output[:-1] -> Seq2SeqRun."""
        masks = self._masks(head_mask)
        enc = self.model.encode(src, need_weights=need_weights, head_mask=masks)
        dec = self.model.decode(tgt_in, enc, need_weights=need_weights, head_mask=masks)
        return Seq2SeqRun(
            dec.logits, list(enc.attentions or []), list(dec.self_attentions or []), list(dec.cross_attentions or [])
        )

    def embed_source(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model.src_emb(ids)

    def embed_target(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model.tgt_emb(ids)

    def step_log_probs(
        self, src_emb: torch.Tensor, src_ids: torch.Tensor, tgt_emb: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        """src_emb (B, Ts, D), tgt_emb (B, Tt, D) in place of the embeddings of src_ids and the target prefix,
        pos (B,) -> log-probabilities (B, V) of the next token after position pos[b] of row b."""
        m = self.model
        src_mask = padding_mask(src_ids, m.config.pad_id)  # (B, 1, 1, Ts)
        memory = m.encoder(src_emb, src_mask).memory  # (B, Ts, D)
        x = m.decoder(tgt_emb, memory, src_mask=src_mask).hidden  # (B, Tt, D)
        rows = torch.arange(x.size(0), device=x.device)
        return m.lm_head(x[rows, pos]).log_softmax(-1)  # (B, V)

    def save(self, folder: Path, preprocessing: dict) -> None:
        save_folder(self.model, self.tokenizer, folder, self.model.config.max_len, preprocessing)


class OurCausalLM(OurModel, TokenizerMixin):
    """The adapter for transformer.CausalLM (ours, or Llama weights loaded into it) with a tokenizers.Tokenizer.
    Head masks are per query head; grouped key/value heads are the model's business."""

    kind = "ours"

    model: CausalLM
    bos_id = _config_field("bos_id")
    eos_id = _config_field("eos_id")
    max_len = _config_field("max_len")
    n_layers = _config_field("n_layers")

    @property
    def head_layers(self) -> dict[str, int]:
        return {CAUSAL.name: self.model.config.n_layers}

    def forward(
        self, ids: torch.Tensor, need_weights: bool = False, head_mask: KindMasks | None = None, need_hidden=False
    ) -> LMRun:
        """ids (B, T), right-padded if at all (causal: a row's own positions never see its padding) -> LMRun."""
        mask = None if head_mask is None else head_mask[CAUSAL.name]
        run = lambda: self.model(ids, need_weights=need_weights, head_mask=mask)  # noqa: E731
        if not need_hidden:
            out = run()
            return LMRun(out.logits, list(out.attentions or []))
        names = [block_point(CAUSAL.name, i, "hook_resid_pre") for i in range(self.n_layers)] + ["hook_final"]
        out, cache = self.run_with_cache(run, names)
        return LMRun(out.logits, list(out.attentions or []), [cache[n] for n in names])

    def next_log_probs(self, ids: torch.Tensor, lengths: list[int], head_mask: KindMasks | None = None):
        """(B, V) log-probabilities of the token after position lengths[b] - 1 of each right-padded row of ids
        (B, T)."""
        logits = self.forward(ids, head_mask=head_mask).logits  # (B, T, V)
        last = torch.tensor(lengths, device=ids.device) - 1  # (B,)
        return logits[torch.arange(ids.size(0), device=ids.device), last].float().log_softmax(-1)

    def last_log_probs_from_layer(self, layer: int, hidden: torch.Tensor, head_mask: KindMasks | None = None):
        """(B, V) log-probabilities of the token after the last position, from hidden (B, T, D), what block `layer`
        read in a pass over these rows (LMRun.hidden[layer]): only the blocks from `layer` on run again."""
        mask = None if head_mask is None else head_mask[CAUSAL.name]
        return self.model.forward_from(layer, hidden, mask, last_only=True).logits[:, -1].float().log_softmax(-1)

    def steps(self, ids: list[int], max_new_tokens: int, temperature=0.0, top_p=1.0, seed=None, head_mask=None):
        """transformer.generation.lm_steps on this model, on its key/value cache: LMStep after LMStep (stopping
        after its end-of-text token); head_mask {"causal": (L, H)} or None."""
        mask = None if head_mask is None else head_mask[CAUSAL.name]
        return lm_steps(self.model, ids, max_new_tokens, temperature, top_p, seed, head_mask=mask)

    def decoding_batch(self) -> DecodingBatch:
        """Rows of this model decoded together, joining and leaving between steps (transformer.batch_decoding)."""
        return DecodingBatch(self.model)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) ids -> (B, T, D): the token embeddings, what the first block reads (positions are added after)."""
        return self.model.tok_emb(ids)

    def logits_from_embeddings(self, emb: torch.Tensor) -> torch.Tensor:
        """emb (B, T, D) in place of embed(ids) -> logits (B, T, V): the model's forward from its embeddings on."""
        return self.model.forward_from(0, self.model.from_token_vectors(emb)).logits

    def detokenize(self, ids: list[int]) -> str:
        """Generated ids -> text, special tokens left out, spaces kept (it continues the prompt)."""
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def token_text(self, token_id: int) -> str:
        """One token as the views label it: its text without surrounding spaces, a special token by its name,
        '␣' for a token of spaces only."""
        return self.tokenizer.decode([int(token_id)], skip_special_tokens=False).strip() or "␣"

    def save(self, folder: Path, preprocessing: dict) -> None:
        save_folder(self.model, self.tokenizer, folder, self.model.config.max_len, preprocessing)
