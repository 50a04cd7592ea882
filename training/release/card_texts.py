"""What a model card says about each task: its Hub metadata (pipeline tag, language, data set, metrics) and its prose
(what the model is, what it is for and not for, how to load it). training/tasks/table.py gives each task its entry;
training/release/model_card.py writes the card.
"""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TaskInfo:
    """What the Hub metadata and the card's prose say about one task."""

    pipeline_tag: str
    language: list[str]
    dataset_id: str
    dataset_name: str
    tags: list[str]
    metrics: list[tuple[str, str, str]]  # (key in metrics.json "test", Hub metric id, display name)
    pipeline_class: str
    summary: str
    intended: list[str]
    not_for: list[str]
    example: str  # after `pipe = <pipeline_class>.from_pretrained(repo)`
    auto_model: str  # the transformers Auto class that loads the repo (training/release/hf_export.py)
    transformers_example: str  # after `tokenizer = ...` and `model = <auto_model>.from_pretrained(...)`
    transformers_note: str
    architecture: Callable[[dict], str]  # config.json -> the model in words, after 'A 6.1M-parameter'
    not_for_fine_tuned: list[str] | None = None  # in place of not_for for a model fine-tuned from public weights


POOLING_WORDS = {"attention": "a learned attention pooling", "cls": "BERT's tanh pooler over [CLS]"}


def encoder_classifier(c: dict) -> str:
    pooling = POOLING_WORDS.get(c.get("pooling"), "mean pooling")
    ngrams = (
        f", plus hashed n-gram embeddings (orders 2-{c['ngram_order']}, {c['ngram_buckets']:,} buckets)"
        if c.get("ngram_buckets")
        else ""
    )
    return (
        f"transformer encoder classifier ({c['n_layers']} layers, {c['d_model']} wide, {c['n_heads']} heads, "
        f"{pooling} over the tokens{ngrams})"
    )


def encoder_decoder(c: dict) -> str:
    return (
        f"encoder-decoder transformer ({c['n_encoder_layers']} encoder and {c['n_decoder_layers']} decoder layers, "
        f"{c['d_model']} wide, {c['n_heads']} heads, one shared German-English vocabulary)"
    )


def decoder_only(c: dict) -> str:
    kv = c.get("n_kv_heads") or c["n_heads"]
    return (
        f"decoder-only transformer ({c['n_layers']} layers, {c['d_model']} wide, {c['n_heads']} query heads sharing "
        f"{kv} key/value heads, rotary positions, RMSNorm, SwiGLU)"
    )


SENTIMENT = TaskInfo(
    pipeline_tag="text-classification",
    language=["en"],
    dataset_id="stanfordnlp/imdb",
    dataset_name="IMDB",
    tags=["sentiment-analysis", "imdb"],
    metrics=[("accuracy", "accuracy", "Accuracy"), ("ece", "ece", "Expected calibration error (10 bins)")],
    pipeline_class="SentimentPipeline",
    summary="reads an English movie review and says whether it is positive or negative, returning every "
    "attention map it used on the way",
    intended=[
        "Seeing how a small transformer encoder attends over a review: per layer and head, and the "
        "weights of its pooling, in the project's interactive demo.",
        "Teaching and experiments: the model, its tokenizer and its training code are small and readable.",
        "Sentiment of English movie reviews, as a demonstration.",
    ],
    not_for=[
        "Production sentiment analysis, or any decision about people: it is small, and trained from scratch "
        "on English movie reviews only (IMDB and SST-2).",
        "Other kinds of text (tweets, product reviews, news) or other languages: it has only seen English "
        "movie reviews, and its tokenizer was trained on them.",
        'Subtle cases: negation (even right next to what it negates), contrast with "but" or "yet", '
        "sarcasm and mixed reviews. Expect errors there: the contrast-set scores below say how many.",
        "Reviews longer than it reads: only the beginning and the end of a long review are kept.",
        "Text with no opinion: it always answers positive or negative, and its probabilities are calibrated on "
        'reviews that take a side; a plain statement ("It was released in 1998.") can still get a high one.',
        "Explanations: attention weights show where the model looked, not why it decided.",
    ],
    not_for_fine_tuned=[
        "Production sentiment analysis, or any decision about people: it is a small encoder (pre-trained for "
        "sentence embeddings) fine-tuned here on English movie reviews only (IMDB and SST-2).",
        "Other kinds of text (tweets, product reviews, news) or other languages: it was fine-tuned on English "
        "movie reviews only.",
        'Subtle cases: sarcasm, mixed reviews, and some negation and contrast ("but", "yet"). Expect errors '
        "there: the contrast-set scores below say how many.",
        "Reviews longer than it reads: only the beginning and the end of a long review are kept.",
        "Text with no opinion: it always answers positive or negative, and its probabilities are calibrated on "
        'reviews that take a side; a plain statement ("It was released in 1998.") can still get a high one.',
        "Explanations: attention weights show where the model looked, not why it decided.",
    ],
    example='result = pipe("A moving, beautifully acted film.")\n'
    "print(result.label, result.confidence)\n"
    "result.attentions[-1]  # the last layer's attention: (heads, tokens, tokens)",
    auto_model="AutoModelForSequenceClassification",
    transformers_example='reviews = ["A moving, beautifully acted film.", "Dull and far too long."]\n'
    'batch = tokenizer(reviews, padding=True, return_tensors="pt")\n'
    "with torch.no_grad():\n"
    "    out = model(**batch, output_attentions=True)\n"
    "print([model.config.id2label[int(i)] for i in out.logits.argmax(-1)])\n"
    "out.attentions[-1]  # the last layer's attention: (batch, heads, tokens, tokens)",
    transformers_note="The logits are the pipeline's before its calibration (the pipeline divides them by a "
    "fitted temperature before the softmax), and so are the scores of "
    '`transformers.pipeline("text-classification", model=..., trust_remote_code=True)`. A review longer than '
    "the model reads is cut differently: the pipeline keeps its beginning and its end (`preprocessing.json`: "
    "`max_len`, `head`).",
    architecture=encoder_classifier,
)


