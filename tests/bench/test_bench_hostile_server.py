"""`bench --engine openai` against a server that misbehaves (issues 18, 21, 22): each wrong answer is one failed
request, counted on its level; the level and the run go on. A real HTTP server on loopback answers the k-th
request with the k-th behaviour below."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from infer_advisor.bench import bench
from tests.bench.fake_openai import models_handler

MODEL = "hostile-model"
N_TOKENS = 5


def _chunk(text: str | None = "", finish: str | None = None, **extra) -> bytes:
    body = {"id": "c", "object": "text_completion", "model": MODEL,
            "choices": [{"index": 0, "text": text, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n".encode()


def _good(n: int, token: str = " t") -> list[bytes]:
    return [_chunk(f"{token}{i}") for i in range(n - 1)] + [_chunk(f"{token}{n}", "length")] + [
        f"data: {json.dumps({'choices': [], 'usage': {'prompt_tokens': 3, 'completion_tokens': n}})}\n\n".encode(),
        b"data: [DONE]\n\n"]


# behaviour -> (events, counted as failed)
BEHAVIOURS = {
    "good": (_good(N_TOKENS), False),
    "unicode separators in tokens": (_good(N_TOKENS, token="\u2028x\x85\u2029"), False),
    "not json": ([_chunk(" a"), b"data: {not json\n\n", b"data: [DONE]\n\n"], True),
    "a list chunk": ([b"data: [1, 2]\n\n", b"data: [DONE]\n\n"], True),
    "choices not a list of objects": ([b'data: {"choices": ["x"]}\n\n', b"data: [DONE]\n\n"], True),
    "string usage": ([_chunk(" a", "length"), b'data: {"choices": [], "usage": "lots"}\n\n', b"data: [DONE]\n\n"], True),
    "negative usage": ([_chunk(" a", "length"),
                        b'data: {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": -4}}\n\n', b"data: [DONE]\n\n"], True),
    "cut mid-answer": ([_chunk(" a"), _chunk(" b")], True),
    "empty completion": ([_chunk("", "stop"), b"data: [DONE]\n\n"], True),
    "endless": (None, True),
}


def _server(behaviours: list[str], refuse_fields: tuple[str, ...] = ()):
    state = {"n": 0, "bodies": []}
    lock = threading.Lock()

    class Handler(models_handler(MODEL)):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            refused = [f for f in refuse_fields if f in request]
            if refused:  # `transformers serve`: a pydantic model with extra="forbid" answers 422
                body = json.dumps({"detail": [{"type": "extra_forbidden", "loc": ["body", f]} for f in refused]}).encode()
                self.send_response(422)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            with lock:
                kind = behaviours[state["n"] % len(behaviours)]
                state["n"] += 1
                state["bodies"].append(request)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            events = BEHAVIOURS[kind][0]
            try:
                if events is None:  # an endless stream of tokens
                    while True:
                        self.wfile.write(_chunk(" x"))
                        self.wfile.flush()
                for event in events:
                    self.wfile.write(event)
                    self.wfile.flush()
                    time.sleep(0.002)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, state


def _run(server, **kw):
    url = f"http://127.0.0.1:{server.server_address[1]}"
    return bench("openai", url=url, output_tokens=N_TOKENS, warmup=0, progress=False, **kw)


def test_each_wrong_answer_is_one_failed_request_and_the_level_goes_on():
    kinds = list(BEHAVIOURS)
    server, _ = _server(kinds)
    try:
        start = time.monotonic()
        report = _run(server, concurrency=[1], num_prompts=len(kinds))
        took = time.monotonic() - start
    finally:
        server.shutdown()
    assert report.complete and len(report.levels) == 1
    level = report.levels[0]
    bad = [k for k, (_, failed) in BEHAVIOURS.items() if failed]
    assert level.failed_requests == len(bad), level.failure_reasons
    assert level.num_requests == len(kinds) - len(bad)
    assert all(s.output_tokens == N_TOKENS for s in report.requests)  # the U+2028 tokens counted as tokens
    assert any("failed" in n for n in report.notes)
    assert took < 30


def test_a_server_that_refuses_optional_fields_is_benchmarked_without_them():
    """`transformers serve` answers 422 to ignore_eos and min_tokens: the run drops them once and goes on."""
    server, state = _server(["good"], refuse_fields=("ignore_eos", "min_tokens"))
    try:
        report = _run(server, concurrency=[1, 2], num_prompts=4)
    finally:
        server.shutdown()
    assert report.complete and sum(lv.num_requests for lv in report.levels) == 8
    assert all(lv.failed_requests == 0 for lv in report.levels)
    assert all("ignore_eos" not in b and "min_tokens" not in b for b in state["bodies"])
    assert any("refused" in n and "ignore_eos" in n for n in report.notes)


def test_a_level_where_every_request_fails_stops_the_run_with_one_reason(tmp_path):
    from infer_advisor.errors import BenchmarkError

    server, _ = _server(["empty completion"])
    try:
        with pytest.raises(BenchmarkError, match="empty completion"):
            _run(server, concurrency=[1], num_prompts=2)
    finally:
        server.shutdown()


def test_warm_up_prompts_differ_from_measured_prompts():
    """random.Random(-n) seeds as Random(n): the old negative warm-up seeds drew the measured prompts again."""
    from infer_advisor.bench.workload import synthetic_text
    from infer_advisor.bench.workload import Workload as W

    fields = {k: v for k, v in W.model_fields.items()}
    assert "warmup" in fields
    wl = W.model_construct(input_tokens=64, output_tokens=8, warmup=3, seed=0, prompts=[], num_prompts=16,
                           concurrency=[4], request_rate=None, max_duration=None, ignore_eos=True, profile="throughput")
    measured = {synthetic_text(it.input_tokens, it.seed) for it in wl.requests(4)}
    warm = {synthetic_text(it.input_tokens, it.seed) for it in wl.warmups(4)}
    assert measured and warm and not measured & warm
    text_wl = wl.model_copy(update={"input_tokens": None, "prompts": ["Tell me a story.", "Hello"]})
    assert not {i.text for i in text_wl.warmups(4)} & {i.text for i in text_wl.requests(4)}


def test_a_drip_fed_model_list_is_bounded(monkeypatch):
    """A /v1/models answer sent one byte a second never tripped the read timeout: the check has a total deadline."""
    from infer_advisor.bench.backends import openai_engine
    from infer_advisor.errors import BenchmarkError

    real = openai_engine.constant
    monkeypatch.setattr(openai_engine, "constant", lambda name: 1.0 if name == "models_timeout_s" else real(name))

    class Drip(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            try:
                for _ in range(60):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = time.monotonic()
    try:
        with pytest.raises(BenchmarkError):
            _run(server, concurrency=[1], num_prompts=1)
    finally:
        server.shutdown()
    assert time.monotonic() - start < 10
