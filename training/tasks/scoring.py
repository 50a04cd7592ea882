"""Each task's scorer, what `python -m training.evaluate <task>` runs on a model and a file (training/tasks/table.py
names the scorer of each task): accuracy and calibration of a classifier, BLEU and chrF of a translator, perplexity of
a next-word model; and the share of inputs flagged out of domain where the model has the statistics."""

import sys

from tqdm.auto import tqdm


def chunks(n: int, size: int):
    return [range(s, min(s + size, n)) for s in range(0, n, size)]


def sentiment_scores(pipe, texts: list[str], labels: list[int], batch_size: int = 64) -> dict:
    """Accuracy, ECE and out-of-domain rate of a SentimentPipeline (as it is calibrated) on labelled texts."""
    import torch

    from pipelines.trust.calibration import expected_calibration_error

    probs = []
    for part in tqdm(chunks(len(texts), 512), desc="sentiment", unit="chunk", file=sys.stderr):
        for p in pipe.predict([texts[i] for i in part], batch_size=batch_size):
            probs.append([p[lab] for lab in pipe.labels])
    probs_t, labels_t = torch.tensor(probs), torch.tensor([int(y) for y in labels])
    out = {
        "accuracy": float((probs_t.argmax(-1) == labels_t).float().mean()),
        "ece": round(expected_calibration_error(probs_t, labels_t), 5),
        "n": len(texts),
    }
    if pipe.domain is not None:
        out["out_of_domain_rate"] = sum(f for f, _ in pipe.domain_scores(texts)) / len(texts)
    return out


def evaluate_sentiment(model: str, ds, batch_size: int = 64) -> dict:
    from pipelines import SentimentPipeline

    pipe = SentimentPipeline.from_pretrained(model)
    return sentiment_scores(pipe, list(ds["text"]), list(ds["label"]), batch_size)


def evaluate_translation(
    model: str, ds, batch_size: int = 64, beam: int | None = None, alpha: float | None = None, output=None
) -> dict:
    from pipelines import TranslationPipeline
    from training.tasks.translation import corpus_scores

    pipe = TranslationPipeline.from_pretrained(model)
    beam = pipe.beam_size if beam is None else beam
    de, en = list(ds["de"]), list(ds["en"])
    scored: list = []
    for part in tqdm(chunks(len(de), 256), desc="translation", unit="chunk", file=sys.stderr):
        scored += pipe.translate_scored([de[i] for i in part], beam, alpha, batch_size)
    hyps = [s[0] for s in scored]
    if output:
        with open(output, "w") as f:
            f.write("\n".join(hyps) + "\n")
    out = {**corpus_scores(hyps, en), "beam": beam, "alpha": pipe.alpha if alpha is None else alpha}
    if pipe.domain is not None:
        out["out_of_domain_rate"] = sum(s[2] for s in scored) / len(scored)
    return out


def evaluate_next_word(model: str, ds, batch_size: int = 64) -> dict:
    from training.tasks.lm_eval import evaluate_lm

    return evaluate_lm(model, ds, batch_size)
