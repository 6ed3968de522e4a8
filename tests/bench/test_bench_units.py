"""Fast checks of the bench arithmetic, workload defaults, options model and schema."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from infer_advisor.bench import BenchReport, BenchRequest
from infer_advisor.bench.metrics import level_result, percentile, sample
from infer_advisor.bench.workload import resolve_workload, workload_file


@given(
    st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=60),
    st.sampled_from([50, 90, 99]),
)
def test_percentile_matches_numpy(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-9)


def test_sample_and_level_arithmetic():
    # Sent at t=10; tokens at 10.5, 10.6, 10.8, 11.1: TTFT 0.5, e2e 1.1, TPOT (1.1-0.5)/3 = 0.2.
    s = sample(concurrency=2, index=0, sent_at=10.0, token_times=[10.5, 10.6, 10.8, 11.1], input_tokens=7)
    assert (s.ttft_s, s.e2e_s, s.output_tokens) == (pytest.approx(0.5), pytest.approx(1.1), 4)
    assert s.tpot_s == pytest.approx(0.2)
    assert s.itl_s == pytest.approx([0.1, 0.2, 0.3])
    # The server's usage may count more tokens than chunks (several tokens per chunk): TPOT uses the count.
    u = sample(
        concurrency=2,
        index=1,
        sent_at=10.0,
        token_times=[10.2, 11.2],
        input_tokens=None,
        output_tokens=6,
        source="server-usage",
        streamed_chunks=2,
    )
    assert u.tpot_s == pytest.approx(1.0 / 5) and u.streamed_chunks == 2
    lv = level_result(2, [s, u], duration_s=2.0, peak_memory_bytes=123)
    assert lv.output_tokens_total == 10
    assert lv.output_tokens_per_s_aggregate == pytest.approx(5.0)
    assert lv.requests_per_s == pytest.approx(1.0)
    assert lv.output_tokens_per_s_per_request == pytest.approx((4 / 1.1 + 6 / 1.2) / 2)
    assert lv.itl_s.n == 4 and lv.input_tokens_mean == 7
    one = sample(concurrency=1, index=0, sent_at=0.0, token_times=[0.3], input_tokens=1)
    assert one.tpot_s is None and level_result(1, [one], 0.3, None).tpot_s is None


def test_latency_profile_is_the_studys_setup():
    prof = workload_file().profiles["latency"]
    assert (prof.concurrency, prof.output_tokens, prof.warmup, len(prof.prompts)) == ([1], 200, 1, 9)
    wl = resolve_workload(BenchRequest(engine="transformers", model="m"))
    assert len(wl.requests(1)) == 9 and len(wl.warmups(1)) == 1 and wl.output_tokens == 200
    assert len(wl.requests(16)) == 16  # at least one request per slot in flight
    thr = resolve_workload(BenchRequest(engine="transformers", model="m", workload="throughput", input_tokens=64))
    assert thr.concurrency == [1, 4, 16, 64] and all(it.input_tokens == 64 for it in thr.requests(4))
    # Every level is warmed up with a full round of its own shape (a cold allocator per batch size inflated TPOT).
    assert [len(thr.warmups(c)) for c in thr.concurrency] == [1, 4, 16, 64]
    assert all(it.input_tokens == 64 for it in thr.warmups(16))
    assert {it.seed for it in thr.warmups(4)}.isdisjoint(it.seed for it in thr.requests(4))
    for name, c in workload_file().constants.items():
        assert c.source and c.description, name


def test_every_option_is_described_and_extra_forbidden():
    for name, field in BenchRequest.model_fields.items():
        assert field.description, name
    with pytest.raises(ValueError):
        BenchRequest(engine="transformers", model="m", concurency=[1])
    from infer_advisor.bench.request import check_request
    from infer_advisor.errors import RequestError

    with pytest.raises(RequestError, match="positive"):
        check_request(BenchRequest(engine="transformers", model="m", concurrency=[1, -4]))


def test_report_schema_is_published():
    schema = BenchReport.model_json_schema()
    assert {"metadata", "levels", "requests", "comparisons", "complete"} <= set(schema["properties"])


def test_import_stays_light():
    import subprocess
    import sys

    code = "import sys, infer_advisor.bench, infer_advisor.cli.bench_cmd; print(sorted(m for m in ('torch','transformers','ctranslate2','matplotlib','httpx','vllm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_top_level_name_is_callable_after_the_package_is_imported():
    import infer_advisor
    import infer_advisor.bench  # binds the package to infer_advisor.bench
    from infer_advisor import bench

    assert callable(bench) and callable(infer_advisor.bench)
    from infer_advisor.errors import RequestError

    with pytest.raises(RequestError, match="--url is required"):
        bench("openai")
