"""The Learn tab's glossary: a term's one-line definition shown on hover where the term first appears in a step.

`marked(text)` escapes the text (nothing typed or computed is rendered as HTML) and wraps the first use of each term
in an <abbr title="definition">: the browser shows the definition on hover (and a long press on a phone).
"""

import html
import re

GLOSSARY: dict[str, str] = {
    "token": "A piece of text the model reads as one unit: a word, part of a word or a punctuation mark.",
    "embedding": "The vector of numbers a token is turned into before the first layer.",
    "vector": "A list of numbers; here one per token, all of the same length (the model's width).",
    "dot product": "Multiply two vectors number by number and add up: large when they point the same way.",
    "softmax": "Turns a row of scores into weights that are positive and add up to 1; larger scores get more.",
    "weighted average": "A sum of vectors, each multiplied by its weight, the weights adding up to 1.",
    "query": "What a token is looking for: its vector times the learnt matrix W_Q.",
    "key": "What a token offers to be found by: its vector times the learnt matrix W_K.",
    "value": "What a token hands on when it is attended to: its vector times the learnt matrix W_V.",
    "attention": "Each token's output as a weighted average of the value vectors of the tokens it looks at.",
    "entropy": "How spread out a row of weights is: 0 when all weight is on one token, larger when spread.",
    "mask": "A table of which tokens a token may look at: True attends, False is left out of the softmax.",
    "padding": "Filler tokens that make the inputs of a batch equally long; a mask keeps them out.",
    "causal mask": "Each token may look only at itself and the tokens before it, never ahead.",
    "head": "One attention with its own queries, keys and values; a layer runs several side by side.",
    "residual stream": "The running sum each block adds its output to, carried from the embeddings to the output.",
    "layer normalisation": "Rescales each token's vector to a standard size before (or after) a block's part.",
    "feed-forward": "A small two-layer network applied to each token's vector on its own (also called the MLP).",
    "MLP": "Multi-layer perceptron: the block's feed-forward network, applied to each token alone.",
    "logit": "A raw score before the softmax; a higher logit becomes a higher probability.",
    "pooling": "Combining every token's vector into one vector for the whole input (for example their mean).",
    "temperature": "Divides the logits before the softmax: below 1 sharpens the distribution, above 1 flattens it.",
    "top-p": "Sampling only from the most likely tokens whose probabilities add up to p (the nucleus).",
    "cross-attention": "A decoder's attention whose queries are its own tokens and keys and values the encoder's.",
    "encoder": "The part of a model that reads the whole input at once, every token seeing every other.",
    "decoder": "The part of a model that writes its output one token at a time, each seeing only the past.",
    "unembedding": "The matrix that turns the last vector into one logit per token of the vocabulary.",
}
_TERMS = sorted(GLOSSARY, key=len, reverse=True)  # "causal mask" before "mask"
_PATTERN = re.compile(r"\b(" + "|".join(re.escape(t) for t in _TERMS) + r")s?\b", re.IGNORECASE)


def marked(text: str, seen: set[str] | None = None) -> str:
    """The text as HTML: escaped, each glossary term's first use (not in `seen`, which is updated) in an <abbr>
    with its definition as the title."""
    seen = set() if seen is None else seen
    out, last = [], 0
    for match in _PATTERN.finditer(text):
        word = match.group(0)
        term = next(t for t in _TERMS if word.lower() in (t.lower(), t.lower() + "s"))
        if term in seen:
            continue
        seen.add(term)
        out.append(html.escape(text[last : match.start()]))
        title = html.escape(GLOSSARY[term], quote=True)
        out.append(f'<abbr class="learn-term" title="{title}" tabindex="0">{html.escape(word)}</abbr>')
        last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)
