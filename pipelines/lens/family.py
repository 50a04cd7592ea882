"""What the lens operations (operations.py) know of a family of models: the pass to run on an input (a Read: what the
stack read out reads, where the answer is read, the positions' labels), from which layer it can start again, and how
a target becomes an output id. Family: the next-word model's, the defaults; Review and Sentence state what differs."""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from pipelines.attention import heads
from pipelines.attention.attention_maps import token_texts
from pipelines.batching import pad
from pipelines.lens import why_head
from pipelines.lens.composition import Stack
from pipelines.lens.readout import Readout, encoder_readout, readout_of


@dataclass(frozen=True)
class Read:
    """One pass as the operations read it: `ids` (1, T) into `stack`, forward(ids (B, T)) the adapter's output on a
    batch of them, the answer read at `position` (-1: the last), `produced` the outputs the model produced at each
    position (the default targets; None: the most likely), `real` (1, T) the classifier's real tokens."""

    ids: torch.Tensor
    tokens: list[str]
    stack: Readout
    forward: Callable[[torch.Tensor], object]
    position: int = -1
    produced: list[int] | None = None
    real: torch.Tensor | None = None


def _only(kind: str, kinds: tuple[str, ...], what: str) -> None:
    if kind not in kinds:
        raise ValueError(f"{what} only, not {kind!r}")


def _check_step(step: int, n: int, what: str, chat: bool = False) -> int:
    if not 0 <= step < n:
        raise ValueError(f"step {step} is not one of this {what}'s steps (0..{n - 1})")
    if chat:
        raise ValueError(f"a {what} is read as it is: there is no chat template")
    return step


class Family:
    """The next-word model's answers: the next token after the last position read."""

    prefix_lens = True  # causal: the lens of step s is that of what was read at s (else the whole pass's, each step)
    switched = ("attn",)  # the attentions whose heads are switched off, each block's
    score_kind = "causal"  # the attention a score is taken apart in by default (why_head)
    attentions = ("causal",)  # the kinds of attention whose heads compose (the first: the default)

    def score_parts(self, pipe, text: str, layer, head, query, key, step, kind, result):
        """why_head's ScoreParts: positions into `result`'s sequence (None: the prompt as the model reads it)."""
        _only(kind, ("causal", "self"), "the language model has causal self-attention")
        ids = list(result.sequence_ids) if result is not None else self._ids(pipe, text, False)
        tokens = [pipe.adapter.token_text(i) for i in ids]
        return why_head.causal_cell(pipe.model, ids, tokens, layer, head, query, key)

    def stack(self, model, kind: str) -> Stack:
        """The heads of `kind` with the embeddings and unembedding their OV circuits go through."""
        return Stack("causal", model.blocks, model.tok_emb.weight, model.W_U, model.final_norm)

    def head_table(self, pipe, effects: bool = True) -> Callable[[str], list]:
        """One input's head table, for a set's: a prompt's effect on its first new token (greedy); effects=False: the
        attention columns alone."""
        return lambda prompt: heads.lm_head_table(pipe, pipe(prompt, max_new_tokens=1), pipe.induction, effects=effects)

    def output_text(self, pipe) -> Callable[[int], str]:
        return pipe.adapter.token_text

    def vocabulary_text(self, pipe) -> Callable[[int], str]:
        """id -> the text of a token of the vocabulary the stack's embeddings are over, as the views label it."""
        return pipe.adapter.token_text

    def tokenize(self, pipe, text: str) -> list[int]:
        """The ids of a text (a target named by a text that is one token)."""
        return pipe.adapter.tokenize(text)[0]

    def answers(self, out) -> torch.Tensor:
        """The adapter's output -> the answers' logits (B, T, V) at every position."""
        return out.logits

    def pool(self, out) -> torch.Tensor | None:
        """The pooling weights (T,) the pass read its states with, where the readout pools."""
        return None

    def from_layer(self, pipe, read: Read) -> Callable | None:
        """(layer, resid (B, T, D), ids (B, T)) -> the answer's logits (B, V) from block `layer`'s input on (None:
        every run starts from the ids). Below the last block, the last one asks its last query alone."""
        last, model = len(read.stack.blocks) - 1, pipe.adapter.model
        return lambda layer, resid, x: model.forward_from(layer, resid, last_only=layer < last).logits[:, -1]

    def _ids(self, pipe, text: str, chat: bool) -> list[int]:
        ids = list(pipe.encode(text, chat).ids)
        if not ids:
            raise ValueError("the prompt has no tokens")
        return ids

    def _over(self, pipe, ids: list[int]) -> Read:
        a = pipe.adapter
        x = torch.tensor([ids], device=a.device)  # (1, T)
        return Read(x, [a.token_text(i) for i in ids], readout_of(a), a.forward)

    def read(self, pipe, text: str, step: int = 0, result=None, chat: bool = False) -> Read:
        """What the model read when it chose new token `step` of `result` (None: the prompt, for step 0; a greedy
        continuation now, for a later one)."""
        if result is None and step == 0:
            return self._over(pipe, self._ids(pipe, text, chat))
        result = result or pipe(text, max_new_tokens=step + 1, chat=chat)
        _check_step(step, max(len(result.steps), 1), "continuation")
        return self._over(pipe, list(result.sequence_ids[: len(result.tokens) + step]))

    def read_steps(self, pipe, text: str, result=None, chat: bool = False) -> tuple[Read, list[int]]:
        """One pass over every step of `result` (None: a greedy continuation now), and each step's position in it."""
        r = result or pipe(text, chat=chat)
        return self._over(pipe, list(r.sequence_ids)), [len(r.tokens) + s - 1 for s in range(len(r.steps))]

    def patch_reads(self, pipe, clean: str, corrupted: str, step: int | None) -> tuple[Read, Read, str]:
        """The two inputs' passes (on one stack), and where the metric is read (said after it)."""
        if step not in (None, 0):
            raise ValueError("the patching metric is read at the next token: there is no other step to read it at")
        return self._over(pipe, self._ids(pipe, clean, False)), self._over(pipe, self._ids(pipe, corrupted, False)), ""

    def patch_contrast(self, pipe, target: int, corrupted_logits: torch.Tensor) -> int:
        """The corrupted run's answer, the metric's other side when none is named."""
        return int(corrupted_logits.argmax())


