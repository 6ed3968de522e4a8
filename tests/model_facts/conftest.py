"""Fixtures for the model-facts tests: an isolated cache, no Hub unless a test serves one, and a fake Hub.

Every test starts offline (``HF_HUB_OFFLINE=1``) with no token and its own ``INFER_ADVISOR_CACHE`` and
``INFER_ADVISOR_HOME`` (an empty user catalog), and the
in-process reachability cache is cleared, so no test touches the network by accident.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `tests.support` / `tests.model_facts` under plain `pytest`
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    from infer_advisor.model_facts import hub

    monkeypatch.setenv("INFER_ADVISOR_CACHE", str(tmp_path / "ia-cache"))
    monkeypatch.setenv("INFER_ADVISOR_HOME", str(tmp_path / "ia-home"))  # `models add` writes the user catalog here
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("INFER_ADVISOR_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    hub._reachable.clear()
    yield
    hub._reachable.clear()


@pytest.fixture
def fake_hub(monkeypatch, tmp_path):
    """A Hub on 127.0.0.1 (``tests/model_facts/hub_server.py``); HF_ENDPOINT points at it and offline mode is off."""
    from tests.model_facts.hub_server import FakeHub

    server = FakeHub()
    server.start()
    monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)  # the fake Hub is on loopback: talk to it directly
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    # huggingface_hub reads HF_HUB_OFFLINE at import; make sure a copy imported under offline mode is not stuck in it.
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    yield server
    server.stop()
