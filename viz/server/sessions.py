"""Visitors' kept results bounded by the bytes they hold, not by a count of sessions sized for the worst case.

Gradio keeps each session's gr.State values (a result the page redraws from) in a StateHolder that drops the least
recently used session beyond `state_session_capacity` sessions. Sized for the worst case (every session holding the
longest input's maps of every tab: SmolLM2's 30 x 9 heads at 640 tokens is 440 MB), that was one session: each
visitor's arrival dropped the last one's results, and every API call, a session of its own, built gradio's session
state again (29 ms of Python a call on this app, under load most of the server's time). Here the sessions share the
budget by what they actually hold: pipelines.hosting.cache.result_bytes of their states (the models' weights not
counted) plus gradio's own copy of the page's config, which every session has (647 KB for this page, measured with
tracemalloc when the app starts); the least recently used go first once the total passes it, and at most
`max_sessions` are kept. A session is measured at the next request of any session after one of
its own (its handler may still be writing its state during its own), so the total may pass the budget by one
session's newest results until then.
"""

import tracemalloc

from gradio.state_holder import SessionState, StateHolder
from torch import nn

from pipelines.hosting.cache import result_bytes

MAX_SESSIONS = 500  # with gradio's own 647 KB each, at most 325 MB before any session keeps a result


def state_bytes(session) -> int:
    """The bytes a gradio SessionState's values hold (the models they may reference are not theirs)."""
    seen: set[int] = set()
    return sum(result_bytes(v, seen) for v in session.state_data.values() if not isinstance(v, nn.Module))


def session_overhead(blocks) -> int:
    """The bytes gradio's state of one new session of `blocks` takes (its copy of the page's config)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    session = SessionState(blocks)
    size = tracemalloc.get_traced_memory()[0] - before
    if not was_tracing:
        tracemalloc.stop()
    del session
    return max(size, 0)


class SessionsByBytes(StateHolder):
    """A gradio StateHolder whose sessions are bounded by budget_bytes of state and max_sessions in number."""

    budget_bytes: int = 0
    max_sessions: int = MAX_SESSIONS

    @classmethod
    def adopt(cls, holder: StateHolder, budget_bytes: int, max_sessions: int = MAX_SESSIONS) -> "SessionsByBytes":
        """`holder` (gradio's own, already wired into its app) with this class's bounds."""
        holder.__class__ = cls
        holder.budget_bytes, holder.max_sessions = budget_bytes, max_sessions
        holder.capacity = max_sessions
        holder.held, holder.dirty = {}, set()
        holder.overhead = session_overhead(holder.blocks)
        return holder

    @property
    def total_bytes(self) -> int:
        return sum(self.held.values()) + self.overhead * len(self.session_data)

    def update(self, session_id: str) -> None:
        with self.lock:
            for sid in self.dirty - {session_id}:  # their requests have ended: measure what they now hold
                if sid in self.session_data:
                    self.held[sid] = state_bytes(self.session_data[sid])
            self.dirty &= {session_id}
            if session_id in self.session_data:
                self.session_data.move_to_end(session_id)
                self.dirty.add(session_id)
            total = self.total_bytes
            over = lambda: len(self.session_data) > self.max_sessions or total > self.budget_bytes  # noqa: E731
            while len(self.session_data) > 1 and over():
                evicted, _ = self.session_data.popitem(last=False)
                self.time_last_used.pop(evicted, None)
                total -= self.held.pop(evicted, 0)
                self.dirty.discard(evicted)

    def delete_state(self, session_id: str, expired_only: bool = False) -> None:
        super().delete_state(session_id, expired_only)
        with self.lock:
            self.dirty.add(session_id)  # measured again at the next request
