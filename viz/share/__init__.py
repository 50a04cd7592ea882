"""Sharing a view: links that restore it, the JSON download and the figures' PNG and SVG buttons, and their controls."""
