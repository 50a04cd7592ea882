"""Our models as `transformers` models, for `trust_remote_code=True`.

training/release/hf_export.py copies this file into a published model folder as modeling_attention_demo.py, beside the
`transformer/` files it imports (with `from transformer.x import` rewritten to `from .x import`), and points
config.json's `auto_map` here. The folder then loads with `pip install transformers torch` and nothing of
this project:

    AutoModelForSequenceClassification.from_pretrained(folder, trust_remote_code=True)  # the classifier
    AutoModelForSeq2SeqLM.from_pretrained(folder, trust_remote_code=True)  # the translator
    AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)  # the next-word model

Each model class holds the from-scratch model as `model` (the base_model_prefix), so one model.safetensors, with
the from-scratch model's own parameter names, serves this project's loader and `transformers` alike. The logits
are the from-scratch model's (before the app's calibration), and `output_attentions=True` returns its exact
softmax weights, per layer (B, H, Tq, Tk).
"""

import dataclasses

import torch
import torch.nn.functional as F
from transformers import GenerationMixin, PreTrainedConfig, PreTrainedModel
from transformers import initialization as init
from transformers.modeling_outputs import (
    BaseModelOutput,
    CausalLMOutputWithPast,
    Seq2SeqLMOutput,
    SequenceClassifierOutput,
)

from transformer.causal_lm import CausalLM
from transformer.classifier import TransformerClassifier
from transformer.config import CausalLMConfig, ClassifierConfig, Seq2SeqConfig
from transformer.embeddings import Positions, Rotary, sinusoidal_table
from transformer.encoder import EncoderOutput
from transformer.head_mask import HeadMasks
from transformer.legacy_names import KEY_MAPPING
from transformer.seq2seq import Seq2SeqTransformer


def _dataclass_from(cls, config: PreTrainedConfig):
    """cls (a transformer.config dataclass) from the attributes of `config` that it has fields for."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{n: getattr(config, n) for n in names if hasattr(config, n)})


class AttentionDemoClassifierConfig(PreTrainedConfig):
    """The fields of transformer.config.ClassifierConfig as attributes (a missing one takes its default)."""

    model_type = "attention_demo_classifier"
    # Run in fp32 as the app does, whatever the checkpoint holds (the bundled weights are fp16; "auto" keeps that).
    dtype: str | torch.dtype | None = "float32"

    def model_config(self) -> ClassifierConfig:
        return _dataclass_from(ClassifierConfig, self)


class AttentionDemoSeq2SeqConfig(PreTrainedConfig):
    """The fields of transformer.config.Seq2SeqConfig as attributes (a missing one takes its default)."""

    model_type = "attention_demo_seq2seq"
    dtype: str | torch.dtype | None = "float32"
    is_encoder_decoder: bool = True

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        self.tie_word_embeddings = self.model_config().tie_embeddings  # what transformers reads to share them

    def model_config(self) -> Seq2SeqConfig:
        return _dataclass_from(Seq2SeqConfig, self)


class AttentionDemoCausalLMConfig(PreTrainedConfig):
    """The fields of transformer.config.CausalLMConfig as attributes (a missing one takes its default)."""

    model_type = "attention_demo_causal_lm"
    dtype: str | torch.dtype | None = "float32"

    def __post_init__(self, **kwargs):
        super().__post_init__(**kwargs)
        self.tie_word_embeddings = self.model_config().tie_embeddings

    def model_config(self) -> CausalLMConfig:
        return _dataclass_from(CausalLMConfig, self)


class AttentionDemoPreTrainedModel(PreTrainedModel):
    """What the wrappers share: the from-scratch model lives in `self.model`, and builds its own weights."""

    base_model_prefix = "model"
    main_input_name = "input_ids"

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """transformers' from_pretrained, with the parameter names of files written before the one-core rewrite
        renamed to today's (transformer/legacy_names.py): the published weights go up unchanged."""
        kwargs.setdefault("key_mapping", KEY_MAPPING)
        return super().from_pretrained(*args, **kwargs)

    def _init_weights(self, module):
        """Only the fixed sinusoidal position tables and rotary frequencies, which are not saved (non-persistent
        buffers), so `transformers` leaves them empty: every weight comes from the checkpoint or the modules' own
        init."""
        if isinstance(module, Positions) and not isinstance(module.table, torch.nn.Parameter):
            init.copy_(module.table, sinusoidal_table(*module.table.shape))
        elif isinstance(module, Rotary):
            init.copy_(module.inv_freq, module.frequencies())

    def wants_attentions(self, output_attentions: bool | None) -> bool:
        return bool(self.config.output_attentions if output_attentions is None else output_attentions)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        head_mask: torch.Tensor | None = None,
        **kwargs,
    ):
        """The one-segment models' call (the classifier's and the language model's; the translator has its own):
        input_ids (B, T) as the model reads them (`_read`), its outputs with the loss of `labels` (`_outputs`),
        attentions per layer (B, H, T, T) when asked for. head_mask: (L, H) multipliers on each head's output
        (0 = off). token_type_ids and the like are ignored: the models read one segment."""
        ids = self._read(input_ids, attention_mask)
        out = self.model(ids, need_weights=self.wants_attentions(output_attentions), head_mask=head_mask)
        return self._outputs(out, labels)


