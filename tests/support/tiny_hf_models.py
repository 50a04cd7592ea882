"""Tiny random Hugging Face `transformers` models, built and saved to a folder by the tests: BERT, DistilBERT and
RoBERTa sequence classifiers and a Marian translator, each with a `tokenizers` tokenizer trained on the fixtures
and wrapped as PreTrainedTokenizerFast, and a Llama language model (SmolLM2's architecture). Nothing touches the Hub."""

from pathlib import Path

import torch
from tiny_models import read_jsonl
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from tokenizers.decoders import ByteLevel as ByteLevelDecoder
from tokenizers.decoders import WordPiece as WordPieceDecoder

MAX_LEN = 64


def _reviews() -> list[str]:
    return [r["text"] for r in read_jsonl("imdb_tiny.jsonl")]


def wordpiece(texts: list[str], specials: list[str], template: tuple[str, str], unk: str = "[UNK]") -> Tokenizer:
    """A WordPiece tokenizer (BERT's kind); template = (single, pair) TemplateProcessing strings; unk: the unknown
    token's name, one of `specials` (Marian's is '<unk>')."""
    tok = Tokenizer(models.WordPiece(unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = WordPieceDecoder()
    tok.train_from_iterator(texts * 3, trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials))
    ids = {s: tok.token_to_id(s) for s in specials}
    tok.post_processor = processors.TemplateProcessing(
        single=template[0], pair=template[1], special_tokens=list(ids.items())
    )
    return tok


def byte_bpe(texts: list[str], specials: list[str]) -> Tokenizer:
    """A byte-level BPE (RoBERTa's kind) with <s> ... </s> around the text."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = ByteLevelDecoder()
    tok.train_from_iterator(texts * 3, trainers.BpeTrainer(vocab_size=400, special_tokens=specials))
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")), trim_offsets=True
    )
    return tok


def _fast(tok: Tokenizer, **specials):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=MAX_LEN, **specials)


def _save(model, tokenizer, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


LABELS = {0: "negative", 1: "positive"}


def make_bert_dir(folder: Path) -> Path:
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = wordpiece(_reviews(), specials, ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B [SEP]"))
    cfg = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=MAX_LEN, pad_token_id=0, id2label=LABELS,
        label2id={v: k for k, v in LABELS.items()},
    )  # fmt: skip
    fast = _fast(tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    return _save(BertForSequenceClassification(cfg), fast, folder)


def make_distilbert_dir(folder: Path) -> Path:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    torch.manual_seed(0)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = wordpiece(_reviews(), specials, ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B [SEP]"))
    cfg = DistilBertConfig(
        vocab_size=tok.get_vocab_size(), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
        max_position_embeddings=MAX_LEN, pad_token_id=0, id2label=LABELS, label2id={v: k for k, v in LABELS.items()},
    )  # fmt: skip
    fast = _fast(tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    return _save(DistilBertForSequenceClassification(cfg), fast, folder)


def make_roberta_dir(folder: Path) -> Path:
    from transformers import RobertaConfig, RobertaForSequenceClassification

    torch.manual_seed(0)
    tok = byte_bpe(_reviews(), ["<s>", "<pad>", "</s>", "<unk>"])  # ids 0, 1, 2, 3 as RoBERTa has them
    cfg = RobertaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=MAX_LEN + 2, pad_token_id=1, bos_token_id=0, eos_token_id=2,
        id2label=LABELS, label2id={v: k for k, v in LABELS.items()},
    )  # fmt: skip
    fast = _fast(tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>", cls_token="<s>",
                 sep_token="</s>")  # fmt: skip
    return _save(RobertaForSequenceClassification(cfg), fast, folder)


def make_marian_dir(folder: Path) -> Path:
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    rows = read_jsonl("multi30k_tiny.jsonl")
    specials = ["<pad>", "</s>", "<unk>"]
    tok = wordpiece([r["de"] for r in rows] + [r["en"] for r in rows], specials, ("$A </s>", "$A $B </s>"), unk="<unk>")
    cfg = MarianConfig(
        vocab_size=tok.get_vocab_size(), d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=MAX_LEN,
        pad_token_id=0, eos_token_id=1, decoder_start_token_id=0, forced_eos_token_id=1,
    )  # fmt: skip
    fast = _fast(tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    return _save(MarianMTModel(cfg), fast, folder)


def make_llama_dir(folder: Path, lm_dir: Path, chat_template: str) -> Path:
    """A tiny random LlamaForCausalLM (grouped key/value heads, untied), saved with save_pretrained, with our tiny
    language model's BPE tokenizer.json (lm_dir's) and `chat_template` in tokenizer_config.json."""
    import json
    import shutil

    from transformers import LlamaConfig, LlamaForCausalLM

    vocab = Tokenizer.from_file(str(lm_dir / "tokenizer.json")).get_vocab_size()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=False, bos_token_id=1,
        eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(folder)
    shutil.copy(lm_dir / "tokenizer.json", folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": chat_template}))
    return folder


CLASSIFIERS = {"bert": make_bert_dir, "distilbert": make_distilbert_dir, "roberta": make_roberta_dir}
