"""One source of attention by kind, layer and head, for any model and any view.

Kinds: "self" for a classifier; "encoder", "decoder" (self-attention) and "cross" for a translator; "causal" for a
language model. A view
asks for a kind, a layer and a head and gets a (Tq, Tk) map with the tokens of its rows and columns, whichever
model (ours or a `transformers` one) made it. Layers and heads count from 0; rows are queries.
"""

from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class AttentionMaps:
    """Every attention map of one run: kind -> (L, H, Tq, Tk), with the tokens of the rows and columns."""

    maps: dict[str, np.ndarray]  # kind -> (L, H, Tq, Tk) float32 (see astype), rows = queries, each row sums to 1
    queries: dict[str, list[str]]  # kind -> Tq token texts (rows)
    keys: dict[str, list[str]]  # kind -> Tk token texts (columns)
    # kind -> (L, H, Tk) ||v_j W_O^h||: what each key's value carries through its head's output projection
    carried: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def kinds(self) -> list[str]:
        return list(self.maps)

    def n_layers(self, kind: str) -> int:
        return self.maps[kind].shape[0]

    @property
    def n_heads(self) -> int:
        return next(iter(self.maps.values())).shape[1]

    def astype(self, dtype) -> "AttentionMaps":
        """The same maps in another dtype (float16 halves what a session keeps), the same tokens."""
        maps = {k: cast(m, dtype) for k, m in self.maps.items()}
        return AttentionMaps(maps, self.queries, self.keys, {k: cast(c, dtype) for k, c in self.carried.items()})

    def norm_maps(self, kind: str) -> np.ndarray | None:
        """(L, H, Tq, Tk) ||w_ij v_j W_O^h|| (Kobayashi et al. 2020): the weights times what each value carries;
        None when the run kept no value norms."""
        carried = self.carried.get(kind)
        if carried is None:
            return None
        return self.maps[kind].astype(np.float32) * carried.astype(np.float32)[:, :, None, :]

    def layer(self, kind: str, layer: int) -> np.ndarray:
        """(H, Tq, Tk): every head of one layer."""
        return self.maps[kind][layer]

    def head(self, kind: str, layer: int, head: int) -> np.ndarray:
        """(Tq, Tk): one head."""
        return self.maps[kind][layer, head]


def cast(a: np.ndarray, dtype) -> np.ndarray:
    """a in dtype, as numpy's astype gives it. float32 to float16 goes through torch, the same bits: a third of a
    long review's weights are under float16's smallest normal number, which numpy converts one by one (0.40 s for
    the 72 maps of the 309-word review here, 0.02 s through torch)."""
    if a.dtype == np.float32 and np.dtype(dtype) == np.float16 and a.dtype.isnative:
        return torch.from_numpy(np.ascontiguousarray(a)).to(torch.float16).numpy()
    return a.astype(dtype)


def _stack(per_layer) -> np.ndarray:
    """Per layer (H, Tq, Tk) tensors or arrays -> (L, H, Tq, Tk) float32."""
    return np.stack([np.asarray(a.float().numpy() if hasattr(a, "float") else a, dtype=np.float32) for a in per_layer])


def token_texts(tokens) -> list[str]:
    """What to show for TokenSpans: the text typed, a special token's name ([CLS], [SEP], </s>), or '␣' for a
    token that covers no characters and has no name."""
    return [t.text or getattr(t, "special", "") or "␣" for t in tokens]


def sentiment_maps(result) -> AttentionMaps:
    """The classifier's self-attention of a SentimentResult (which must hold its maps)."""
    toks = token_texts(result.tokens)
    carried = {"self": _stack(result.value_norms)} if result.value_norms else {}
    return AttentionMaps({"self": _stack(result.attentions)}, {"self": toks}, {"self": toks}, carried)


def translation_maps(result) -> AttentionMaps:
    """Encoder, decoder and cross-attention of a TranslationResult. The decoder's rows are the steps (the token
    produced at each), its keys what it read: the start token, then its own earlier output."""
    src = [t.text for t in result.source_tokens[:-1]] + ["</s>"]
    tgt = list(result.target_tokens)
    read = ["<s>", *tgt[:-1]]
    maps = {
        "encoder": _stack(result.encoder_attentions),
        "decoder": _stack(result.decoder_attentions),
        "cross": _stack(result.cross_attentions),
    }
    carried = {kind: _stack(norms) for kind, norms in result.value_norms.items() if norms}
    return AttentionMaps(
        maps, {"encoder": src, "decoder": tgt, "cross": tgt}, {"encoder": src, "decoder": read, "cross": src}, carried
    )


def lm_maps(result) -> AttentionMaps:
    """The causal self-attention of a complete LanguageModelResult: rows and columns are the sequence of its one
    pass, the prompt's tokens (<s> and a chat template's by name) then the generated ones but the last."""
    toks = result.sequence_texts
    carried = {"causal": _stack(result.value_norms)} if result.value_norms else {}
    return AttentionMaps({"causal": _stack(result.attentions)}, {"causal": toks}, {"causal": toks}, carried)
