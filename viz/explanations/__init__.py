"""The explanation panels of the three tabs and their drawings: words shaded by signed attributions, produced by
source token maps, and how faithful each view is."""
