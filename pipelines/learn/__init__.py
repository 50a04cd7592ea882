"""The Learn tab's library: the from-scratch path walked on a live model (walk.py holds the result types).

walk(pipe, text) -> Walk: every step of the model's family on one input, from one cached pass; path(walks) -> the
tutorial's steps from several models' walks; sample_view(logits, temperature, top_p, seed): the next-token step's
sampling, redrawn without the model."""

from pipelines.learn.walking import walk

__all__ = ["walk"]
