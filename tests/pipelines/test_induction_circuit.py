"""The induction circuit found by score attribution and confirmed by switching heads off, on a model built by hand:
the induction head is found, its key side is carried by the previous-token head, and its score falls without it."""

import pytest
from tiny_models import induction_model

from pipelines.attention.over_set import InductionSet
from pipelines.lens.induction_circuit import induction_circuit


def test_the_hand_built_induction_circuit_is_found_and_confirmed():
    model = induction_model(n_heads=2)  # head 1 of each layer writes nothing
    circuit = induction_circuit(model, top=1, carriers=1, s=InductionSet(n=3, length=6, seed=1))
    (found,) = circuit.heads
    assert (found.layer, found.head) == (1, 0) and found.score > 0.5
    assert found.carriers[0][:2] == (0, 0) and found.key_side[0][0] == "L0H0"
    assert found.without < 0.3 * found.score and found.without_first == found.without
    assert found.control == pytest.approx(found.score, abs=1e-6)  # the head that writes nothing, off: no change
    assert circuit.sequences == 3 and circuit.length == 6


def test_the_pipelines_method_is_the_circuit_on_its_model(lm):
    """LanguageModelPipeline.induction_circuit: the circuit of its model, by default on 2 sequences of 20 random tokens
    written twice (a few passes), the strongest head only."""
    got = lm.induction_circuit()
    want = induction_circuit(lm.model, 1, 3, InductionSet(n=2, length=20, seed=0))
    assert got == want and len(got.heads) == 1 and got.sequences == 2
    two = lm.induction_circuit(top=2, carriers=1, s=InductionSet(n=1, length=8, seed=1))
    assert len(two.heads) == 2 and all(len(h.carriers) <= 1 for h in two.heads) and two.length <= 8
