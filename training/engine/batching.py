"""Length-bucketed batches: similar lengths together (little padding), order shuffled per epoch."""

import random


def bucketed_batches(lengths: list[int], batch_size: int, seed: int, max_tokens: int | None = None) -> list[list[int]]:
    """Index batches: shuffle, sort within pools of 50 batches by length, cut, shuffle the batches.

    With max_tokens, a batch also stops growing once batch_len * longest would pass max_tokens.
    """
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: lengths[i])
        cur, longest = [], 0
        for i in chunk:
            longest_if = max(longest, lengths[i])
            if cur and (len(cur) >= batch_size or (max_tokens and longest_if * (len(cur) + 1) > max_tokens)):
                batches.append(cur)
                cur, longest_if = [], lengths[i]
            cur.append(i)
            longest = longest_if
        if cur:
            batches.append(cur)
    rng.shuffle(batches)
    return batches
