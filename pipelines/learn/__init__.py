"""The Learn tab's library: the from-scratch path walked on a live model (walk.py)."""
