"""The model adapter (pipelines/models/adapter.py) for Hugging Face `transformers` models: sequence classifiers
(AutoModelForSequenceClassification: BERT, DistilBERT, RoBERTa, ...) and seq2seq translators
(AutoModelForSeq2SeqLM: Marian, ...), loaded from a model id or a folder.

transformers 5 facts this relies on: attention weights come back only with attn_implementation="eager", and
`forward` takes no head_mask any more. A head is switched off, for one call, by a forward pre-hook on its
layer's attention output projection that scales that head's slice of the projection's input (the heads' outputs,
concatenated), exactly what our models' head masks do. Nothing edits the weights. The core's hook-point names
(attn.hook_q, hook_k, hook_v, hook_z: pipelines/models/hook_names.py) are given to what these modules compute, by
forward hooks for one call on one thread (HookNames.run_with_cache), so the views that read our models' internals
read these models' too.
"""

import json
import re
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import torch

from pipelines.attention.thread_hooks import this_thread_only
from pipelines.kinds import CROSS, DECODER, ENCODER, SELF
from pipelines.models.adapter import ClassifierRun, DecodingMixin, KindMasks, ModelDevice, Seq2SeqRun
from pipelines.models.folders import serving_device
from pipelines.models.hook_names import attn_point
from pipelines.models.snapshots import at_revision, no_hub_revision
from pipelines.text import SpecialTokensAround, TokenSpan
from transformer.generation import Hypothesis

TRANSLATION_KINDS = (ENCODER.name, DECODER.name, CROSS.name)  # a seq2seq model's, in its order

# The attention output projections, by the end of their module name (BERT / RoBERTa, DistilBERT, BART / Marian).
OUT_PROJECTIONS = ("attention.output.dense", "attention.out_lin", "self_attn.out_proj", "encoder_attn.out_proj")
# The query, key and value projections beside each output projection (same order as OUT_PROJECTIONS).
QKV = {
    "attention.output.dense": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "attention.out_lin": ("attention.q_lin", "attention.k_lin", "attention.v_lin"),
    "self_attn.out_proj": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
    "encoder_attn.out_proj": ("encoder_attn.q_proj", "encoder_attn.k_proj", "encoder_attn.v_proj"),
}
_LAYER = re.compile(r"\.(?:layer|layers|block)\.(\d+)\.")
OUR_FIELDS = ("d_model", "n_heads")  # config.json keys of our own models (a folder that has them is ours)


def is_transformers_config(config: dict) -> bool:
    """True for a `transformers` config.json: a model_type, and not one of our own models' configs (which may
    carry a model_type too, when exported for transformers' Auto classes)."""
    return "model_type" in config and not all(k in config for k in OUR_FIELDS)


def read_config(name_or_path: str) -> dict | None:
    """config.json of a folder, or of a Hub repo id already in the local cache; None when it cannot be read."""
    path = Path(name_or_path) / "config.json"
    if not path.is_file():
        try:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(str(name_or_path), "config.json"))
        except Exception:
            return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def read_preprocessing(name_or_path: str) -> dict:
    """preprocessing.json beside a transformers model (what this app fitted for it: calibration, out-of-domain
    statistics, cutting), from its folder or the Hub cache; {} when there is none."""
    path = Path(name_or_path) / "preprocessing.json"
    if not path.is_file():
        try:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(str(name_or_path), "preprocessing.json"))
        except Exception:
            return {}
    return json.loads(path.read_text())


def is_transformers_model(name_or_path: str) -> bool:
    config = read_config(str(name_or_path))
    return config is not None and is_transformers_config(config)


class OursOrTransformers:
    """A pipeline that loads ours (its from_folder) or a `transformers` model (its from_transformers)."""

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str | None = None, revision: str | None = None):
        """Ours (a folder or Hub repo with our config.json; its preprocessing.json, when there is one, gives
        calibration, out-of-domain statistics, cutting and decoding) or a `transformers` model (a model id or folder).
        device: where the model runs ("cpu", "cuda", "auto"); None reads $MODEL_DEVICE (models.folders.serving_device).
        revision: a training snapshot "step-<N>" (pipelines/models/snapshots.py), or any Hub revision of a repo id.
        Ours gets `source` and `revision` set: which model made a result (a snapshot's own folder, or the repo)."""
        name, hub_revision = at_revision(name_or_path, revision)
        if is_transformers_model(name):
            return cls.from_transformers(no_hub_revision(name, hub_revision), device)
        pipe = cls.from_folder(name, device, hub_revision)
        pipe.source, pipe.revision = name, revision
        return pipe


