"""Training, evaluation and publishing for the demo's two models."""