TRANSLATION = TaskInfo(
    pipeline_tag="translation",
    language=["de", "en"],
    dataset_id="bentrevett/multi30k",
    dataset_name="Multi30k (German-English)",
    tags=["translation", "multi30k"],
    metrics=[("bleu", "bleu", "BLEU"), ("bleu_cased", "bleu", "BLEU (cased)"), ("chrf", "chrf", "chrF")],
    pipeline_class="TranslationPipeline",
    summary="translates German into English, one short sentence at a time, returning the encoder, decoder "
    "and cross-attention maps of every layer and head, and each decoding step's most likely tokens",
    intended=[
        "Seeing how an encoder-decoder transformer aligns German and English words through its "
        "cross-attention, in the project's interactive demo.",
        "Teaching and experiments: the model, its tokenizer and its beam search are small and readable.",
        "German-to-English translation of short, simple descriptive sentences, as a demonstration.",
    ],
    not_for=[
        "Real translation work: it is small, and trained from scratch (no pre-training) on Multi30k's image "
        "captions only (about 29,000 sentence pairs); its vocabulary and its world are those captions.",
        "Long, complex or non-descriptive text (news, dialogue, technical writing): quality drops fast.",
        "Other directions or languages: it translates German into English only.",
        "Explanations: cross-attention is a useful picture of alignment, not a faithful account of why a "
        "word was produced.",
    ],
    example='result = pipe("Ein Hund rennt über eine Wiese.")\n'
    "print(result.translation)\n"
    "result.cross_attentions[-1]  # the last decoder layer: (heads, target tokens, source tokens)",
    auto_model="AutoModelForSeq2SeqLM",
    transformers_example="# the source ends with </s>, as the pipeline's does\n"
    'batch = tokenizer(["Ein Hund rennt über eine Wiese." + tokenizer.eos_token], return_tensors="pt")\n'
    "with torch.no_grad():\n"
    "    ids = model.generate(**batch)  # greedy\n"
    "    out = model(**batch, decoder_input_ids=ids, output_attentions=True)\n"
    "print(tokenizer.decode(ids[0], skip_special_tokens=True).strip())\n"
    "out.cross_attentions[-1]  # the last decoder layer: (batch, heads, target tokens, source tokens)",
    transformers_note="`generate()` decodes greedily by default, as the pipeline does with beam size 1, "
    "and without a key/value cache. With `num_beams` it ranks beams by `transformers`' length penalty, "
    "not the pipeline's ((5 + length) / 6) ^ alpha, so beam results can differ from the pipeline's.",
    architecture=encoder_decoder,
)


LM = TaskInfo(
    pipeline_tag="text-generation",
    language=["en"],
    dataset_id="stanfordnlp/imdb",
    dataset_name="IMDB (review text)",
    tags=["text-generation", "imdb", "decoder-only"],
    metrics=[
        ("perplexity_per_token", "perplexity", "Perplexity per token"),
        ("perplexity_per_word", "perplexity", "Perplexity per word"),
    ],
    pipeline_class="LanguageModelPipeline",
    summary="continues English movie-review text token by token, returning each step's most likely next tokens "
    "and the causal self-attention of every layer and head",
    intended=[
        "Seeing how a small decoder-only transformer attends while it writes: first-token sinks, previous-token "
        "heads, in the project's interactive demo.",
        "Teaching and experiments: the model (grouped key/value heads, rotary positions, RMSNorm, SwiGLU), its "
        "tokenizer and its training code are small and readable.",
    ],
    not_for=[
        "Writing anything that matters: it is a 6M-parameter model trained from scratch on movie reviews only; "
        "it repeats itself, invents, and knows nothing outside IMDB's reviews.",
        "Facts: it has read no encyclopedia, only opinions about films.",
        "Explanations: attention weights show where the model looked, not why it chose a word.",
    ],
    example='result = pipe("This movie was", max_new_tokens=20)\n'
    "print(result.continuation)\n"
    "result.attentions[-1]  # the last layer's attention: (heads, tokens, tokens)",
    auto_model="AutoModelForCausalLM",
    transformers_example='batch = tokenizer(["<s>This movie was"], return_tensors="pt", add_special_tokens=False)\n'
    "with torch.no_grad():\n"
    "    ids = model.generate(**batch, max_new_tokens=20)  # greedy\n"
    "    out = model(ids, output_attentions=True)\n"
    "print(tokenizer.decode(ids[0, batch.input_ids.size(1):], skip_special_tokens=True))\n"
    "out.attentions[-1]  # the last layer's attention: (batch, heads, tokens, tokens)",
    transformers_note="The model reads <s> first, as it was trained (the pipeline adds it). `generate()` decodes "
    "greedily by default and without a key/value cache; one prompt at a time (rows are read unpadded).",
    architecture=decoder_only,
)
