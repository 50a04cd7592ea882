"""BERT-architecture weights in our classifier, as nanoGPT's `GPT.from_pretrained` maps GPT-2's weights onto its own
modules: the model code stays ours, the knowledge comes from public pre-training.

A BERT layer is our post-norm encoder layer with erf GELU and LayerNorm eps 1e-12; BERT's embeddings are token + learned
position + token-type vectors, with a LayerNorm over the sum and no sqrt(d_model) scaling. The token-type vector of
segment 0 (the only segment a single text uses) is added to every position row, so our position table holds both.
tests/transformer/test_bert.py checks hidden states, logits and every head's attention against `transformers`.
"""

import torch

from .config import ClassifierConfig
from .hub import CheckpointError, file_sha256, read_checkpoint, rename_tensors  # noqa: F401 (file_sha256: re-exported)

# BERT's names for one layer's tensors -> ours (encoder.layer.N. / encoder.blocks.N. prefixed).
LAYER_NAMES = {
    "attention.self.query": "attn.q_proj",
    "attention.self.key": "attn.k_proj",
    "attention.self.value": "attn.v_proj",
    "attention.output.dense": "attn.o_proj",
    "attention.output.LayerNorm": "attn_norm",
    "intermediate.dense": "mlp.up",
    "output.dense": "mlp.down",
    "output.LayerNorm": "mlp_norm",
}
TOP_NAMES = {  # outside the layers
    "embeddings.word_embeddings": "tok_emb",
    "embeddings.LayerNorm": "encoder.embed_norm",
    "pooler.dense": "pooler.0",
    "classifier": "head.1",  # BertForSequenceClassification's head
}
IGNORED = ("embeddings.position_ids",)  # a buffer some checkpoints save


def bert_config(hf: dict, **overrides) -> ClassifierConfig:
    """Our ClassifierConfig for a BERT config.json (a dict); `overrides` set pooling, num_labels, dropout, ..."""
    if hf.get("model_type") != "bert":
        raise CheckpointError(f"not a BERT checkpoint: model_type {hf.get('model_type')!r}")
    if hf.get("hidden_act", "gelu") != "gelu" or hf.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(
            f"unsupported BERT variant: hidden_act {hf.get('hidden_act')!r}, "
            f"position_embedding_type {hf.get('position_embedding_type')!r} (erf gelu and absolute positions only)"
        )
    fields = dict(
        vocab_size=hf["vocab_size"],
        d_model=hf["hidden_size"],
        n_heads=hf["num_attention_heads"],
        n_layers=hf["num_hidden_layers"],
        d_ff=hf["intermediate_size"],
        dropout=hf.get("hidden_dropout_prob", 0.1),
        attn_dropout=hf.get("attention_probs_dropout_prob", 0.1),
        max_len=hf.get("max_position_embeddings", 512),
        positions="learned",
        norm_first=False,
        pad_id=hf.get("pad_token_id") or 0,
        activation="gelu",
        layer_norm_eps=hf.get("layer_norm_eps", 1e-12),
        scale_embeddings=False,
        embedding_norm=True,
        num_labels=len(hf.get("id2label") or {}) or 2,
        pooling="cls",
    )
    return ClassifierConfig(**(fields | overrides))


def map_state_dict(bert: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A BERT state dict (with or without the "bert." prefix) -> ours. Position and segment-0 vectors are summed."""
    bert = {k.removeprefix("bert."): v for k, v in bert.items() if not k.endswith(IGNORED)}
    summed = ("embeddings.position_embeddings", "embeddings.token_type_embeddings")  # below
    ours = rename_tensors(bert, ("encoder.layer.", "encoder.blocks."), LAYER_NAMES, TOP_NAMES, "BERT", skip=summed)
    positions = bert["embeddings.position_embeddings.weight"]  # (max_len, D)
    segment0 = bert["embeddings.token_type_embeddings.weight"][0]  # (D,): every token of a single text
    ours["encoder.positions.table"] = positions + segment0
    return ours


def read_bert(folder_or_repo_id: str, sha256: str | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """(config.json as a dict, the state dict) of a BERT folder or Hub repo (hub.read_checkpoint)."""
    return read_checkpoint(folder_or_repo_id, sha256)


def from_bert(cls, folder_or_repo_id: str, sha256: str | None = None, **overrides):
    """cls (TransformerClassifier) holding a BERT checkpoint's weights. overrides: ClassifierConfig fields
    (pooling "cls" by default: BERT's pooler; "mean" drops the pooler). A head the checkpoint lacks (a BertModel),
    or one for another number of labels, starts fresh (seeded by torch's generator), as do a pooler it lacks and the
    query of attention pooling."""
    hf, bert = read_bert(folder_or_repo_id, sha256)
    model = cls(bert_config(hf, **overrides))
    state = map_state_dict(bert)
    own = model.state_dict()
    # A pooler the model does not use, or a head for other labels, is left out: the model's own starts fresh.
    optional = ("pooler.", "head.")
    state = {k: v for k, v in state.items() if not k.startswith(optional) or k in own and own[k].shape == v.shape}
    for key, tensor in state.items():
        if key not in own or own[key].shape != tensor.shape:
            raise CheckpointError(f"{folder_or_repo_id}: {key} {tuple(tensor.shape)} does not fit the model")
    missing, _ = model.load_state_dict(state, strict=False)
    fresh = [k for k in missing if not k.startswith(("head.", "pooler.", "pool_query"))]
    if fresh:
        raise CheckpointError(f"{folder_or_repo_id}: no weights for {fresh[:5]}")
    return model
