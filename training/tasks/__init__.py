"""The tasks `python -m training <task>` trains: each supplies batches, a loss, a score and its model folder
(sentiment, pretrain, translation, lm), with the parts only they use (objectives, public-weight starts, crops,
held-out lineage, the next-word model's perplexity)."""
