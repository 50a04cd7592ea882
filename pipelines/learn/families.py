"""The three families a walk knows, one class each, registered by the adapter that serves the model: how the input
is read, which stack the general steps walk, how the model runs, which steps only it has, and its map."""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from pipelines.attention.attention_maps import token_texts
from pipelines.learn.model_pass import MAX_TOKENS, Read, Stack
from pipelines.learn.walk import ModelMap
from pipelines.models.adapter import OurCausalLM, OurClassifier, OurSeq2Seq
from pipelines.models.hook_names import stack_point
from pipelines.text import clean_text


@dataclass(frozen=True)
class Unembedding:
    """Where a family's next token is read: the last block's output there, the final norm, W_U and the logits."""

    point: str  # the hook point of the state
    state: torch.Tensor  # (D,)
    norm: nn.Module  # nn.Identity for a post-norm stack
    W_U: torch.Tensor  # (D, V)
    logits: torch.Tensor  # (V,) the model's own
    text: Callable[[int], str]  # a token's text
    where: str  # the position, in words


NOT_OURS = "Learn reads our own transformer code; this model is served by transformers"


def _norm_name(c) -> str:
    kind = "RMSNorm" if c.norm == "rmsnorm" else "LayerNorm"
    return f"{'pre' if c.norm_first else 'post'}-norm {kind}"


class Encoder:
    """A classifier: an encoder, its pooling and a linear head."""

    name = "encoder"
    own = ("classifier",)
    writes = False  # a decoder writes its output, one token at a time, under a causal mask

    def read(self, pipe, text: str) -> Read:
        a = pipe.adapter
        text = clean_text(text)
        own, spans = a.tokenize(text)
        keep = MAX_TOKENS - pipe.n_special
        ids, spans = a.wrap(own[:keep]), a.wrap_spans(spans[:keep], text)
        return Read(ids, token_texts(spans), cut=len(own) > keep)

    def stack(self, model) -> Stack:
        c, enc = model.config, model.encoder
        table = enc.positions.table
        return Stack("", enc.blocks, c.positions, table, enc.scale, enc.embed_norm, False, c.norm_first, enc.final_norm)

    def token_vectors(self, model, ids: torch.Tensor) -> torch.Tensor:
        """(1, T) -> (1, T, D): embedding rows, plus the hashed n-gram vectors at their own scale."""
        tok = model.tok_emb.weight[ids]
        if model.ngram_emb is not None:
            tok = tok + model.ngram_emb(ids) / model.encoder.scale
        return tok

    def forward(self, model, read: Read, ids: torch.Tensor, lengths=None):
        return model(ids)

    def training_points(self, p) -> list[str]:
        return [p.stack.point(i, "attn.hook_pattern") for i in range(len(p.stack.blocks))]

    def map(self, model) -> ModelMap:
        c = model.config
        return ModelMap(
            self.name, c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_ff, c.vocab_size, c.positions,
            _norm_name(c), f"{c.pooling} pooling -> classifier ({c.num_labels} labels)",
        )  # fmt: skip


