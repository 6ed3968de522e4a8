"""The Hub source against a real HTTP server on 127.0.0.1 (tests/model_facts/hub_server.py).

huggingface_hub runs unmodified: HF_ENDPOINT points it at the local server, which answers the
routes it uses for config.json downloads and get_safetensors_metadata (HEAD/GET resolve URLs, Range reads).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save

from infer_advisor.errors import HubError, ModelConfigError, ModelNotFoundError
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.catalog import find_entry
from tests.model_facts.hub_server import COMMIT, Repo

TOKEN = "hf_test_secret_token_value_123"
SMALL = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}


def st_bytes(**tensors) -> bytes:
    return save(tensors)


def single_repo(config=SMALL, **kw) -> Repo:
    weights = st_bytes(a=torch.zeros(4, 8, dtype=torch.bfloat16), b=torch.zeros(3, dtype=torch.float32))
    return Repo(files={"config.json": json.dumps(config).encode(), "model.safetensors": weights}, **kw)


def test_config_and_header_from_the_hub(fake_hub):
    fake_hub.repos["org/tiny"] = single_repo()
    f = resolve_model("org/tiny")
    assert f.source == "hub" and f.model_type == "qwen2"
    assert f.safetensors.num_tensors == 2 and f.safetensors.num_parameters == 35
    assert f.safetensors.bytes_by_dtype == {"BF16": 64, "F32": 12}
    st_gets = [r for r in fake_hub.requests if r.method == "GET" and r.path.endswith(".safetensors")]
    assert st_gets and all("range" in r.headers for r in st_gets)  # headers only, never the weights
    assert not any("authorization" in r.headers for r in fake_hub.requests)  # no token configured: none sent


def test_sharded_repo_reads_every_shard_header(fake_hub):
    shard1 = st_bytes(x=torch.zeros(10, dtype=torch.bfloat16))
    shard2 = st_bytes(y=torch.zeros(2, 3, dtype=torch.float16))
    index = {
        "metadata": {"total_size": 32},
        "weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"},
    }
    fake_hub.repos["org/sharded"] = Repo(
        files={
            "config.json": json.dumps(SMALL).encode(),
            "model.safetensors.index.json": json.dumps(index).encode(),
            "model-00001-of-00002.safetensors": shard1,
            "model-00002-of-00002.safetensors": shard2,
        }
    )
    st = resolve_model("org/sharded", source="hub").safetensors
    assert (st.num_files, st.num_tensors, st.num_parameters) == (2, 2, 16)
    assert st.bytes_by_dtype == {"BF16": 20, "F16": 12}


def test_revision_is_passed_through(fake_hub):
    fake_hub.repos["org/tiny"] = single_repo()
    assert resolve_model("org/tiny", revision=COMMIT).source == "hub"
    assert any(f"/resolve/{COMMIT}/config.json" in r.path for r in fake_hub.requests)
    with pytest.raises(ModelNotFoundError):
        resolve_model("org/tiny", revision="no-such-branch")


def test_repo_without_safetensors(fake_hub):
    fake_hub.repos["org/bin"] = Repo(files={"config.json": json.dumps(SMALL).encode()})
    f = resolve_model("org/bin")
    assert f.source == "hub" and f.safetensors is None


def test_token_goes_in_the_header_and_nowhere_else(fake_hub, monkeypatch, tmp_path):
    fake_hub.repos["org/gated"] = single_repo(token=TOKEN)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert resolve_model("org/gated").source == "hub"
    assert fake_hub.requests and all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in fake_hub.requests)
    for path in Path(tmp_path).rglob("*"):  # the caches (config download included) never hold the token
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_gated_without_token_says_to_set_hf_token(fake_hub):
    fake_hub.repos["org/gated"] = single_repo(token=TOKEN)
    with pytest.raises(HubError, match="HF_TOKEN"):
        resolve_model("org/gated")


def test_gated_catalog_model_falls_back_to_the_catalog(fake_hub):
    name = "meta-llama/Llama-2-7b-hf"
    fake_hub.repos[name] = Repo(files={"config.json": json.dumps(find_entry(name).config).encode()}, token=TOKEN)
    f = resolve_model(name)
    assert f.source == "catalog" and f.num_parameters == 6_738_415_616
    with pytest.raises(HubError, match="HF_TOKEN"):
        resolve_model(name, source="hub")


def test_not_on_the_hub(fake_hub):
    with pytest.raises(ModelNotFoundError):
        resolve_model("org/missing")
    assert resolve_model("Qwen/Qwen2.5-7B").source == "catalog"  # 404 on the Hub, answered by the catalog
    with pytest.raises(ModelNotFoundError):
        resolve_model("Qwen/Qwen2.5-7B", source="hub")


def test_garbled_hub_header_is_a_config_error(fake_hub):
    junk = b"{not json"
    repo = single_repo()
    repo.files["model.safetensors"] = len(junk).to_bytes(8, "little") + junk
    fake_hub.repos["org/garbled"] = repo
    with pytest.raises(ModelConfigError):
        resolve_model("org/garbled")


def test_malformed_hub_config(fake_hub):
    fake_hub.repos["org/badcfg"] = Repo(files={"config.json": b'{"model_type": "llama",'})
    with pytest.raises(ModelConfigError, match="invalid JSON"):
        resolve_model("org/badcfg")


def test_http_error_is_a_hub_error(fake_hub):
    # 400 is not retried by huggingface_hub (429/5xx are, with backoff), so this stays fast
    fake_hub.repos["org/broken"] = single_repo(status=400)
    with pytest.raises(HubError, match="HTTP 400"):
        resolve_model("org/broken")
    fake_hub.repos["Qwen/Qwen2.5-7B"] = single_repo(status=400)
    assert resolve_model("Qwen/Qwen2.5-7B").source == "catalog"  # a catalog model survives a failing Hub
    with pytest.raises(HubError):
        resolve_model("Qwen/Qwen2.5-7B", source="hub")


def test_offline_skips_the_hub(fake_hub, monkeypatch):
    fake_hub.repos["org/tiny"] = single_repo()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError):
        resolve_model("org/tiny")
    with pytest.raises(HubError, match="offline"):
        resolve_model("org/tiny", source="hub")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("INFER_ADVISOR_OFFLINE", "1")
    assert resolve_model("Qwen/Qwen2.5-7B").source == "catalog"
    assert fake_hub.requests == []


def test_unreachable_endpoint_falls_through_fast_without_importing_the_hub_client(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "INFER_ADVISOR_OFFLINE", "HF_TOKEN")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", INFER_ADVISOR_CACHE=str(tmp_path))
    code = (
        "import sys, time; from infer_advisor.model_facts import resolve_model; t = time.perf_counter(); "
        "f = resolve_model('meta-llama/Llama-2-7b-hf'); dt = time.perf_counter() - t; "
        "print(f.source, 'huggingface_hub' in sys.modules, round(dt, 3))"
    )
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[:2] == ["catalog", "False"]
    assert float(out[2]) < 1.0 and time.perf_counter() - start < 30


def test_reachability_goes_through_a_configured_proxy_and_is_cached(monkeypatch):
    from infer_advisor.model_facts import hub

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert hub._connect_target("https://huggingface.co") == ("proxy.example", 3128)
    monkeypatch.setenv("NO_PROXY", "huggingface.co")
    assert hub._connect_target("https://huggingface.co") == ("huggingface.co", 443)

    calls = []
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")

    def refuse(addr, timeout):
        calls.append((addr, timeout))
        raise ConnectionRefusedError

    monkeypatch.setattr("socket.create_connection", refuse)
    assert hub.hub_available() is False and hub.hub_available() is False
    assert calls == [(("127.0.0.1", 9), hub.CONNECT_TIMEOUT_S)]  # one attempt per process, at most 1 s
