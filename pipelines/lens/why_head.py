"""Why a head looks there: the maths of pipelines.lens.score_parts, pipelines.lens.composition and
pipelines.attention.over_set on a model's stacks (one cell of each family's model; each family's part, its tokens and
stacks, is in pipelines/lens/family.py). The methods (score_attribution, composition, copying_scores, copied_tokens,
head_table_over) are LensMethods' (pipelines/lens/operations.py)."""

import torch

from pipelines.attention import over_set
from pipelines.attention.over_set import HeadTableOverSet, InductionSet
from pipelines.lens import composition as compose
from pipelines.lens import induction_circuit as circuit
from pipelines.lens import score_parts
from pipelines.lens.composition import Composition, Copying, Stack
from pipelines.lens.readout import readout_of
from pipelines.lens.score_parts import ScoreParts, Side


def _cached(model, names: list[str], *inputs) -> dict:
    with torch.no_grad():
        return model.run_with_cache(*inputs, names=names)[1]


# --- a score taken apart --------------------------------------------------------------------------------------------


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
    """The heads of `attention` (None: the family's first kind) in the pipeline's model, with the embeddings and
    unembedding their OV circuits go through (the family's Stack: pipelines/lens/family.py)."""
    readout_of(pipe.adapter)  # a transformers model: ValueError
    family = pipe.lens_family
    return family.stack(pipe.model, _kind(attention, family.attentions))


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
    layer = score_parts.check_index("layer", layer, len(stack.blocks))
    head = score_parts.check_index("head", head, stack.blocks[0].attn.n_heads)
    text = pipe.lens_family.vocabulary_text(pipe)
    return [(text(i), v) for i, v in compose.copied(stack, layer, head, n)]


# --- heads over a data set ----------------------------------------------------------------------------------------


def head_table_over(pipe, texts, progress=None, stop=None, name: str = "", effects: bool = True) -> HeadTableOverSet:
    """The pipeline's head table (its family's: pipelines/lens/family.py) on each of `texts` (a bundled set's name; a
    language model: or an InductionSet), summarized per head. effects=False: the attention columns alone (switching
    every head off, one at a time, is most of the cost)."""
    readout_of(pipe.adapter)  # a transformers model: ValueError
    if isinstance(texts, InductionSet):
        return _induction_over(pipe, texts, progress, stop)
    if isinstance(texts, str):
        texts, name = over_set.bundled_set(texts), name or texts
    return over_set.measure(pipe.lens_family.head_table(pipe, effects), list(texts), progress, stop, name)


def _induction_over(pipe, s: InductionSet, progress, stop) -> HeadTableOverSet:
    if not pipe.lens_family.prefix_lens:  # causal: the next-word model
        raise ValueError("the induction set is for a language model of this project")
    c = pipe.model.config
    ids = s.ids(c.vocab_size, c.bos_id, c.max_len).to(pipe.adapter.device)  # (n, 1 + 2 length)
    n = s.fitted(c.max_len)
    return over_set.measure(lambda row: over_set.induction_table(pipe.model, row, n), list(ids), progress, stop, s.name)


def induction_circuit(pipe, top: int = 1, carriers: int = 3, s: InductionSet | None = None):
    """pipelines.lens.induction_circuit on a language model of this project (default set: 2 sequences of 20 random
    tokens, twice: a batched pass, a pass a sequence for the key sides, three passes a head with heads off)."""
    readout_of(pipe.adapter)  # a transformers model: ValueError
    if not pipe.lens_family.prefix_lens:  # causal: the next-word model
        raise ValueError("the induction circuit is found in a language model of this project")
    return circuit.induction_circuit(pipe.model, top, carriers, s or InductionSet(n=2, length=20, seed=0))
