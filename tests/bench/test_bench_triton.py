"""`bench --engine triton` against a loopback server speaking Triton's generate extension as Triton 26.07 writes it.

Triton and TensorRT-LLM cannot run on this CPU machine. The fake follows the documented format:
- POST /v2/repository/index -> [{"name", "version", "state"}] (docs/protocol/extension_model_repository.md);
- POST /v2/models/<model>/generate_stream -> `text/event-stream; charset=utf-8`, each response `data: <json>\\n\\n`
  (src/http_server.cc, server v2.71.0) with model_name, model_version and the model's outputs; the LLM API model
  (TensorRT-LLM triton_backend/all_models/llmapi/tensorrt_llm/1/model.py) sends one response per generated step whose
  text_output is the text so far; an error after the first response is an `{"error": ...}` event under HTTP 200;
- unknown inputs are refused before inference with HTTP 400 and a JSON error (Triton: "unexpected inference input").
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from infer_advisor.bench import bench
from infer_advisor.errors import BenchmarkError

INPUTS = {  # the tensorrt_llm model's inputs the client may send (data/triton.yaml model_inputs)
    "text_input", "streaming", "sampling_param_max_tokens", "sampling_param_top_k", "sampling_param_seed",
    "sampling_param_exclude_input_from_output", "sampling_param_temperature", "sampling_param_top_p",
}
MODEL = "tensorrt_llm"
GAP_S = 0.005


def _server(fail_after: int | None = None, stop_early: int | None = None, index: bytes | None = None):
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _json(self, status: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
            if self.path == "/v2/repository/index":
                if index is not None:  # a broken or foreign answer
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(index)))
                    self.end_headers()
                    self.wfile.write(index)
                    return None
                return self._json(200, [{"name": MODEL, "version": "1", "state": "READY"}])
            if self.path != f"/v2/models/{MODEL}/generate_stream":
                return self._json(404, {"error": f"Request for unknown model: '{self.path}' is not found"})
            unknown = set(request) - INPUTS
            if unknown:
                return self._json(400, {"error": f"unexpected inference input '{sorted(unknown)[0]}' for model '{MODEL}'"})
            seen.append(request)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.end_headers()
            n = request["sampling_param_max_tokens"] if stop_early is None else stop_early
            text = "" if request.get("sampling_param_exclude_input_from_output") else request["text_input"]
            for i in range(n):
                if fail_after is not None and i == fail_after:
                    self.wfile.write(b'data: {"error":"Error generating request: CUDA out of memory"}\n\n')
                    return
                text += f" t{i}"
                event = {"model_name": MODEL, "model_version": "1", "text_output": text}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(GAP_S)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def _url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_bench_triton_counts_one_token_per_streamed_step():
    server, seen = _server()
    try:
        report = bench("triton", url=_url(server), concurrency=[1, 2], output_tokens=6, num_prompts=2, warmup=0, progress=False)
    finally:
        server.shutdown()
    assert report.complete and report.metadata.engine == "triton" and report.metadata.model == MODEL
    for s in report.requests:
        assert s.output_tokens == 6 and s.streamed_chunks == 6 and s.token_count_source == "streamed-chunks"
        assert 0 < s.ttft_s < s.e2e_s and len(s.itl_s) == 5
    # Only the model's own inputs, streaming on, the prompt not echoed, greedy.
    assert all(r["streaming"] is True and r["sampling_param_exclude_input_from_output"] is True for r in seen)
    assert all(r["sampling_param_top_k"] == 1 and r["sampling_param_max_tokens"] == 6 for r in seen)
    assert any("ignore_eos" in note for note in report.notes)


def test_bench_triton_sees_a_request_that_stops_at_eos():
    server, _ = _server(stop_early=3)
    try:
        report = bench("triton", url=_url(server), model=MODEL, concurrency=[1], output_tokens=6, num_prompts=1, warmup=0,
                       progress=False)
    finally:
        server.shutdown()
    assert [s.output_tokens for s in report.requests] == [3]


def test_bench_triton_error_event_fails_with_the_servers_message():
    server, _ = _server(fail_after=2)
    try:
        with pytest.raises(BenchmarkError, match="CUDA out of memory"):
            bench("triton", url=_url(server), concurrency=[1], output_tokens=6, num_prompts=1, warmup=0, progress=False)
    finally:
        server.shutdown()


def test_bench_triton_unknown_model_is_one_line():
    server, _ = _server()
    try:
        with pytest.raises(BenchmarkError, match="HTTP 404"):
            bench("triton", url=_url(server), model="ensemble", concurrency=[1], output_tokens=4, num_prompts=1, warmup=0,
                  progress=False)
    finally:
        server.shutdown()


def test_openai_path_does_not_reach_the_triton_model():
    """The OpenAI path posts /v1/completions, which a Triton server without the OpenAI frontend does not serve: the
    report would be empty, so `bench --engine openai` fails with one line and `--engine triton` is the way."""
    server, _ = _server()
    try:
        with pytest.raises(BenchmarkError):
            bench("openai", url=_url(server), model=MODEL, concurrency=[1], output_tokens=4, num_prompts=1, warmup=0, progress=False)
    finally:
        server.shutdown()


@pytest.mark.parametrize(
    "index", [b"<html>proxy</html>", b'{"models": []}', b'[1, "x", {"state": "READY"}]', b"[]"],
    ids=["not-json", "not-a-list", "no-named-model", "empty"],
)
def test_bench_triton_foreign_index_is_one_line(index):
    """As main's OpenAI path reads /v1/models: an index that is not Triton's model list is one BenchmarkError line
    (exit 2), never a traceback."""
    server, _ = _server(index=index)
    try:
        with pytest.raises(BenchmarkError, match="model list|no ready model"):
            bench("triton", url=_url(server), concurrency=[1], output_tokens=4, num_prompts=1, warmup=0, progress=False)
    finally:
        server.shutdown()
