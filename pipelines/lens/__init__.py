"""Layer by layer: what each layer of a model already predicts (the logit lens) and what each head and feed-forward
layer writes toward the answer (direct logit attribution), read through the core's hook points (transformer/hooks.py)
on our three families. pipelines/lens/readout.py says where each family's residual stream is read out;
logit_lens.py and attribution.py compute on it."""

from pipelines.lens.attribution import Attribution, direct_logit_attribution
from pipelines.lens.logit_lens import Lens, logit_lens

__all__ = ["Attribution", "Lens", "direct_logit_attribution", "logit_lens"]