class Review(Family):
    """The classifier's: the label, from the pooled states of every position; a target is a label's index or name."""

    prefix_lens = False
    score_kind = "self"
    attentions = ("self",)

    def score_parts(self, pipe, text: str, layer, head, query, key, step, kind, result):
        _only(kind, ("self",), "the classifier has self-attention")
        read = self._over(pipe, text)
        return why_head.classifier_cell(pipe.model, read.ids[0].tolist(), read.tokens, layer, head, query, key)

    def stack(self, model, kind: str) -> Stack:
        """Its token embeddings, transposed, stand in for an unembedding over its vocabulary (it has none)."""
        enc = model.encoder
        return Stack("self", enc.blocks, model.tok_emb.weight, model.tok_emb.weight.T, enc.final_norm)

    def head_table(self, pipe, effects: bool = True) -> Callable[[str], list]:
        return lambda text: heads.sentiment_head_table(pipe, text, effects)

    def output_text(self, pipe) -> Callable[[int], str]:
        return lambda i: pipe.labels[i]

    def vocabulary_text(self, pipe) -> Callable[[int], str]:
        """The classifier's adapter has no token_text: its tokenizer's pieces (special_name: "##ing" for a WordPiece
        continuation)."""
        return pipe.adapter.special_name

    def tokenize(self, pipe, text: str) -> list[int]:
        return []  # a label is named (the top outputs' texts are every label), not tokenized

    def answers(self, out) -> torch.Tensor:
        return out.logits[:, None]  # (B, 1, C): one answer, the pooled states'

    def pool(self, out) -> torch.Tensor | None:
        return out.token_weights[0] if out.token_weights is not None else None

    def from_layer(self, pipe, read: Read) -> Callable | None:
        model = pipe.adapter.model
        return lambda layer, resid, x: model.forward_from(layer, resid, x).logits

    def _over(self, pipe, text: str) -> Read:
        review, a = pipe.encode(text), pipe.adapter
        if not review.ids:
            raise ValueError("the text has no tokens")
        x = torch.tensor([review.ids], device=a.device)  # (1, T)
        return Read(x, token_texts(review.tokens), readout_of(a), a.forward, real=x != a.pad_id)

    def read(self, pipe, text: str, step: int = 0, result=None, chat: bool = False) -> Read:
        _check_step(step, 1, "review", chat)  # one answer: step 0
        return self._over(pipe, text)

    def read_steps(self, pipe, text: str, result=None, chat: bool = False) -> tuple[Read, list[int]]:
        return self.read(pipe, text, 0, result, chat), [-1]

    def patch_reads(self, pipe, clean: str, corrupted: str, step: int | None) -> tuple[Read, Read, str]:
        _check_step(step or 0, 1, "review")
        return self._over(pipe, clean), self._over(pipe, corrupted), ""

    def patch_contrast(self, pipe, target: int, corrupted_logits: torch.Tensor) -> int:
        return 1 - target if len(pipe.labels) == 2 else int(corrupted_logits.argmax())


