"""Why a head looks there, per family: the glue between a pipeline (its tokenizing, its model's stacks) and the maths
of pipelines.lens.score_parts, pipelines.lens.composition and pipelines.attention.over_set. Each pipeline's methods
(score_attribution, composition, copying_scores, copied_tokens, head_table_over) call one function here."""

import torch

from pipelines.attention import heads, over_set
from pipelines.attention.attention_maps import token_texts
from pipelines.attention.over_set import HeadTableOverSet, InductionSet
from pipelines.lens import composition as compose
from pipelines.lens import score_parts
from pipelines.lens.composition import Composition, Copying, Stack
from pipelines.lens.score_parts import ScoreParts, Side
from pipelines.models.adapter import OurCausalLM, OurClassifier, OurSeq2Seq

NOT_OURS = (
    "Why a head looks there reads the residual stream through this project's hook points: it is there for the models "
    "of this project (from scratch or with public weights loaded into our code), not for a transformers model."
)


def ours(pipe, cls) -> None:
    if not isinstance(pipe.adapter, cls):
        raise ValueError(NOT_OURS)


def _cached(model, names: list[str], *inputs) -> dict:
    with torch.no_grad():
        return model.run_with_cache(*inputs, names=names)[1]


# --- a score taken apart --------------------------------------------------------------------------------------------


def sentiment_score_parts(pipe, text: str, layer: int, head: int, query: int, key: int, kind: str = "self"):
    ours(pipe, OurClassifier)
    if kind != "self":
        raise ValueError(f"the classifier has self-attention only, not {kind!r}")
    read = pipe.encode(text)
    if not read.ids:
        raise ValueError("the text has no tokens")
    return classifier_cell(pipe.model, read.ids, token_texts(read.tokens), layer, head, query, key)


def classifier_cell(model, ids: list[int], tokens: list[str], layer: int, head: int, query: int, key: int):
    """ScoreParts of a TransformerClassifier's head at (query, key) on ids."""
    x = torch.tensor([ids], device=model.tok_emb.weight.device)  # (1, T)
    with torch.no_grad():
        tok = model.tok_emb(x)[0]  # (T, D)
        if model.ngram_emb is not None:
            tok = tok + model.ngram_emb(x)[0] / model.encoder.scale
    side = Side(model.encoder, "", tokens, tok * model.encoder.scale)
    cache = _cached(model, score_parts.names_for(side, None, layer, False), x)
    return score_parts.take_apart(cache, side, layer, head, query, key, "self")


def translation_score_parts(pipe, text, layer, head, query, key, step=None, kind="cross", target_ids=None):
    """kind "encoder" (query and key: source positions), "decoder" (decoder positions) or "cross" (query a decoder
    position, key a source position); decoder position t reads the output of step t - 1 (0: the start token) and
    chooses the token of step t, so `step`, where given, is the query's position."""
    ours(pipe, OurSeq2Seq)
    a = pipe.adapter
    source = pipe.source_input(text)
    if len(source.ids) <= 1:
        raise ValueError("the text has no tokens")
    target_ids = list(pipe(text, beam_size=1).target_ids if target_ids is None else target_ids)
    tgt = [a.bos_id] + target_ids[:-1]
    tokens = (token_texts(source.tokens), ["<s>"] + [a.token_text(i) for i in target_ids[:-1]])
    query = query if step is None or kind == "encoder" else step
    return seq2seq_cell(pipe.model, source.ids, tgt, tokens, kind, layer, head, query, key)


def seq2seq_cell(model, src: list[int], tgt: list[int], tokens, kind: str, layer, head, query, key) -> ScoreParts:
    """ScoreParts of a Seq2SeqTransformer's head of `kind` ("encoder", "decoder", "cross") at (query, key), the
    decoder reading tgt (its start token first); tokens: (the source's texts, the decoder's)."""
    if kind not in ("encoder", "decoder", "cross"):
        raise ValueError(f"the translator's attention is 'encoder', 'decoder' or 'cross', not {kind!r}")
    device = model.lm_head.weight.device
    s, t = torch.tensor([src], device=device), torch.tensor([tgt], device=device)  # (1, Ts), (1, Tt)
    enc = Side(model.encoder, "encoder.", tokens[0])
    dec = Side(model.decoder, "decoder.", tokens[1])
    q_side, k_side = (enc, None) if kind == "encoder" else (dec, enc if kind == "cross" else None)
    cache = _cached(model, score_parts.names_for(q_side, k_side, layer, kind == "cross"), s, t)
    return score_parts.take_apart(cache, q_side, layer, head, query, key, kind, k_side)


def lm_score_parts(pipe, text, layer, head, query, key, kind="causal", result=None) -> ScoreParts:
    """Positions into the result's sequence (prompt and generated tokens; None: the prompt as the model reads it)."""
    ours(pipe, OurCausalLM)
    if kind not in ("causal", "self"):
        raise ValueError(f"the language model has causal self-attention only, not {kind!r}")
    ids = list(result.sequence_ids) if result is not None else list(pipe.encode(text).ids)
    return causal_cell(pipe.model, ids, [pipe.adapter.token_text(i) for i in ids], layer, head, query, key)


