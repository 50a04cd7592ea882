"""The Gradio app's side: each task's words and limits (tasks.py), input checks (inputs.py), examples, notices,
token labels (explain.py) and the run handlers (handlers.py) at the top; the views in subpackages by what they do:
attention/, heads/, explanations/, compare/, share/, models/, page/ and server/. Imports no model at import time."""
