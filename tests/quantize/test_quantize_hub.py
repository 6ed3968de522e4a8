"""A Hub id is downloaded (only when online) and quantized: served by the fake Hub on 127.0.0.1."""

from __future__ import annotations

import pytest

from infer_advisor.errors import HubError, ModelNotFoundError
from infer_advisor.quantize import quantize
from tests.model_facts.hub_server import FakeHub, Repo


@pytest.fixture
def hub(monkeypatch, tmp_path):
    server = FakeHub()
    server.start()
    monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    for var in ("HF_HUB_OFFLINE", "INFER_ADVISOR_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)  # the fake Hub is on loopback
    import huggingface_hub.constants as hf_constants

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)  # both read at import by huggingface_hub
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    yield server
    server.stop()


def test_hub_id_is_downloaded_then_quantized(hub, tiny_llama, tmp_path):
    hub.repos["org/tiny"] = Repo(files={p.name: p.read_bytes() for p in tiny_llama.iterdir() if p.is_file()})
    result = quantize("org/tiny", "ct2-int8", tmp_path / "out", progress=False)
    assert result.check.status == "passed"
    assert result.source.parent.name == "snapshots"  # the Hugging Face cache's snapshot folder
    assert result.source.is_relative_to(tmp_path / "hf-home")
    fetched = {r.path.rsplit("/", 1)[-1] for r in hub.requests if r.method == "GET"}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= fetched
    assert not any("authorization" in r.headers for r in hub.requests)  # no token set: none sent


def test_hub_errors_are_one_line_user_errors(hub, tmp_path):
    with pytest.raises(ModelNotFoundError, match="'org/missing' not found"):
        quantize("org/missing", "ct2-int8", tmp_path / "out", progress=False)
    hub.repos["org/noweights"] = Repo(files={"config.json": b'{"hidden_size": 128}'})
    with pytest.raises(ModelNotFoundError, match="no safetensors weights"):
        quantize("org/noweights", "ct2-int8", tmp_path / "out", progress=False)
    hub.repos["org/gated"] = Repo(files={"config.json": b"{}"}, token="secret")
    with pytest.raises(HubError, match="'org/gated' is gated: .* set HF_TOKEN"):
        quantize("org/gated", "ct2-int8", tmp_path / "out", progress=False)
    hub.repos["org/broken"] = Repo(files={}, status=403)  # 5xx would be retried for ~20 s
    with pytest.raises(HubError, match="Could not download 'org/broken'"):
        quantize("org/broken", "ct2-int8", tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
