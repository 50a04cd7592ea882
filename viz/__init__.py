"""The Gradio app's side of its three tasks: each task's words and limits (tasks.py), input checks (inputs.py),
examples, notices and numbers at the top; a package a task for its run handlers and the view it keeps (sentiment/,
translation/, next_word/, which holds the Next word tab too); the views in subpackages by what they do: attention/,
heads/, explanations/, compare/, share/, models/, page/ and server/. Imports no model at import time."""
