"""bench --engine openai against a REAL OpenAI-compatible server: llama.cpp's (llama-cpp-python[server]) on 127.0.0.1.

The server streams one SSE chunk per token on /v1/completions. It sends no ``usage`` inside a stream, so the
server's own count is taken from the same request sent without streaming (greedy, same seed: same tokens).
"""

from __future__ import annotations

import csv

import httpx
import pytest

from infer_advisor.bench import BenchReport, bench
from infer_advisor.cli import main
from tests.bench.checks import check_consistent

pytestmark = pytest.mark.integration

OUT_TOKENS = 12


def test_openai_stream_against_llama_cpp_server(llama_server, tmp_path):
    out = tmp_path / "openai"
    report = bench(
        "openai", url=llama_server, concurrency=[1, 3], output_tokens=OUT_TOKENS, num_prompts=3, out=out, progress=False
    )
    assert report.complete and report.metadata.model == "tiny"  # the server's first (only) model
    assert report.metadata.device.kind == "remote" and report.metadata.memory_source == "none"
    check_consistent(report, OUT_TOKENS)
    for s in report.requests:
        assert s.streamed_chunks == OUT_TOKENS
        assert s.token_count_source == "streamed-chunks"  # llama-cpp-python sends no usage in a stream
    # The server's own usage for the same requests (non-streamed, same body) agrees with what was counted.
    from infer_advisor.bench.backends.openai_engine import OpenAIEngine
    from infer_advisor.bench.request import BenchRequest
    from infer_advisor.bench.workload import resolve_workload

    req = BenchRequest(engine="openai", url=llama_server, output_tokens=OUT_TOKENS, num_prompts=3)
    engine, wl = OpenAIEngine(req), resolve_workload(req)
    for item in wl.requests(1):
        body = engine.body(item, wl) | {"stream": False}
        body.pop("stream_options")
        usage = httpx.post(f"{llama_server}/v1/completions", json=body, timeout=60).json()["usage"]
        assert usage["completion_tokens"] == OUT_TOKENS
    # With 3 in flight on a server that runs one at a time, later requests wait: TTFT grows with concurrency.
    lv1, lv3 = report.levels
    assert lv3.ttft_s.p99 > lv1.ttft_s.p50
    assert BenchReport.model_validate_json((out / "bench.json").read_text()) == report
    assert [r["concurrency"] for r in csv.DictReader((out / "bench.csv").open())] == ["1", "3"]
    assert (out / "bench.png").read_bytes()[:4] == b"\x89PNG"


def test_long_answers_never_count_more_than_max_tokens(llama_server):
    """llama-cpp-python may stream a few extra chunks (held-back text) on long answers; tokens stay <= max_tokens."""
    report = bench(
        "openai", url=llama_server, concurrency=[1], output_tokens=100, num_prompts=3, warmup=0, progress=False
    )
    for s in report.requests:
        assert s.output_tokens == 100 and s.streamed_chunks >= 100
        assert 0 < s.ttft_s <= s.e2e_s


def test_openai_synthetic_prompts_and_usage_free_server(llama_server):
    """Throughput profile: synthetic prompts of --input-tokens words; EOS ignored via min_tokens."""
    report = bench(
        "openai",
        url=llama_server,
        workload="throughput",
        concurrency=[2],
        input_tokens=32,
        output_tokens=8,
        num_prompts=2,
        progress=False,
    )
    check_consistent(report, 8)
    assert all(s.input_tokens is None for s in report.requests)  # not reported by this server while streaming


def test_cli_openai_prints_table(llama_server, capsys):
    assert (
        main(
            [
                "bench",
                "--engine",
                "openai",
                "--url",
                llama_server + "/v1",
                "--output-tokens",
                "4",
                "--num-prompts",
                "2",
                "--no-progress",
            ]
        )
        == 0
    )
    shown = capsys.readouterr().out
    assert "tok/s" in shown and "Memory not measured" in shown


@pytest.mark.parametrize("extra", [[], ["--model", "tiny"]])
def test_http_errors_are_one_line(llama_server, capsys, extra):
    """A wrong base path: /v1/models (no --model) or /v1/completions (with --model) answer 404."""
    code = main(
        [
            "bench",
            "--engine",
            "openai",
            "--url",
            llama_server + "/nope",
            *extra,
            "--output-tokens",
            "2",
            "--num-prompts",
            "1",
            "--warmup",
            "0",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: ") and "HTTP 404" in err and len(err.splitlines()) == 1
