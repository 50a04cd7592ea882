"""How far a result can be trusted: calibrated probabilities, out-of-domain scores, what a model is measured to
misread."""
