"""`bench --engine openai` against each added engine's streaming format (issue 12).

TensorRT-LLM, MLC LLM, TabbyAPI (ExLlamaV2) and mistral.rs cannot run on this CPU machine, so a loopback server
speaks each one's documented `/v1/completions` stream, as its source writes it:

- trtllm-serve: OpenAI chunks; with stream_options.include_usage a last chunk with `choices: []` and the usage.
- mlc_llm serve (python/mlc_llm/serve/entrypoints/openai_entrypoints.py, v0.20.0): `data: ...\\n\\n` chunks, the usage
  in a last chunk with no choices, then `data: [DONE]`.
- TabbyAPI (endpoints/OAI/utils/completion.py, commit d2d87bb; sse_starlette): CRLF-separated events, `: ping`
  comments, a `model_name` field, and a usage chunk whose one choice has empty text and the finish reason.
- mistral.rs (mistralrs-server-core/src/completions.rs, v0.9.2): chunks without usage, the last one carrying the
  finish reason, keep-alive comments, then `[DONE]`.

The client must count the same tokens and see the first token's time in each.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import ThreadingHTTPServer

import pytest

from infer_advisor.bench import bench
from tests.bench.fake_openai import models_handler

TOKEN_GAP_S = 0.005


def _chunk(engine: str, i: int | None, model: str, finish: str | None = None, usage: dict | None = None) -> dict:
    base = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": model}
    text = "" if i is None else f" t{i}"
    if engine == "trtllm":
        choices = [] if usage else [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish, "stop_reason": None}]
        return base | {"choices": choices, "usage": usage}
    if engine == "mlc":
        return base | ({"choices": [], "usage": usage} if usage else {"choices": [{"index": 0, "text": text, "finish_reason": finish}]})
    if engine == "tabby":
        body = {"id": "chatcmpl-1", "object": "text_completion", "created": 1, "model_name": model}
        if usage:  # "Make sure we don't break some client with empty choices list"
            return body | {"choices": [{"index": 0, "text": "", "finish_reason": "length"}], "usage": usage}
        return body | {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}
    # mistral.rs: CompletionChunkResponse has no usage field
    return base | {"system_fingerprint": "local", "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}]}


def _events(engine: str, n: int, model: str, include_usage: bool):
    usage = {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": n + 5}
    sep = "\r\n\r\n" if engine == "tabby" else "\n\n"
    for i in range(n):
        last = i == n - 1
        if engine == "tabby" and i == 1:
            yield f": ping - 2026-01-01 00:00:00{sep}"
        if engine == "mistralrs" and i == 1:
            yield f":{sep}"  # axum keep-alive
        if engine == "mistralrs" and last:  # the finishing chunk carries the last token and the reason
            yield f"data: {json.dumps(_chunk(engine, i, model, finish='length'))}{sep}"
            continue
        yield f"data: {json.dumps(_chunk(engine, i, model))}{sep}"
    if engine == "trtllm":
        yield f"data: {json.dumps(_chunk(engine, None, model, finish='length'))}{sep}"
    if engine in ("trtllm", "tabby") and include_usage or engine == "mlc":
        yield f"data: {json.dumps(_chunk(engine, None, model, usage=usage))}{sep}"
    yield f"data: [DONE]{sep}"


def _server(engine: str, model: str):
    class Handler(models_handler(model)):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert self.path == "/v1/completions" and request["stream"] is True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            for event in _events(engine, request["max_tokens"], model, include_usage):
                self.wfile.write(event.encode())
                self.wfile.flush()
                time.sleep(TOKEN_GAP_S)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("engine, counted_by", [("trtllm", "server-usage"), ("mlc", "server-usage"), ("tabby", "server-usage"),
                                                 ("mistralrs", "streamed-chunks")])
def test_bench_counts_tokens_in_each_engines_stream(engine, counted_by):
    server = _server(engine, model=f"{engine}-model")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        report = bench("openai", url=url, concurrency=[1, 2], output_tokens=6, num_prompts=2, warmup=0, progress=False)
    finally:
        server.shutdown()
    assert report.complete and report.metadata.model == f"{engine}-model"
    for s in report.requests:
        assert s.output_tokens == 6 and s.token_count_source == counted_by
        assert s.streamed_chunks == 6  # the usage chunk and the empty finishing chunks are not tokens
        assert 0 < s.ttft_s < s.e2e_s
