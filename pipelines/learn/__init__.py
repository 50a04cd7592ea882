"""The Learn tab's library: the from-scratch path walked on a live model (walk.py holds the result types).

walk(pipe, text) -> Walk: every step of the model's family on one input, from one cached pass; path(walks) -> the
tutorial's steps from several models' walks; sample_view(logits, temperature, top_p, seed): the next-token step's
sampling, redrawn without the model."""

from pipelines.learn.sampling import SampleView, sample_view
from pipelines.learn.tutorial import path
from pipelines.learn.walking import ORDER, walk

__all__ = ["ORDER", "SampleView", "path", "sample_view", "walk"]
