"""Whether this process can use the Hugging Face Hub, found out once at start, before any model loads.

huggingface_hub retries a request that cannot connect five times, 1 + 2 + 4 + 8 + 8 s apart: where the Hub cannot be
reached, `python app.py` waited those 23 s listing the pre-trained Marian's snapshots before it served its page (the
Space, with SmolLM2 from the Hub as well, twice). `settle_offline_mode` (app.main) asks the Hub once: one
HEAD request to huggingface_hub's endpoint (`constants.ENDPOINT`: $HF_ENDPOINT, else huggingface.co), through
huggingface_hub's own HTTP client (its proxies and certificates) without its retries, given up after PROBE_TIMEOUT
seconds, the name lookup included. Any answer, whatever its status, means the Hub is there. When none comes,
offline mode is turned on for the process: HF_HUB_OFFLINE=1 in the environment (the model processes the app starts,
and anything importing huggingface_hub later, read it) and `huggingface_hub.constants.HF_HUB_OFFLINE` (read from the
environment once, at import; `is_offline_mode()`, which huggingface_hub and `transformers` ask before each request,
returns it). From then on a Hub model that is not in the local cache fails at once, and its tab says it needs the Hub
(viz.models.loading.hub_entry). With HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) already set there is no probe; where
the Hub answers (a Space), nothing changes.
"""

import logging
import os
import threading

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 2.0  # seconds for the one request, connection and name lookup included
_TRUE = ("1", "true", "yes", "on")


def offline() -> bool:
    """Whether offline mode is on: $HF_HUB_OFFLINE or $TRANSFORMERS_OFFLINE, or huggingface_hub's own flag."""
    from huggingface_hub import constants

    flag = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return bool(constants.HF_HUB_OFFLINE) or flag.strip().lower() in _TRUE


def hub_answers(timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the Hub's endpoint answers one HEAD request within `timeout` seconds (any HTTP status: the host is
    there). A name lookup or connection that hangs is given up after the timeout; it waits on in a daemon thread."""
    from huggingface_hub import constants, get_session

    answered = threading.Event()

    def probe() -> None:
        try:
            get_session().head(constants.ENDPOINT, timeout=timeout)
            answered.set()
        except Exception:  # no connection, no name, a proxy or TLS error, offline mode: not reachable
            pass

    thread = threading.Thread(target=probe, name="hub-probe", daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    return answered.is_set()


def hub_reachable(timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether the Hub can be used now: offline mode off, and the endpoint answers within `timeout`."""
    return not offline() and hub_answers(timeout)


def go_offline() -> None:
    """Offline mode on for this process and the processes it starts, huggingface_hub already imported included."""
    from huggingface_hub import constants

    os.environ["HF_HUB_OFFLINE"] = "1"
    constants.HF_HUB_OFFLINE = True


def settle_offline_mode(probe=hub_answers) -> bool:
    """Offline mode on unless the Hub answers `probe()` (asked once; not at all when offline mode is already on).
    Whether the process is offline now. probe: a stand-in for tests."""
    if offline():
        return True
    if probe():
        return False
    go_offline()
    from huggingface_hub import constants

    log.warning(
        "the Hugging Face Hub (%s) did not answer: offline mode is on (HF_HUB_OFFLINE=1), so models from the Hub"
        " load from the local cache only",
        constants.ENDPOINT,
    )
    return True
