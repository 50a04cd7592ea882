"""The tasks `python -m training` trains, and table.py, the training side of each task declared once (its trainer,
scorer, calibration, model card, export and Space variable). Each task module supplies batches, a loss, a score and
its model folder (sentiment, pretrain, translation, lm), with the parts only they use (objectives, public-weight
starts, crops, held-out lineage, the next-word model's perplexity)."""
