"""A Stop button stops its own client's running job only, and a press is forgotten when that job ends."""

from types import SimpleNamespace

from viz.server.stops import Stops


def test_a_press_stops_its_clients_job_and_not_the_next_one():
    stops, me, other = Stops(), SimpleNamespace(session_hash="me"), SimpleNamespace(session_hash="other")
    with stops.watch(me) as stopped, stops.watch(other) as theirs:
        assert not stopped()
        stops.press(me)
        assert stopped() and not theirs()
    with stops.watch(me) as stopped:
        assert not stopped()  # forgotten when the job ended
    stops.press(me)  # pressed when nothing ran
    with stops.watch(me) as stopped:
        assert not stopped()
