"""Comparing in the app: two inputs side by side with their attention diff, and two models on the same review."""
