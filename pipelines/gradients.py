"""The target function attributions differentiate: a label's log-odds. (Forward passes from embedding vectors
are the model adapters' own: pipelines.adapter.)"""

import torch


def log_odds(logits: torch.Tensor) -> torch.Tensor:
    """(B, C) logits -> (B, C) log p(c) / (1 - p(c)). With two labels the two columns are exact opposites,
    so an attribution toward one label is minus the attribution toward the other."""
    C = logits.size(-1)
    if C == 1:
        return logits
    others = logits.unsqueeze(1).expand(-1, C, -1)  # (B, C, C): row c lists every logit
    eye = torch.eye(C, dtype=torch.bool, device=logits.device)
    return logits - others.masked_fill(eye, float("-inf")).logsumexp(-1)
