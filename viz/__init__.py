"""Figures, explanations and event handlers for the Gradio app. Imports no model at import time."""
