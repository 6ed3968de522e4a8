"""bench --request-rate (open loop) against a REAL server: llama-cpp-python's, which answers one request at a time.

A server that serialises requests is the sharpest test of an open loop: requests must still leave on their Poisson
schedule while earlier ones stream, so at a rate above what the server serves the queue (and TTFT) grows.
"""

from __future__ import annotations

import json

import pytest

from infer_advisor.bench import BenchReport, bench

pytestmark = pytest.mark.integration

OUT_TOKENS = 48


def test_requests_leave_on_schedule_and_an_overloaded_queue_grows(llama_server, tmp_path):
    out = tmp_path / "open"
    # The tiny model answers 48 tokens in 0.05-0.2 s, one request at a time, depending on the CPU (about 20 req/s
    # served on an AVX-512 Xeon, where 25 req/s did not overload it): 0.5 req/s is light, 100 overloads any of them.
    report = bench("openai", url=llama_server, workload="throughput", request_rate=[0.5, 100.0], input_tokens=16,
                   output_tokens=OUT_TOKENS, num_prompts=80, max_duration=8.0, seed=1, out=out, progress=False)
    light, heavy = report.levels
    assert report.complete and [lv.request_rate for lv in report.levels] == [0.5, 100.0]
    # Sent on schedule, whatever was still in flight: the client was never more than a few ms late.
    for lv in report.levels:
        assert lv.send_lateness_s.p99 < 0.05
    reqs = [s for s in report.requests if s.request_rate == 100.0]
    assert len(reqs) == heavy.num_requests == 80  # 80 arrivals take ~0.8 s at 100 req/s, inside --max-duration
    assert heavy.concurrency > 3  # many requests in flight on a one-at-a-time server
    assert heavy.achieved_rate_per_s == pytest.approx(100.0, rel=0.5)  # an 80-sample Poisson stream, seeded
    # The server serves far fewer: the last requests wait for all before them, the first do not.
    ordered = sorted(reqs, key=lambda s: s.sent_offset_s)
    assert ordered[-1].ttft_s > 5 * ordered[0].ttft_s
    # The queue grew: late arrivals waited for all before them (an absolute TTFT depends on the CPU's speed).
    assert heavy.saturated is True and heavy.ttft_s.p90 > 5 * light.ttft_s.p50
    assert light.saturated is None or light.saturated is False  # max_duration 8 s at 0.5 req/s: few requests
    assert light.num_requests <= 10 and light.ttft_s.p50 < heavy.ttft_s.p50
    for s in report.requests:
        # llama-cpp-python's server sends no usage and holds back a token that ends in an incomplete UTF-8 character,
        # streaming it merged with the next: an answer that stopped at max_tokens in fewer chunks counts max_tokens
        # (finish-length), and its gaps are one per token (tests/bench/test_bench_merged_chunks.py).
        assert s.output_tokens == OUT_TOKENS and 0 < s.ttft_s <= s.e2e_s
        assert s.token_count_source in ("streamed-chunks", "finish-length") and len(s.itl_s) == OUT_TOKENS - 1
        assert s.scheduled_offset_s is not None and s.sent_offset_s >= s.scheduled_offset_s
    saved = BenchReport.model_validate_json((out / "bench.json").read_text())
    assert saved == report
    assert (out / "bench.png").read_bytes()[:4] == b"\x89PNG"
    header = (out / "bench.csv").read_text().splitlines()[0].split(",")
    assert {"request_rate", "achieved_rate_per_s", "saturated"} <= set(header)


def test_a_run_stopped_after_the_first_rate_keeps_it_marked_incomplete(llama_server, tmp_path):
    out = tmp_path / "stopped"

    def stop(level):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        bench("openai", url=llama_server, workload="throughput", request_rate=[4.0, 8.0], input_tokens=16,
              output_tokens=4, num_prompts=6, out=out, progress=False, on_level=stop)
    saved = json.loads((out / "bench.json").read_text())
    assert saved["complete"] is False and "KeyboardInterrupt" in saved["error"]
    assert [lv["request_rate"] for lv in saved["levels"]] == [4.0]
    assert (out / "bench.incomplete.csv").exists() and not (out / "bench.csv").exists()