def _kind(name: str, encoder_kind: str) -> str:
    """The kind of attention (pipelines.kinds) of a module named as transformers names them."""
    if "encoder_attn" in name:
        return CROSS.name
    return DECODER.name if "decoder." in name else encoder_kind


def out_projections(model: torch.nn.Module, encoder_kind: str) -> dict[str, list[torch.nn.Module]]:
    """{kind: [the attention output projection of each layer]}: kinds "self" (encoder_kind) for a classifier;
    "encoder", "decoder" and "cross" for a seq2seq model."""
    found: dict[str, dict[int, torch.nn.Module]] = {}
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear) and name.endswith(OUT_PROJECTIONS):
            layer = _LAYER.search("." + name + ".")
            if layer:
                found.setdefault(_kind(name, encoder_kind), {})[int(layer.group(1))] = module
    if not found:
        names = ", ".join(OUT_PROJECTIONS)
        raise ValueError(f"{type(model).__name__}: no attention output projections found ({names})")
    return {kind: [layers[i] for i in sorted(layers)] for kind, layers in found.items()}


class AttentionParts(NamedTuple):
    """The four projections of one attention block: out(concat(heads)) with head h = softmax(q(x) k(y)^T / sqrt(hs))
    v(y) on its own hs-wide slice of q, k and v."""

    q: torch.nn.Linear
    k: torch.nn.Linear
    v: torch.nn.Linear
    out: torch.nn.Linear


# hook point -> (the projection of AttentionParts it reads, whether it reads the projection's input)
PART_POINTS = {"hook_q": ("q", False), "hook_k": ("k", False), "hook_v": ("v", False), "hook_z": ("out", True)}


@contextmanager
def caching(parts: dict[str, list[AttentionParts]], names: list[str], n_heads: int):
    """Inside: the calls made on this thread fill {name: (B, T, H, hs)} for each attention point of `names` that these
    projections compute (q, k and v outputs, the output projection's input), named as the core names them."""
    cache: dict[str, torch.Tensor] = {}
    wanted, hooks = set(names), []

    def keep(name, read_input):
        def hook(module, args, output=None):
            x = (args[0] if read_input else output).detach()  # (B, T, H * hs)
            cache[name] = x.reshape(*x.shape[:2], n_heads, -1)

        return hook

    try:
        for kind, layers in parts.items():
            for i, p in enumerate(layers):
                for point, (part, read_input) in PART_POINTS.items():
                    name = attn_point(kind, i, point)
                    if name in wanted:
                        module, hook = getattr(p, part), this_thread_only(keep(name, read_input))
                        register = module.register_forward_pre_hook if read_input else module.register_forward_hook
                        hooks.append(register(hook))
                        wanted.discard(name)
        if wanted:
            raise KeyError(f"no hook point named {sorted(wanted)[0]!r} on this transformers model")
        yield cache
    finally:
        for h in hooks:
            h.remove()


class HookNames:
    """run_with_cache and W_O of the adapter interface over a `transformers` model's attention projections."""

    model: torch.nn.Module
    n_heads: int
    encoder_kind: str

    def attention_parts(self) -> dict[str, list[AttentionParts]]:
        return attention_parts(self.model, self.encoder_kind)

    def run_with_cache(self, forward: Callable[[], object], names) -> tuple[object, dict[str, torch.Tensor]]:
        """(forward(), {name: (B, T, H, hs)}) for the attention points `names` (a list)."""
        with caching(self.attention_parts(), list(names), self.n_heads) as cache:
            run = forward()
        return run, cache

    def W_O(self, kind: str) -> torch.Tensor:
        """(L, H, hs, D) each layer's output projection of kind `kind`, head by head (detached)."""
        w = torch.stack([p.out.weight.detach() for p in self.attention_parts()[kind]])  # (L, D, H * hs)
        return w.reshape(w.size(0), w.size(1), self.n_heads, -1).permute(0, 2, 3, 1)


def attention_parts(model: torch.nn.Module, encoder_kind: str) -> dict[str, list[AttentionParts]]:
    """{kind: [the q, k, v and output projections of each layer's attention]}, kinds as out_projections'."""
    found: dict[str, dict[int, AttentionParts]] = {}
    for name, module in model.named_modules():
        suffix = next((s for s in OUT_PROJECTIONS if name.endswith(s)), None)
        layer = _LAYER.search("." + name + ".")
        if suffix is None or layer is None or not isinstance(module, torch.nn.Linear):
            continue
        stem = name[: -len(suffix)]
        q, k, v = (model.get_submodule(stem + s) for s in QKV[suffix])
        found.setdefault(_kind(name, encoder_kind), {})[int(layer.group(1))] = AttentionParts(q, k, v, module)
    return {kind: [layers[i] for i in sorted(layers)] for kind, layers in found.items()}