class EncoderDecoder:
    """A translator: the encoder reads the sentence, the decoder writes the translation, cross-attending to it."""

    name = "encoder-decoder"
    own = ("cross_attention", "next_token")
    writes = True

    def read(self, pipe, text: str) -> Read:
        a = pipe.adapter
        source = pipe.source_input(text)
        ids = source.ids[: MAX_TOKENS - 1] + [a.eos_id] if len(source.ids) > MAX_TOKENS else source.ids
        tokens = token_texts(source.tokens[: len(ids) - 1]) + ["</s>"]
        with torch.no_grad():
            hyp = a.generate(torch.tensor([ids], device=a.device), 1, 0.0)[0]
        target = (list(hyp.tokens) + [a.eos_id] * hyp.finished)[:MAX_TOKENS]
        target_in = [a.bos_id] + target[:-1]
        extra = {"target": target, "target_in": target_in, "target_tokens": [a.token_text(i) for i in target]}
        return Read(ids, tokens, extra, cut=len(source.ids) > MAX_TOKENS or source.truncated)

    def stack(self, model) -> Stack:
        c, enc = model.config, model.encoder
        table = enc.positions.table
        return Stack(
            "encoder.", enc.blocks, c.positions, table, enc.scale, enc.embed_norm, False, c.norm_first, enc.final_norm
        )

    def token_vectors(self, model, ids: torch.Tensor) -> torch.Tensor:
        return model.src_emb.weight[ids]

    def forward(self, model, read: Read, ids: torch.Tensor, lengths=None):
        target_in = torch.tensor([read.extra["target_in"]], device=ids.device).expand(ids.size(0), -1)  # (B, Tt)
        return model(ids, target_in)

    def training_points(self, p) -> list[str]:
        """The cross-attention of every decoder layer: where an alignment forms."""
        return [stack_point("decoder.", i, "cross_attn.hook_pattern") for i in range(len(p.model.decoder.blocks))]

    def unembedding(self, p) -> Unembedding:
        """At the first decoding step: the first English token, read from the start token and the German."""
        dec, point = p.model.decoder, stack_point("decoder.", len(p.model.decoder.blocks) - 1, "hook_resid_post")
        first = p.read.extra["target_tokens"][0]
        where = f"The decoder's first step: reading the start token and the German, it wrote {first!r}."
        return Unembedding(point, p.at(point)[0], dec.final_norm, p.model.W_U, p.output.logits[0, 0],
                           p.pipe.adapter.token_text, where)  # fmt: skip

    def map(self, model) -> ModelMap:
        c = model.config
        return ModelMap(
            self.name, c.n_encoder_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_ff, c.vocab_size, c.positions,
            _norm_name(c), f"unembedding -> softmax over {c.vocab_size:,} tokens", c.n_decoder_layers,
        )  # fmt: skip


class Decoder:
    """A decoder-only language model: causal self-attention blocks, the unembedding of the last position."""

    name = "decoder"
    own = ("next_token",)
    writes = True

    def read(self, pipe, text: str) -> Read:
        every = list(pipe.encode(text).ids)
        ids = every[:MAX_TOKENS]
        return Read(ids, [pipe.adapter.token_text(i) for i in ids], cut=len(every) > MAX_TOKENS)

    def stack(self, model) -> Stack:
        c = model.config
        table = model.positions.table if model.positions is not None else None
        return Stack("", model.blocks, c.positions, table, 1.0, nn.Identity(), True, True, model.final_norm)

    def token_vectors(self, model, ids: torch.Tensor) -> torch.Tensor:
        return model.tok_emb.weight[ids]

    def forward(self, model, read: Read, ids: torch.Tensor, lengths=None):
        if lengths is None:
            return model(ids)
        real = torch.arange(ids.size(1), device=ids.device)[None, :] < torch.tensor(lengths, device=ids.device)[:, None]
        return model(ids, key_mask=real)  # real (B, Tk) True = a token: right padding hidden from every row

    def training_points(self, p) -> list[str]:
        return [p.stack.point(i, "attn.hook_pattern") for i in range(len(p.stack.blocks))]

    def unembedding(self, p) -> Unembedding:
        """At the last position: the token that would come after the text."""
        point = stack_point("", len(p.model.blocks) - 1, "hook_resid_post")
        where = f"After the last token, {p.labels[-1].split(':', 1)[1]!r}, the model predicts what comes next."
        return Unembedding(point, p.at(point)[-1], p.model.final_norm, p.model.W_U, p.output.logits[0, -1],
                           p.pipe.adapter.token_text, where)  # fmt: skip

    def map(self, model) -> ModelMap:
        c = model.config
        return ModelMap(
            self.name, c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_ff, c.vocab_size, c.positions,
            _norm_name(c), f"unembedding -> softmax over {c.vocab_size:,} tokens",
        )  # fmt: skip


FAMILIES = {OurClassifier: Encoder(), OurSeq2Seq: EncoderDecoder(), OurCausalLM: Decoder()}


def family_of(pipe):
    """The family of a pipeline's model; ValueError for a model read through `transformers`."""
    for cls, family in FAMILIES.items():
        if isinstance(getattr(pipe, "adapter", None), cls):
            return family
    raise ValueError(NOT_OURS)
