"""Training, evaluation and publishing for the demo's models of its three tasks: sentiment, translation and the
next word (python -m training <task>)."""
