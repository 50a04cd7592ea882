"""The Learn tab: the from-scratch path step by step on the live models, with the code and a check at every step."""
