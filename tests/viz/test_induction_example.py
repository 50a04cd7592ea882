"""The Next word tab's worked example (viz/heads/induction_example.py): random words written twice, the cells where
an induction head looks (the token after the earlier occurrence of the current one), and each head's induction score
as the mean weight on those cells, checked on maps built by hand and on the tiny language model's own maps."""

import numpy as np
import torch

from viz.heads import induction_example as ie


def test_the_words_are_written_twice_and_seeded():
    text = ie.repeated_words(seed=3)
    words = text.split()
    assert len(words) == 2 * ie.N_WORDS and words[: ie.N_WORDS] == words[ie.N_WORDS :]
    assert len(set(words[: ie.N_WORDS])) == ie.N_WORDS  # no word twice in one copy
    assert ie.repeated_words(seed=3) == text != ie.repeated_words(seed=4)


def test_the_cells_are_the_tokens_after_the_earlier_occurrence():
    ids = [1, 7, 8, 9, 7, 8, 9]  # <s>, a b c, a b c
    assert ie.repeat_cells(ids) == [(4, 2), (5, 3), (6, 4)]
    assert ie.repeat_cells([1, 5, 5]) == []  # the token right before: no key after it but the query itself


def test_an_induction_head_built_by_hand_scores_one():
    ids = [1, 7, 8, 9, 7, 8, 9]
    cells = ie.repeat_cells(ids)
    T = len(ids)
    uniform = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]  # (T, T) every earlier key alike
    induction = uniform.clone()
    for q, k in cells:
        induction[q] = 0
        induction[q, k] = 1
    scores = ie.induction_scores([torch.stack([uniform, induction])], cells)  # one layer, two heads
    assert scores.shape == (1, 2) and scores[0, 1] == 1.0
    np.testing.assert_allclose(scores[0, 0], np.mean([1 / (q + 1) for q, _ in cells]), rtol=1e-6)


def test_on_the_tiny_model_the_scores_are_its_own_maps(lm):
    result = lm(ie.repeated_words(n=4), 1)
    ids, n = result.prompt_ids, len(result.prompt_ids)
    cells = ie.repeat_cells(ids)
    assert cells
    scores = ie.induction_scores([a[:, :n, :n] for a in result.attentions], cells)
    layer, head = 1, 0
    by_hand = np.mean([float(result.attentions[layer][head, q, k]) for q, k in cells])
    assert scores.shape == (lm.n_layers, lm.n_heads) and abs(scores[layer, head] - by_hand) < 1e-6


def test_the_worked_example_on_the_tiny_model(lm):
    from viz.heads.composition_panel import worked_example

    comp_fig, note, listed, parts_fig, parts_note, text = worked_example(lm)
    assert comp_fig is not None and parts_fig is not None, note
    words = text.split()
    assert words[: len(words) // 2] == words[len(words) // 2 :]  # the words read: written twice
    layer, head = (int(x) for x in note.split("**L")[1].split("**")[0].split("H"))
    result = lm(text, 1)
    cells = ie.repeat_cells(result.prompt_ids)
    n = len(result.prompt_ids)
    scores = ie.induction_scores([a[:, :n, :n] for a in result.attentions], cells)
    assert (layer, head) == np.unravel_index(int(np.argmax(scores)), scores.shape)  # the strongest induction head
    assert f"**L{layer}H{head}**" in listed and "Earlier heads feeding its keys most" in listed
    assert "add up to the model's own score" in parts_note
    assert len(comp_fig.to_json()) + len(parts_fig.to_json()) < 300_000


def test_a_result_answered_again_gives_the_same_example(lm):
    """The app answers an identical call with the same result object (pipelines.hosting.cache): the example must
    leave it as it was (a first version wrote into its maps, and the second visit read a weight of inf)."""

    class Cached:
        def __init__(self, pipe):
            self.pipe, self.kept = pipe, {}

        def __call__(self, text, n):
            return self.kept.setdefault((text, n), self.pipe(text, n))

        def __getattr__(self, name):
            return getattr(self.pipe, name)

    pipe = Cached(lm)
    first, second = ie.induction_circuit(pipe), ie.induction_circuit(pipe)
    assert first.head == second.head and first.score == second.score and np.isfinite(first.score)
    assert first.parts_note == second.parts_note


def test_the_example_is_confirmed_by_switching_heads_off(lm):
    """The worked example says what pipelines.lens.induction_circuit measured (through the pipeline's method): the
    strongest induction head on random tokens written twice, the earlier heads carrying its key side, and its score
    with them switched off, each number as the pipeline gives it."""
    from viz.heads.composition_panel import worked_example

    circuit = lm.induction_circuit()
    assert circuit.sequences == 2 and len(circuit.heads) == 1
    h = circuit.heads[0]
    note = worked_example(lm)[1]
    assert ie.confirmation_note(circuit) in note and "Confirmed by switching heads off" in note
    if h.carriers:
        assert f"**L{h.layer}H{h.head}**" in note and f"**{h.without:.3f}**" in note and f"{h.control:.3f}" in note
        assert all(f"**L{layer}H{head}**" in note for layer, head, _ in h.carriers)
        assert all(layer < h.layer for layer, _, _ in h.carriers)
    again = lm.induction_circuit()
    assert again.heads[0].without == h.without and np.isfinite(h.without)  # seeded: the same numbers


def test_the_confirmation_in_words():
    from pipelines.lens.induction_circuit import InductionCircuit, InductionHead

    head = InductionHead(2, 1, 0.8, [("L1H0", 3.0)], [(1, 0, 3.0), (0, 2, 1.0)], 0.1, 0.3, 0.75, [0.9, 0.2])
    note = ie.confirmation_note(InductionCircuit([head], 2, 20))
    assert "2 sequences of 20 random tokens" in note and "**L2H1**" in note and "0.800" in note
    assert "**L1H0** (+3.00), **L0H2** (+1.00)" in note and "**0.100**" in note and "L1H0 alone off: 0.300" in note
    assert "the control): 0.750" in note
    alone = InductionHead(0, 1, 0.5, [], [], 0.5, 0.5, 0.5, [])
    assert "no earlier head to switch off" in ie.confirmation_note(InductionCircuit([alone], 2, 20))
