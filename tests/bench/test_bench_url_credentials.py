"""What `bench` writes from what the user and the server give it (secaudit, session 8).

- `bench --url http://user:TOKEN@host` (a server behind basic auth): the credentials are used for the connection and
  written into no result file (bench.json kept them three times: the device name, the request and the command line;
  the rule is that no token is written into any file).
- a model name with matplotlib mathtext in it ('m$\\frac{$x', from the server's /v1/models) is literal text in
  bench.png's title (it raised ValueError while saving: exit 3).
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer

import pytest

from infer_advisor.untrusted import without_credentials
from tests.bench.fake_openai import models_handler
from tests.bench.test_bench_hostile_server import _good
from tests.probe.contract import check, run_cli

SECRET = "SecAuditUrlSecret0123"


class _Handler(models_handler("m")):
    seen_auth: list[str | None] = []

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        type(self).seen_auth.append(self.headers.get("Authorization"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in _good(5):
            self.wfile.write(event)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_url_credentials_are_used_but_never_written(server, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "bench"
    url = f"http://user:{SECRET}@127.0.0.1:{server}"
    args = ["bench", "--engine", "openai", "--url", url, "--concurrency", "1", "--num-prompts", "2", "--output-tokens", "5",
            "--out", str(out), "--no-progress"]
    outcome = run_cli(args)
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    assert any(a and a.startswith("Basic ") for a in _Handler.seen_auth), "the credentials were not used"
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "bench.json" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    report = json.loads((out / "bench.json").read_text())
    assert report["metadata"]["device"]["name"] == f"http://***@127.0.0.1:{server}"
    assert SECRET not in outcome.out


@pytest.mark.parametrize(("text", "kept"), [
    ("http://u:p@h:1/x", "http://***@h:1/x"), ("--url=https://tok@h", "--url=https://***@h"),
    ("http://h/a@b", "http://h/a@b"), ("http://h:8000", "http://h:8000"), ("me@example.com", "me@example.com"),
])
def test_without_credentials(text, kept):
    assert without_credentials(text) == kept


class _MathName(models_handler("m$\\frac{$x")):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in _good(5):
            self.wfile.write(event)


def test_a_server_model_name_is_not_mathtext_in_the_plot(tmp_path, monkeypatch):
    """The model name the server lists is the bench.png title: literal text, never matplotlib mathtext (before:
    'm$\\frac{$x' raised ValueError while saving the plot: exit 3)."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _MathName)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "bench"
        args = ["bench", "--engine", "openai", "--url", f"http://127.0.0.1:{srv.server_address[1]}", "--concurrency", "1",
                "--num-prompts", "2", "--output-tokens", "5", "--out", str(out), "--no-progress"]
        outcome = run_cli(args)
    finally:
        srv.shutdown()
        srv.server_close()
    check(outcome, args)
    assert outcome.code == 0, outcome.err
    assert json.loads((out / "bench.json").read_text())["metadata"]["model"] == "m$\\frac{$x"
    assert (out / "bench.png").read_bytes()[:4] == b"\x89PNG"
