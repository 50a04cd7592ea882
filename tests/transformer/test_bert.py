"""BERT weights in our transformer (transformer/bert.py): on a tiny random `transformers` BERT, our hidden states,
logits and every head's attention equal theirs; a wrong mapping is caught; the weights' sha256 is checked."""

import json

import pytest
import torch

from transformer import CheckpointError, TransformerClassifier
from transformer import bert as bert_module

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    """A random BertForSequenceClassification (2 layers x 4 heads, d=32) with non-trivial LayerNorms and segment
    vectors, so a mapping that drops or misplaces any of them shows."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(1)
    cfg = BertConfig(
        vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=40, pad_token_id=0, num_labels=2,
    )  # fmt: skip
    model = BertForSequenceClassification(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "token_type" in name or name.endswith("bias"):
                p.normal_(mean=1.0 if name.endswith("LayerNorm.weight") else 0.0, std=0.2)
    folder = tmp_path_factory.mktemp("bert")
    model.save_pretrained(folder)
    return folder


def reference(folder, ids):
    from transformers import BertForSequenceClassification

    ref = BertForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = ref(input_ids=ids, attention_mask=ids != 0, output_attentions=True, output_hidden_states=True)
    return out


def batch() -> torch.Tensor:
    """(3, 12) ids: two padded rows and one full, [CLS]-like first ids."""
    torch.manual_seed(2)
    ids = torch.randint(5, 120, (3, 12))
    ids[:, 0] = 2
    ids[0, 7:] = 0
    ids[1, 10:] = 0
    return ids


def ours_and_theirs(folder):
    ids = batch()
    ours = TransformerClassifier.from_bert(str(folder)).eval()
    with torch.no_grad():
        out = ours(ids, need_weights=True)
        enc = ours.encoder(ours.tok_emb(ids), (ids != 0)[:, None, None, :])
    return ids, ours, out, enc, reference(folder, ids)


def assert_equal_to_bert(folder):
    ids, _, out, enc, ref = ours_and_theirs(folder)
    real = (ids != 0)[:, :, None]  # (B, T, 1): padded positions' hidden states are not compared
    torch.testing.assert_close(enc.memory * real, ref.hidden_states[-1] * real, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-5, rtol=1e-5)
    assert len(out.attentions) == len(ref.attentions) == 2
    for layer, (a, b) in enumerate(zip(out.attentions, ref.attentions)):
        keys = (ids != 0)[:, None, None, :]  # padded keys: ours exactly 0, theirs ~1e-38
        torch.testing.assert_close(a * keys, b * keys, atol=1e-5, rtol=1e-5, msg=f"layer {layer}")


def test_hidden_states_logits_and_every_head_equal_transformers(bert_dir):
    assert_equal_to_bert(bert_dir)


def test_a_wrong_mapping_is_caught(bert_dir, monkeypatch):
    """Queries read as keys: the same shapes load, and the equality check fails."""
    names = dict(bert_module.LAYER_NAMES)
    q, k = "attention.self.query", "attention.self.key"
    names[q], names[k] = names[k], names[q]
    monkeypatch.setattr(bert_module, "LAYER_NAMES", names)
    with pytest.raises(AssertionError):
        assert_equal_to_bert(bert_dir)


def test_forgetting_the_segment_vector_is_caught(bert_dir, monkeypatch):
    original = bert_module.map_state_dict

    def without_segment(state):
        key = "bert.embeddings.token_type_embeddings.weight"
        return original(state | {key: torch.zeros_like(state[key])})

    monkeypatch.setattr(bert_module, "map_state_dict", without_segment)
    with pytest.raises(AssertionError):
        assert_equal_to_bert(bert_dir)


def test_config_follows_bert(bert_dir):
    model = TransformerClassifier.from_bert(str(bert_dir), pooling="mean", num_labels=3)
    c = model.config
    assert (c.n_layers, c.n_heads, c.d_model, c.d_ff, c.max_len) == (2, 4, 32, 64, 40)
    assert (c.activation, c.layer_norm_eps, c.scale_embeddings, c.embedding_norm) == ("gelu", 1e-12, False, True)
    assert model.pooler is None and model.head[1].out_features == 3  # mean pooling: no pooler, a fresh head


def test_mean_pooling_averages_real_tokens(bert_dir):
    """all-MiniLM-L6-v2 was trained with mean pooling: the pooled vector is the mean of the real tokens' states."""
    ids = batch()
    model = TransformerClassifier.from_bert(str(bert_dir), pooling="mean").eval()
    ref = reference(bert_dir, ids)
    real = (ids != 0).float()[:, :, None]  # (B, T, 1)
    mean = (ref.hidden_states[-1] * real).sum(1) / real.sum(1)  # (B, D)
    with torch.no_grad():
        torch.testing.assert_close(model(ids).logits, model.head(mean), atol=1e-5, rtol=1e-5)


def test_sha256_is_checked_before_loading(bert_dir):
    good = bert_module.file_sha256(bert_dir / "model.safetensors")
    TransformerClassifier.from_bert(str(bert_dir), sha256=good.upper())
    with pytest.raises(CheckpointError, match="sha256"):
        TransformerClassifier.from_bert(str(bert_dir), sha256="0" * 64)


def test_not_a_bert_checkpoint_is_refused(bert_dir, tmp_path):
    (tmp_path / "model.safetensors").write_bytes((bert_dir / "model.safetensors").read_bytes())
    config = json.loads((bert_dir / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | {"hidden_act": "gelu_new"}))
    with pytest.raises(CheckpointError, match="gelu"):
        TransformerClassifier.from_bert(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(config | {"model_type": "roberta"}))
    with pytest.raises(CheckpointError, match="not a BERT"):
        TransformerClassifier.from_bert(str(tmp_path))


def test_saved_and_reloaded_through_our_loader(bert_dir, tmp_path):
    """The mapped model saves as one of ours: load_model reads it back with the same logits."""
    from transformer import load_model

    model = TransformerClassifier.from_bert(str(bert_dir)).eval()
    model.save_pretrained(tmp_path)
    again = load_model(TransformerClassifier, tmp_path)
    ids = batch()
    with torch.no_grad():
        torch.testing.assert_close(again(ids).logits, model(ids).logits)
