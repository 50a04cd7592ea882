"""`python app.py` where the Hub cannot be reached: app.main asks the Hub once (viz/server/hub_access.py) before any
model loads, so that no load waits on huggingface_hub's retries (tests/viz/test_hub_access.py: the probe itself)."""

import pytest


def test_main_settles_offline_mode_before_any_model_loads(monkeypatch):
    import app
    from viz.models import loading

    calls = []

    class Stop(Exception):
        pass

    def load_models():
        calls.append("load_models")
        raise Stop

    monkeypatch.setattr(app, "tame_malloc", lambda: None)
    monkeypatch.setattr(app.hosting, "set_torch_threads", lambda: None)  # the tests' one torch thread stays
    monkeypatch.setattr(app, "settle_offline_mode", lambda: calls.append("settle_offline_mode"))
    monkeypatch.setattr(loading, "load_models", load_models)
    with pytest.raises(Stop):
        app.main()
    assert calls == ["settle_offline_mode", "load_models"]
