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
