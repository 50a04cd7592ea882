"""Layer by layer: what each layer of a model already predicts (the logit lens) and what each head and feed-forward
layer writes toward the answer (direct logit attribution), each head switched off and activation patching, read
through the core's hook points (transformer/hooks.py) on our three families. operations.py writes each operation
once, as a method every pipeline of ours inherits; family.py describes each family's pass (what runs, what it reads,
how a target is named); readout.py says where each family's residual stream is read out; logit_lens.py,
attribution.py and patching.py compute on it."""

from pipelines.lens.attribution import Attribution, direct_logit_attribution
from pipelines.lens.logit_lens import Lens, logit_lens
from pipelines.lens.operations import LayerByLayer

__all__ = ["Attribution", "LayerByLayer", "Lens", "direct_logit_attribution", "logit_lens"]
