"""The page itself, loaded once: its theme (dark, phones), what its head carries (CSS, the plotting library
preloaded), and the progress bars of slow views."""
