"""Serving the app for months on a small machine: hosting settings, the gate in front of gradio's routes, and what
a failed run tells a visitor."""
