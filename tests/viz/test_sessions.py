"""Visitors' kept results bounded by their bytes (viz.server.sessions): sessions that hold little are all kept, the
least recently used go first once the results pass the budget, and API clients' empty sessions never crowd out a
visitor's results."""

import gradio as gr
import torch
from gradio.state_holder import StateHolder

from viz.server.sessions import SessionsByBytes, state_bytes

MB = 2**20


def holder(budget_bytes: int, max_sessions: int = 100) -> tuple[SessionsByBytes, int]:
    with gr.Blocks() as demo:
        kept = gr.State(None)
    gradio_own = StateHolder()
    gradio_own.set_blocks(demo)
    return SessionsByBytes.adopt(gradio_own, budget_bytes, max_sessions), kept._id


def visit(sessions: SessionsByBytes, sid: str, state_id: int, value=None) -> None:
    """A request of session `sid` that leaves `value` in its state (None: a call that keeps nothing)."""
    session = sessions[sid]
    if value is not None:
        session.state_data[state_id] = value


def test_sessions_holding_little_are_kept_whatever_their_number():
    sessions, state = holder(budget_bytes=10 * MB)
    for i in range(60):  # API clients: a session each, nothing kept but gradio's own copy of the page
        visit(sessions, f"api {i}", state)
    assert len(sessions.session_data) == 60 and sessions.total_bytes < MB
    assert 0 < sessions.overhead < 100_000  # this one-State page's config


def test_gradios_own_state_of_each_session_counts_too():
    sessions, state = holder(budget_bytes=10 * MB)
    sessions.overhead = MB // 2  # a large page: every session costs half a megabyte before it keeps anything
    for i in range(60):
        visit(sessions, f"api {i}", state)
    assert len(sessions.session_data) == 20 and sessions.total_bytes <= 10 * MB


def test_the_least_recently_used_results_go_first_once_the_budget_is_passed():
    sessions, state = holder(budget_bytes=10 * MB)
    for name in "abc":
        visit(sessions, name, state, [torch.zeros(MB // 4)])  # 1 MB of results each
    visit(sessions, "a", state)  # a comes back: now the most recent
    visit(sessions, "big", state, [torch.zeros(17 * MB // 8)])  # 8.5 MB
    visit(sessions, "api", state)  # the next request measures big's results
    assert "b" not in sessions and "c" not in sessions  # the oldest went, until within the budget
    assert "a" in sessions and "big" in sessions and sessions.total_bytes <= 10 * MB
    assert state_bytes(sessions.session_data["big"]) >= 8.5 * MB


def test_a_count_bound_still_holds():
    sessions, state = holder(budget_bytes=10 * MB, max_sessions=5)
    for i in range(9):
        visit(sessions, f"s{i}", state)
    assert list(sessions.session_data) == [f"s{i}" for i in range(4, 9)]


def test_a_model_in_a_state_is_not_counted_as_the_sessions():
    sessions, state = holder(budget_bytes=MB)
    visit(sessions, "a", state, torch.nn.Linear(1000, 1000))  # 4 MB of weights, the model's
    visit(sessions, "b", state)
    assert "a" in sessions and sessions.total_bytes < MB
