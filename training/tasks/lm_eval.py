"""Perplexity of a causal language model on review text, per token and per word (so that models with different
tokenizers compare): `python -m training.evaluate lm --model MODEL --data test.parquet`.

Each review (IMDB's <br /> tags read as spaces, runs of spaces as one) is scored token by token after the model's
start token, in windows of at most the model's context (ours: 256, as it was trained; the review's next window starts
again after a start token); the end-of-text token is not scored, so every model predicts exactly the review's text.
Per word: the review's total negative log-likelihood over its whitespace-separated words.
"""

import math
import re
import sys

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from pipelines.text import HTML_BREAK

MAX_WINDOW = 1024  # a long-context model (SmolLM2: 8192) is scored in windows of this many tokens at most


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(HTML_BREAK, " ", text)).strip()


def load_lm(name: str):
    """(CausalLM, tokenizers.Tokenizer, start token id) of what LanguageModelPipeline loads: our model folder, a Llama
    folder or repo, a .gguf file. The start token: <s> where the model reads one first (ours), else the
    <|endoftext|> that separates a model's training documents (SmolLM2), else its BOS."""
    from pipelines import LanguageModelPipeline

    pipe = LanguageModelPipeline.from_pretrained(str(name))
    separator = pipe.tokenizer.token_to_id("<|endoftext|>")
    start = pipe.model.config.bos_id if pipe.add_bos or separator is None else separator
    return pipe.model, pipe.tokenizer, start


def windows(model, ids: list[int], start: int) -> list[list[int]]:
    """A review's ids in windows of the model's context, each opening with the start token (which is not scored)."""
    width = min(model.config.max_len, MAX_WINDOW) - 1
    return [[start] + ids[i : i + width] for i in range(0, len(ids), width)]


@torch.no_grad()
def summed_nll(model, pieces: list[list[int]], batch_tokens: int = 16384) -> float:
    """Summed negative log-likelihood of every piece's tokens after its first, in length-sorted padded batches (the
    padding comes after a piece's tokens, where a causal model's earlier positions never look)."""
    order = sorted(range(len(pieces)), key=lambda i: len(pieces[i]))  # ascending: a batch's last is its longest
    total, i = 0.0, 0
    while i < len(order):
        end = i + 1
        while end < len(order) and (end + 1 - i) * len(pieces[order[end]]) <= batch_tokens:
            end += 1
        rows = [pieces[j] for j in order[i:end]]
        i = end
        batch = torch.full((len(rows), len(rows[-1])), -100, dtype=torch.long)  # (B, T)
        for b, r in enumerate(rows):
            batch[b, : len(r)] = torch.tensor(r)
        batch = batch.to(next(model.parameters()).device)  # the model's device
        inputs = batch[:, :-1].clamp(min=0)  # (B, T - 1): padding read as token 0, after the real tokens
        logits = model(inputs).logits.float()  # (B, T - 1, V)
        total += float(F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], ignore_index=-100, reduction="sum"))
    return total


def perplexity(model, tokenizer, start: int, texts: list[str]) -> dict:
    """Per-token and per-word perplexity over the texts, and the counts behind them."""
    pieces, tokens, words = [], 0, 0
    for text in tqdm(texts, desc="tokenizing", unit="review", file=sys.stderr):
        text = clean(text)
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        pieces += windows(model, ids, start) if ids else []
        tokens += len(ids)
        words += len(text.split()) if ids else 0
    nll = summed_nll(model, pieces)
    return {
        "perplexity_per_token": math.exp(nll / tokens),
        "perplexity_per_word": math.exp(nll / words),
        "tokens": tokens,
        "words": words,
        "n": len(texts),
    }


def evaluate_lm(model: str, ds, batch_size: int = 64) -> dict:
    """training.evaluate's scorer for the lm task (batch_size: unused, one review at a time)."""
    lm, tokenizer, start = load_lm(model)
    return perplexity(lm, tokenizer, start, list(ds["text"]))