def _with_pads(ids: torch.Tensor, attention_mask: torch.Tensor | None, pad_id: int) -> torch.Tensor:
    """ids (B, T) with the positions attention_mask marks 0 set to pad_id: the from-scratch models mask pad_id."""
    return ids if attention_mask is None else ids.masked_fill(attention_mask == 0, pad_id)


def _tuple(maps: list[torch.Tensor] | None) -> tuple[torch.Tensor, ...] | None:
    return None if maps is None else tuple(maps)


class AttentionDemoForSequenceClassification(AttentionDemoPreTrainedModel):
    """transformer.TransformerClassifier behind the `transformers` sequence-classification interface."""

    config_class = AttentionDemoClassifierConfig

    def __init__(self, config: AttentionDemoClassifierConfig):
        super().__init__(config)
        self.model = TransformerClassifier(config.model_config())
        self.post_init()

    def _read(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return _with_pads(input_ids, attention_mask, self.model.config.pad_id)  # the model masks its pad id

    def _outputs(self, out, labels: torch.Tensor | None) -> SequenceClassifierOutput:
        """logits (B, num_labels); with labels (B,) their cross-entropy."""
        loss = F.cross_entropy(out.logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=out.logits, attentions=_tuple(out.attentions))


class _SourceEncoder:
    """What generate() calls to encode the source once: the from-scratch encoder, returning BaseModelOutput."""

    def __init__(self, owner: "AttentionDemoForConditionalGeneration"):
        self.owner = owner

    def forward(self, input_ids, attention_mask=None, output_attentions=None, head_mask=None, **kwargs):
        model = self.owner.model
        need = self.owner.wants_attentions(output_attentions)
        ids = _with_pads(input_ids, attention_mask, model.config.pad_id)
        enc = model.encode(ids, need, HeadMasks(encoder=head_mask))
        return BaseModelOutput(last_hidden_state=enc.memory, attentions=_tuple(enc.attentions))

    __call__ = forward


class _Generating(AttentionDemoPreTrainedModel, GenerationMixin):
    """What the two generating wrappers share: their special ids in the generation config, tied embeddings stored
    once, and generate() without a key/value cache (each step re-reads the sequence): the models are small."""

    def _hold(self, model: torch.nn.Module, tied: dict[str, str], **generation) -> None:
        """model as self.model. tied: {weight: the weight it is} where the model ties its embeddings (one matrix,
        stored once, shared again after loading); generation: more of the generation config."""
        c = model.config
        self.model = model
        if c.tie_embeddings:
            self._tied_weights_keys = tied
        ids = dict(bos_token_id=c.bos_id, eos_token_id=c.eos_id, pad_token_id=c.pad_id)
        self.generation_config.update(**ids, use_cache=False, **generation)
        self.post_init()

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False  # the models keep their own cache type (transformer.DecoderCache); generate() runs without


class AttentionDemoForConditionalGeneration(_Generating):
    """transformer.Seq2SeqTransformer behind the `transformers` seq2seq interface (forward and generate).

    generate() runs without a key/value cache (each step re-reads the target prefix): the models are small."""

    config_class = AttentionDemoSeq2SeqConfig

    def __init__(self, config: AttentionDemoSeq2SeqConfig):
        super().__init__(config)
        c = config.model_config()
        tied = {"model.src_emb.weight": "model.lm_head.weight"}  # stored as lm_head.weight
        self._hold(Seq2SeqTransformer(c), tied, decoder_start_token_id=c.bos_id)

    def get_encoder(self, modality: str | None = None):
        return _SourceEncoder(self)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        decoder_input_ids: torch.Tensor | None = None,
        decoder_attention_mask: torch.Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple | None = None,
        labels: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        head_mask: torch.Tensor | None = None,
        decoder_head_mask: torch.Tensor | None = None,
        cross_attn_head_mask: torch.Tensor | None = None,
        **kwargs,
    ) -> Seq2SeqLMOutput:
        """Teacher forcing: source input_ids (B, Ts), target prefix decoder_input_ids (B, Tt) starting with BOS
        -> logits (B, Tt, V) for the next token after each position. With labels (B, Tt) and no
        decoder_input_ids, the prefix is the labels shifted right (-100 = ignored). Attentions, when asked for:
        encoder (B, H, Ts, Ts), decoder (B, H, Tt, Tt) and cross (B, H, Tt, Ts), per layer. The *head_mask
        arguments: (L, H) multipliers on each kind of attention's heads (0 = off)."""
        c = self.model.config
        need = self.wants_attentions(output_attentions)
        masks = HeadMasks(head_mask, decoder_head_mask, cross_attn_head_mask)
        if encoder_outputs is None:
            enc = self.model.encode(_with_pads(input_ids, attention_mask, c.pad_id), need, masks)
        else:
            enc = self._encoder_output(encoder_outputs, input_ids, attention_mask)
        if decoder_input_ids is None:
            if labels is None:
                raise ValueError("pass decoder_input_ids (BOS first) or labels")
            decoder_input_ids = self.shift_right(labels)
        tgt = _with_pads(decoder_input_ids, decoder_attention_mask, c.pad_id)
        dec = self.model.decode(tgt, enc, need_weights=need, head_mask=masks)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(dec.logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        return Seq2SeqLMOutput(
            loss=loss,
            logits=dec.logits,
            decoder_attentions=_tuple(dec.self_attentions),
            cross_attentions=_tuple(dec.cross_attentions),
            encoder_last_hidden_state=enc.memory,
            encoder_attentions=_tuple(enc.attentions),
        )

    def _encoder_output(self, encoder_outputs, input_ids, attention_mask) -> EncoderOutput:
        """The from-scratch EncoderOutput of an encoder result generate() kept (its key mask from the inputs)."""
        memory = encoder_outputs[0]  # (B, Ts, D)
        if attention_mask is not None:
            real = attention_mask.bool()
        elif input_ids is not None:
            real = input_ids != self.model.config.pad_id
        else:
            real = torch.ones(memory.shape[:2], dtype=torch.bool, device=memory.device)
        attentions = encoder_outputs.attentions if isinstance(encoder_outputs, BaseModelOutput) else None
        return EncoderOutput(memory, real[:, None, None, :], attentions)  # mask (B, 1, 1, Ts)

    def shift_right(self, labels: torch.Tensor) -> torch.Tensor:
        """(B, T) labels -> (B, T) decoder inputs: BOS, then the labels but the last (-100 read as padding)."""
        c = self.model.config
        start = torch.full_like(labels[:, :1], c.bos_id)
        shifted = torch.cat([start, labels[:, :-1]], dim=1)
        return shifted.masked_fill(shifted == -100, c.pad_id)

    def prepare_inputs_for_generation(
        self, input_ids, encoder_outputs=None, attention_mask=None, output_attentions=None, **kwargs
    ) -> dict:
        """Each step reads the whole target prefix (input_ids here are the decoder's), no cache."""
        return {
            "decoder_input_ids": input_ids,
            "encoder_outputs": encoder_outputs,
            "attention_mask": attention_mask,
            "output_attentions": output_attentions,
        }


class AttentionDemoForCausalLM(_Generating):
    """transformer.CausalLM behind the `transformers` causal-LM interface (forward and generate).

    generate() runs without a key/value cache (each step re-reads the whole sequence): the model is small. Rows are
    read unpadded: a batch of prompts of different lengths goes one prompt at a time."""

    config_class = AttentionDemoCausalLMConfig

    def __init__(self, config: AttentionDemoCausalLMConfig):
        super().__init__(config)
        self._hold(CausalLM(config.model_config()), {"model.lm_head.weight": "model.tok_emb.weight"})

    def _read(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if attention_mask is not None and not bool(attention_mask.all()):
            raise ValueError("this model reads unpadded rows: pass one prompt at a time")
        return input_ids

    def _outputs(self, out, labels: torch.Tensor | None) -> CausalLMOutputWithPast:
        """logits (B, T, V) for the token after each position; with labels (B, T) the loss of predicting
        labels[:, 1:] (-100 = ignored)."""
        loss = None
        if labels is not None:
            logits = out.logits[:, :-1].flatten(0, 1)
            loss = F.cross_entropy(logits, labels[:, 1:].flatten(), ignore_index=-100)
        return CausalLMOutputWithPast(loss=loss, logits=out.logits, attentions=_tuple(out.attentions))

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, output_attentions=None, **kwargs) -> dict:
        """Each step reads the whole sequence, no cache."""
        return {"input_ids": input_ids, "attention_mask": attention_mask, "output_attentions": output_attentions}
