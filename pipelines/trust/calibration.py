"""Calibrated probabilities: temperature scaling, expected calibration error, reliability-diagram data.

Temperature scaling (Guo et al. 2017, "On Calibration of Modern Neural Networks") divides the logits by
one number T > 0 fitted on held-out data by minimising the negative log-likelihood; the argmax, and so
the accuracy, never changes. A short sentence and a 500-token review can need different temperatures
(the shipped IMDB model is overconfident on sentences only), so the temperature may also depend on the
input length as a power law, T(n) = temperature * (n / REFERENCE_TOKENS) ** length_exponent: two
numbers fitted the same way. length_exponent = 0 is plain temperature scaling.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

REFERENCE_TOKENS = 64  # the input length at which T(n) = temperature


@dataclass(frozen=True)
class Temperature:
    """T(n) = temperature * (n / 64) ** length_exponent; the identity is Temperature(1.0, 0.0)."""

    temperature: float = 1.0
    length_exponent: float = 0.0

    @classmethod
    def from_preprocessing(cls, prep: dict) -> "Temperature":
        return cls(float(prep.get("temperature", 1.0)), float(prep.get("temperature_length_exponent", 0.0)))

    def to_preprocessing(self) -> dict:
        return {"temperature": self.temperature, "temperature_length_exponent": self.length_exponent}

    def values(self, lengths) -> torch.Tensor:
        """(B,) temperatures for inputs of `lengths` tokens."""
        n = torch.as_tensor(lengths, dtype=torch.float32).clamp(min=1.0)
        return self.temperature * (n / REFERENCE_TOKENS) ** self.length_exponent

    def scale(self, logits: torch.Tensor, lengths) -> torch.Tensor:
        """(B, C) logits divided by each row's temperature."""
        return logits / self.values(lengths).to(logits.device, logits.dtype)[:, None]  # (B, C) / (B, 1)


def _fit(logits: torch.Tensor, labels: torch.Tensor, x: torch.Tensor, n_params: int) -> list[float]:
    """LBFGS on the NLL of softmax(logits / exp(a + b * x)); returns [a] or [a, b] (log-temperature).

    A tiny L2 pull towards T = 1 keeps the fit finite on a model no better than chance, whose NLL only
    keeps falling as T grows (every probability towards 1/C).
    """
    logits, labels, x = logits.detach().float(), labels.long(), x.float()
    params = torch.zeros(n_params, requires_grad=True)
    opt = torch.optim.LBFGS([params], lr=0.5, max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        log_t = params[0] + params[1] * x if n_params > 1 else params[0].expand(len(x))  # (B,)
        loss = F.cross_entropy(logits / log_t.exp()[:, None], labels) + 1e-4 * params.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return [min(max(float(p), -5.0), 5.0) for p in params.detach()]


def fit_temperature(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """The temperature T that minimises the held-out NLL of softmax(logits / T). logits (N, C), labels (N,)."""
    (log_t,) = _fit(logits, labels, torch.zeros(len(labels)), 1)
    return float(torch.tensor(log_t).exp())


def fit_length_temperature(logits: torch.Tensor, labels: torch.Tensor, lengths) -> Temperature:
    """Temperature(temperature, length_exponent) minimising the held-out NLL; lengths (N,) in tokens."""
    x = torch.as_tensor(lengths, dtype=torch.float32).clamp(min=1.0).div(REFERENCE_TOKENS).log()
    log_t, exponent = _fit(logits, labels, x, 2)
    return Temperature(float(torch.tensor(log_t).exp()), exponent)


@dataclass
class Reliability:
    """Per-bin numbers of a reliability diagram over top-class confidence."""

    edges: list[float]  # n_bins + 1 bin edges from `low` to 1
    counts: list[int]  # inputs per bin
    confidence: list[float | None]  # mean top-class probability per bin (None for an empty bin)
    accuracy: list[float | None]  # share of correct predictions per bin
    ece: float  # sum over bins of (count / N) * |accuracy - confidence|


def reliability(probs: torch.Tensor, labels: torch.Tensor, n_bins: int = 10, low: float | None = None) -> Reliability:
    """Reliability-diagram data over the top-class confidence in equal-width bins from `low` to 1.

    probs (N, C) probabilities, labels (N,). `low` defaults to 1 / C (0.5 for two labels), the least
    confidence a top class can have; a confidence equal to an inner edge falls in the upper bin.
    """
    probs, labels = torch.as_tensor(probs, dtype=torch.float64), torch.as_tensor(labels).long()
    low = 1.0 / probs.size(1) if low is None else low
    conf, pred = probs.max(dim=1)  # (N,), (N,)
    correct = (pred == labels).double()
    which = ((conf - low) / (1.0 - low) * n_bins).floor().long().clamp(0, n_bins - 1)  # (N,)
    counts, confs, accs, ece = [], [], [], 0.0
    for b in range(n_bins):
        m = which == b
        n = int(m.sum())
        counts.append(n)
        confs.append(float(conf[m].mean()) if n else None)
        accs.append(float(correct[m].mean()) if n else None)
        if n:
            ece += n / len(labels) * abs(accs[-1] - confs[-1])
    edges = [low + (1.0 - low) * b / n_bins for b in range(n_bins + 1)]
    return Reliability(edges, counts, confs, accs, ece)


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, n_bins: int = 10) -> float:
    """ECE over the top-class confidence in n_bins equal-width bins (0.5 to 1 for two labels)."""
    return reliability(probs, labels, n_bins).ece


def confidence_words(p: float) -> str:
    """A calibrated top-class probability in words a non-expert reads."""
    if p >= 0.95:
        return "very sure"
    if p >= 0.8:
        return "fairly sure"
    if p >= 0.65:
        return "leaning this way, not sure"
    return "unsure: close to a coin toss"