def causal_cell(model, ids: list[int], tokens: list[str], layer: int, head: int, query: int, key: int):
    """ScoreParts of a CausalLM's head at (query, key) on ids."""
    if key > query:
        raise ValueError(f"key {key} is after query {query}: a causal head cannot look there")
    x = torch.tensor([ids], device=model.tok_emb.weight.device)  # (1, T)
    side = Side(model, "", tokens)
    cache = _cached(model, score_parts.names_for(side, None, layer, False), x)
    return score_parts.take_apart(cache, side, layer, head, query, key, "causal")


# --- heads composing: the weights --------------------------------------------------------------------------------


def stack_of(pipe, attention: str | None = None) -> Stack:
    """The heads of `attention` in the pipeline's model, with the embeddings and unembedding their OV circuits go
    through (the classifier has no unembedding over its vocabulary: its token embeddings, transposed, stand in)."""
    model = pipe.model
    if isinstance(pipe.adapter, OurClassifier):
        _kind(attention, ("self",))
        enc = model.encoder
        return Stack("self", enc.blocks, model.tok_emb.weight, model.tok_emb.weight.T, enc.final_norm)
    if isinstance(pipe.adapter, OurSeq2Seq):
        kind = _kind(attention, ("encoder", "decoder"))
        stack, embed = (model.encoder, model.src_emb) if kind == "encoder" else (model.decoder, model.tgt_emb)
        return Stack(kind, stack.blocks, embed.weight, model.W_U, stack.final_norm)
    if isinstance(pipe.adapter, OurCausalLM):
        _kind("causal" if attention == "self" else attention, ("causal",))
        return Stack("causal", model.blocks, model.tok_emb.weight, model.W_U, model.final_norm)
    raise ValueError(NOT_OURS)


def _kind(attention: str | None, kinds: tuple[str, ...]) -> str:
    if attention is None:
        return kinds[0]
    if attention not in kinds:
        raise ValueError(f"heads compose within one kind of attention: {', '.join(kinds)}, not {attention!r}")
    return attention


def composition(pipe, kind: str = "k", attention: str | None = None) -> Composition:
    return compose.composition(stack_of(pipe, attention), kind)


def copying_scores(pipe, attention: str | None = None) -> Copying:
    return compose.copying_scores(stack_of(pipe, attention))


def copied_tokens(pipe, layer: int, head: int, n: int = 10, attention: str | None = None) -> list[tuple[str, float]]:
    stack = stack_of(pipe, attention)
    layer = score_parts._check("layer", layer, len(stack.blocks))
    head = score_parts._check("head", head, stack.blocks[0].attn.n_heads)
    return [(pipe.adapter.token_text(i), v) for i, v in compose.copied(stack, layer, head, n)]


# --- heads over a data set ----------------------------------------------------------------------------------------


def head_table_over(pipe, texts, progress=None, stop=None, name: str = "", decoding=None) -> HeadTableOverSet:
    """The pipeline's head table on each of `texts` (a bundled set's name; a language model: or an InductionSet),
    summarized per head. A translation is greedy, without the agreement column (an explanation a sentence); a
    language model's effect is on its first new token (decoding: one new token, greedy)."""
    if isinstance(texts, InductionSet):
        return _induction_over(pipe, texts, progress, stop)
    if isinstance(texts, str):
        texts, name = over_set.bundled_set(texts), name or texts
    if type(pipe.adapter) not in TABLES:
        raise ValueError(NOT_OURS)
    return over_set.measure(TABLES[type(pipe.adapter)](pipe, decoding), list(texts), progress, stop, name)


def _sentiment_table(pipe, decoding=None):
    return lambda text: heads.sentiment_head_table(pipe, text)


def _translation_table(pipe, decoding=None):
    return lambda text: heads.translation_head_table(pipe, text, beam_size=1, agreement=False)


def _lm_table(pipe, decoding=None):
    """Each prompt's head table, its effect on the first new token (decoding None: one new token, greedy)."""
    from pipelines.language_model import Decoding  # the pipeline's own options (its module imports this one)

    decoding = decoding or Decoding(max_new_tokens=1)
    return lambda prompt: heads.lm_head_table(pipe, pipe.generate(prompt, decoding), pipe.induction)


TABLES = {OurClassifier: _sentiment_table, OurSeq2Seq: _translation_table, OurCausalLM: _lm_table}


def _induction_over(pipe, s: InductionSet, progress, stop) -> HeadTableOverSet:
    if not isinstance(pipe.adapter, OurCausalLM):
        raise ValueError("the induction set is for a language model of this project")
    c = pipe.model.config
    ids = s.ids(c.vocab_size, c.bos_id, c.max_len).to(pipe.adapter.device)  # (n, 1 + 2 length)
    n = s.fitted(c.max_len)
    return over_set.measure(lambda row: over_set.induction_table(pipe.model, row, n), list(ids), progress, stop, s.name)