class Sentence(Family):
    """The translator's: decoding step s of a translation, teacher-forced on it (default target: the token produced
    there); patching puts back the encoder's states."""

    prefix_lens = False
    switched = ("attn", "cross_attn")
    score_kind = "cross"
    attentions = ("encoder", "decoder")

    def score_parts(self, pipe, text: str, layer, head, query, key, step, kind, result):
        """kind "encoder" (query and key: source positions), "decoder" or "cross" (the query a decoder position: it
        reads the output of step t - 1 and chooses the token of step t, so `step`, where given, is the query), on
        `result`'s output (None: greedy now)."""
        a, source = pipe.adapter, pipe.source_input(text)
        if len(source.ids) <= 1:
            raise ValueError("the text has no tokens")
        target_ids = list((pipe(text, beam_size=1) if result is None else result).target_ids)
        tokens = (token_texts(source.tokens), ["<s>"] + [a.token_text(i) for i in target_ids[:-1]])
        query = query if step is None or kind == "encoder" else step
        tgt = [a.bos_id] + target_ids[:-1]
        return why_head.seq2seq_cell(pipe.model, source.ids, tgt, tokens, kind, layer, head, query, key)

    def stack(self, model, kind: str) -> Stack:
        stack, embed = (model.encoder, model.src_emb) if kind == "encoder" else (model.decoder, model.tgt_emb)
        return Stack(kind, stack.blocks, embed.weight, model.W_U, stack.final_norm)

    def head_table(self, pipe, effects: bool = True) -> Callable[[str], list]:
        """Greedy, without the agreement column (an explanation a sentence)."""
        return lambda text: heads.translation_head_table(pipe, text, beam_size=1, agreement=False, effects=effects)

    def from_layer(self, pipe, read: Read) -> Callable | None:
        return None

    def _source(self, pipe, text: str) -> torch.Tensor:
        ids = pipe.encode_source([text])[0]
        if len(ids[0]) <= 1:
            raise ValueError("the text has no tokens")
        return pad(ids, pipe.adapter.pad_id, pipe.adapter.device)  # (1, Ts)

    def _over(self, pipe, text: str, result, step: int) -> Read:
        a, src = pipe.adapter, self._source(pipe, text)
        tgt = pad([[a.bos_id] + list(result.target_ids)[:-1]], a.pad_id, a.device)  # (1, Tt)
        forward = lambda x: a.forward(src.expand(x.size(0), -1), x)  # noqa: E731
        tokens = ["<s>", *result.target_tokens[:-1]]
        return Read(tgt, tokens, readout_of(a), forward, step, list(result.target_ids))

    def read(self, pipe, text: str, step: int = 0, result=None, chat: bool = False) -> Read:
        result = pipe(text, beam_size=1) if result is None else result
        return self._over(pipe, text, result, _check_step(step, len(result.target_ids), "translation", chat))

    def read_steps(self, pipe, text: str, result=None, chat: bool = False) -> tuple[Read, list[int]]:
        return (read := self.read(pipe, text, 0, result, chat)), list(range(read.ids.size(1)))

    def patch_reads(self, pipe, clean: str, corrupted: str, step: int | None) -> tuple[Read, Read, str]:
        a, result = pipe.adapter, pipe(clean, beam_size=1)
        srcs = [self._source(pipe, text) for text in (clean, corrupted)]  # (1, Ts) each
        step = first_difference(pipe, srcs, result.target_ids) if step is None else step
        _check_step(step, len(result.target_ids), "translation")
        tgt = torch.tensor([[a.bos_id] + list(result.target_ids)[:step]], device=a.device)  # (1, step + 1)
        forward = lambda x: a.forward(x, tgt.expand(x.size(0), -1))  # noqa: E731
        encoder = encoder_readout(a.model)
        reads = [Read(x, [a.token_text(i) for i in x[0].tolist()], encoder, forward) for x in srcs]
        return *reads, f" at decoding step {step}"


def first_difference(pipe, srcs: list, target_ids: list[int]) -> int:
    """The first decoding step at which the two sources (1, Ts) each, teacher-forced on the clean translation
    target_ids, put different tokens first; ValueError where they never do."""
    a = pipe.adapter
    tgt = torch.tensor([[a.bos_id] + list(target_ids)[:-1]], device=a.device)  # (1, Tt)
    with torch.no_grad():
        first, second = (a.forward(x, tgt).logits[0].argmax(-1) for x in srcs)  # (Tt,) each
    differ = (first != second).nonzero()
    if not len(differ):
        raise ValueError("the two sentences put the same token first at every step of the translation: no answer "
                         "differs, so there is nothing to patch back")  # fmt: skip
    return int(differ[0, 0])
