"""Serving pipelines on a small shared machine: the fair micro-batcher, served pipelines, worker processes, the
memory budget and malloc trimming."""