@contextmanager
def heads_off(projections: dict[str, list[torch.nn.Module]], masks: KindMasks | None, n_heads: int):
    """For the calls inside made on this thread: each layer's heads scaled by masks[kind][layer], (H,) or (B, H),
    0 = off."""
    hooks = []

    def scale(mask: torch.Tensor):
        def hook(module, args):
            x = args[0]  # (B, T, H * hs): the heads' outputs, concatenated
            B, T, D = x.shape
            m = mask.to(x.dtype).reshape(-1, 1, n_heads, 1)  # (1 or B, 1, H, 1)
            return (x.reshape(B, T, n_heads, D // n_heads) * m).reshape(B, T, D), *args[1:]

        return hook

    try:
        for kind, layer_masks in (masks or {}).items():
            for module, mask in zip(projections[kind], layer_masks):
                if bool((mask != 1).any()):
                    hooks.append(module.register_forward_pre_hook(this_thread_only(scale(mask))))
        yield
    finally:
        for h in hooks:
            h.remove()


def load_tokenizer(name_or_path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name_or_path)


def aligned_spans(text: str, ids: list[int], pieces: list[str]) -> list[TokenSpan]:
    """TokenSpans for a tokenizer without character offsets: each piece ("▁Haus", sentencepiece's word start) found
    in `text` after the previous one; a piece the text does not hold as written (normalized away) covers nothing, and
    the next piece may skip the characters it stood for."""
    spans, pos, lost = [], 0, False
    for i, piece in zip(ids, pieces):
        word = piece.replace("\u2581", " ").strip()
        start = text.find(word, pos) if word else -1
        if start < 0 or (text[pos:start].strip() and not lost):  # not found, or past characters of another token
            spans.append(TokenSpan(i, word, pos, pos))
            lost = True
            continue
        pos, lost = start + len(word), False
        spans.append(TokenSpan(i, word, start, pos))
    return spans


class _HFTokenizing:
    """tokenize / tokenize_many over a transformers fast tokenizer, with character offsets; pickled as where it
    was loaded from, onto the same device (a model process loads it again: a transformers model unpickled in a
    fresh interpreter returns no attention weights)."""

    tokenizer = None
    source: str | None = None  # the model id or folder it was loaded from

    def __reduce__(self):
        if self.source is None:
            raise TypeError(f"{type(self).__name__} built from objects cannot be pickled: load it with from_pretrained")
        return type(self).from_pretrained, (self.source, str(self.device))

    def tokenize(self, text: str) -> tuple[list[int], list[TokenSpan]]:
        """(ids, TokenSpans into `text`) of the text's own tokens, without special tokens."""
        if not getattr(self.tokenizer, "is_fast", True):  # a sentencepiece tokenizer (Marian's) gives no offsets
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            return ids, aligned_spans(text, ids, self.tokenizer.convert_ids_to_tokens(ids))
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
        return ids, [TokenSpan(i, text[a:b], a, b) for i, (a, b) in zip(ids, offsets)]

    def tokenize_many(self, texts: list[str]) -> list[list[int]]:
        return [list(i) for i in self.tokenizer(texts, add_special_tokens=False)["input_ids"]] if texts else []

    def _specials(self) -> tuple[list[int], list[int]]:
        """(ids before, ids after) the text's own that the tokenizer adds: [CLS] ... [SEP], <s> ... </s>."""
        bare = list(self.tokenizer("a", add_special_tokens=False)["input_ids"])
        full = list(self.tokenizer("a")["input_ids"])
        for i in range(len(full) - len(bare) + 1):
            if full[i : i + len(bare)] == bare:
                return full[:i], full[i + len(bare) :]
        return [], []


def _eager(cls, name_or_path: str, device: str | None):
    device = serving_device(device)  # a device that is not there is said before anything loads
    return cls.from_pretrained(name_or_path, attn_implementation="eager").to(device).eval()


class HFClassifier(ModelDevice, HookNames, _HFTokenizing, SpecialTokensAround):
    """The adapter for a transformers sequence classifier."""

    kind = "transformers"
    encoder_kind = SELF.name

    def __init__(self, model, tokenizer):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.prefix, self.suffix = self._specials()
        self.n_prefix, self.n_suffix = len(self.prefix), len(self.suffix)
        c = model.config
        self.n_heads = c.num_attention_heads if hasattr(c, "num_attention_heads") else c.n_heads
        self.projections = out_projections(model, SELF.name)
        self.head_layers = {SELF.name: len(self.projections[SELF.name])}
        self.pad_id = c.pad_token_id if c.pad_token_id is not None else (tokenizer.pad_token_id or 0)
        self.vocab_size = c.vocab_size
        positions = c.max_position_embeddings - (2 if c.model_type in ("roberta", "xlm-roberta", "camembert") else 0)
        self.max_len = min(positions, tokenizer.model_max_length or positions)

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str | None = None) -> "HFClassifier":
        """From a model id or folder, on serving_device(device) ($MODEL_DEVICE when None)."""
        from transformers import AutoModelForSequenceClassification

        model = _eager(AutoModelForSequenceClassification, name_or_path, device)
        adapter = cls(model, load_tokenizer(name_or_path))
        adapter.source = str(name_or_path)
        return adapter

    @property
    def config(self):
        return self.model.config

    @property
    def labels(self) -> list[str]:
        id2label = self.model.config.id2label
        return [str(id2label[i]) for i in range(len(id2label))]

    def config_dict(self) -> dict:
        return self.model.config.to_dict()

    def special_name(self, token_id: int) -> str:
        return self.tokenizer.convert_ids_to_tokens(token_id)

    def forward(
        self, ids: torch.Tensor, need_weights: bool = False, head_mask: KindMasks | None = None, need_hidden=False
    ):
        """ids (B, T) padded with pad_id -> ClassifierRun; token_weights: the first token's ([CLS]) last-layer
        attention, averaged over heads: what the classification head reads, when need_weights. No hidden states:
        a transformers model is only run whole (logits_from_layer)."""
        with heads_off(self.projections, head_mask, self.n_heads):
            out = self.model(input_ids=ids, attention_mask=ids != self.pad_id, output_attentions=need_weights)
        attentions = list(out.attentions) if need_weights else []
        weights = attentions[-1][:, :, 0, :].mean(1) if attentions else None  # (B, T)
        return ClassifierRun(out.logits, attentions, weights)

    def logits_from_layer(self, layer: int, hidden, ids: torch.Tensor, head_mask: KindMasks | None = None, heads=None):
        """Logits (B, C) of ids (B, T) with head_mask: the whole model runs (where its layers start is not known
        for every architecture), so `layer`, `hidden` (None: a run here keeps none) and `heads` are not needed."""
        return self.forward(ids, head_mask=head_mask).logits

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) -> (B, T, D): the word embeddings (the model adds positions and token types itself)."""
        return self.model.get_input_embeddings()(ids)

    def logits_from_embeddings(self, emb: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.model(inputs_embeds=emb, attention_mask=ids != self.pad_id).logits

    def save(self, folder: Path, max_len: int, preprocessing: dict) -> None:
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        (Path(folder) / "preprocessing.json").write_text(json.dumps(preprocessing, indent=2) + "\n")


class HFSeq2Seq(ModelDevice, HookNames, DecodingMixin, _HFTokenizing):
    """The adapter for a transformers encoder-decoder (Marian and kin): source + EOS in, the decoder starts from
    decoder_start_token_id."""

    kind = "transformers"
    encoder_kind = ENCODER.name

    def __init__(self, model, tokenizer):
        self.model, self.tokenizer = model.eval(), tokenizer
        c = model.config
        self.n_heads = c.encoder_attention_heads
        if c.decoder_attention_heads != c.encoder_attention_heads:
            raise ValueError("the encoder and the decoder must have the same number of heads")
        self.projections = out_projections(model, ENCODER.name)
        self.head_layers = {k: len(self.projections[k]) for k in TRANSLATION_KINDS}
        self.pad_id, self.eos_id = c.pad_token_id, c.eos_token_id
        self.bos_id = c.decoder_start_token_id if c.decoder_start_token_id is not None else c.pad_token_id
        self.vocab_size = c.vocab_size
        self.max_positions = c.max_position_embeddings
        self.max_source = min(self.max_positions, tokenizer.model_max_length or self.max_positions) - 1

    @classmethod
    def from_pretrained(cls, name_or_path: str, device: str | None = None) -> "HFSeq2Seq":
        """From a model id or folder, on serving_device(device) ($MODEL_DEVICE when None)."""
        from transformers import AutoModelForSeq2SeqLM

        adapter = cls(_eager(AutoModelForSeq2SeqLM, name_or_path, device), load_tokenizer(name_or_path))
        adapter.source = str(name_or_path)
        return adapter

    @property
    def config(self):
        return self.model.config

    def config_dict(self) -> dict:
        return self.model.config.to_dict()

    def source_ids(self, ids: list[int]) -> list[int]:
        return ids[: self.max_source - 1] + [self.eos_id]

    def row_limits(self, src: torch.Tensor) -> torch.Tensor:
        real = (src != self.pad_id).sum(1)  # (B,)
        return ((real * 3) // 2 + 10).clamp(max=self.max_positions - 1)

    def forward(
        self, src: torch.Tensor, tgt_in: torch.Tensor, need_weights: bool = False, head_mask: KindMasks | None = None
    ) -> Seq2SeqRun:
        """Teacher-forced: src (B, Ts), tgt_in (B, Tt) = decoder start + output[:-1] -> Seq2SeqRun. The decoder is
        causal, so padding after a row's own tokens changes nothing before it."""
        with heads_off(self.projections, head_mask, self.n_heads):
            mask, weights = src != self.pad_id, need_weights
            out = self.model(input_ids=src, attention_mask=mask, decoder_input_ids=tgt_in, output_attentions=weights)
        if not need_weights:
            return Seq2SeqRun(out.logits, [], [], [])
        return Seq2SeqRun(
            out.logits, list(out.encoder_attentions), list(out.decoder_attentions), list(out.cross_attentions)
        )

    @torch.no_grad()
    def generate(
        self, src: torch.Tensor, beam_size: int, alpha: float, head_mask: KindMasks | None = None, limits=None
    ) -> list[Hypothesis]:
        """transformers' generate (greedy for beam_size 1, else beam search with its length penalty alpha), with the
        heads of head_mask ((L, H) per kind) off. Each hypothesis' score is the sum of its tokens' log-probabilities
        (EOS included when produced), teacher-forced with the same heads off."""
        if head_mask and any(m.dim() == 3 for m in head_mask.values()):
            raise ValueError("generate takes one head mask for every row: (L, H) per kind")
        limits = self.row_limits(src) if limits is None else limits
        beams = (
            dict(num_beams=beam_size, length_penalty=alpha, early_stopping=True) if beam_size > 1 else {"num_beams": 1}
        )
        with heads_off(self.projections, head_mask, self.n_heads):
            out = self.model.generate(
                input_ids=src,
                attention_mask=src != self.pad_id,
                do_sample=False,
                max_new_tokens=int(limits.max()),
                decoder_start_token_id=self.bos_id,
                eos_token_id=self.eos_id,
                pad_token_id=self.pad_id,
                **beams,
            )
        hyps = []
        for row in out[:, 1:].tolist():  # without the decoder start
            finished = self.eos_id in row
            tokens = row[: row.index(self.eos_id)] if finished else row
            hyps.append(Hypothesis(tokens, 0.0, finished))
        self._score(src, hyps, head_mask)
        return hyps

    def _score(self, src: torch.Tensor, hyps: list[Hypothesis], head_mask: KindMasks | None) -> None:
        from pipelines.batching import pad

        produced = [h.tokens + ([self.eos_id] if h.finished else []) for h in hyps]
        if not any(produced):
            return
        tgt_in = pad([[self.bos_id] + p[:-1] for p in produced], self.pad_id, src.device)  # (B, Tt)
        logp = self.forward(src, tgt_in, head_mask=head_mask).logits.log_softmax(-1)  # (B, Tt, V)
        gold = pad(produced, self.pad_id, src.device)  # (B, Tt) the produced ids
        token_logp = logp.gather(-1, gold[..., None])[..., 0].cpu()  # (B, Tt); past a row's end: padding
        for h, row, p in zip(hyps, token_logp, produced):
            h.score = float(row[: len(p)].sum())

    def embed_source(self, ids: torch.Tensor) -> torch.Tensor:
        """What the encoder adds positions to: its token embeddings, scaled as its own forward scales them."""
        enc = self.model.get_encoder()
        return enc.embed_tokens(ids) * getattr(enc, "embed_scale", 1.0)

    def embed_target(self, ids: torch.Tensor) -> torch.Tensor:
        """The decoder's token embeddings (its forward scales decoder_inputs_embeds itself)."""
        return self.model.get_decoder().embed_tokens(ids)

    def step_log_probs(
        self, src_emb: torch.Tensor, src_ids: torch.Tensor, tgt_emb: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        out = self.model(inputs_embeds=src_emb, attention_mask=src_ids != self.pad_id, decoder_inputs_embeds=tgt_emb)
        rows = torch.arange(out.logits.size(0), device=out.logits.device)
        return out.logits[rows, pos].log_softmax(-1)  # (B, V)

    def save(self, folder: Path, preprocessing: dict) -> None:
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        (Path(folder) / "preprocessing.json").write_text(json.dumps(preprocessing, indent=2) + "\n")
