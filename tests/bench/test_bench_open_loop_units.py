"""Fast checks of bench's open-loop mode (--request-rate): the Poisson schedule, option checks, level statistics,
the shared queue-growth test, and what is written. The runs against a real server are in test_bench_open_loop.py."""

from __future__ import annotations

import csv
import statistics

import pytest

from infer_advisor.bench import BenchRequest
from infer_advisor.bench.metrics import open_level_result, sample
from infer_advisor.bench.output import level_rows, render_table
from infer_advisor.bench.report import BenchMetadata, BenchReport, DeviceInfo
from infer_advisor.bench.workload import constant, resolve_workload
from infer_advisor.cli import main
from infer_advisor.simulate import LengthSpec, SchedulerConfig, Workload, queue_growing, simulate


def _workload(**kw):
    return resolve_workload(BenchRequest(engine="openai", url="http://127.0.0.1:1", workload="throughput", **kw))


def test_poisson_schedule_is_seeded_bounded_and_has_the_rate():
    wl = _workload(request_rate=[2.0], num_prompts=4000, seed=3)
    items, offsets = wl.open_loop(2.0)
    assert len(items) == len(offsets) == 4000 and offsets[0] == 0.0
    gaps = [b - a for a, b in zip(offsets, offsets[1:])]
    assert all(g >= 0 for g in gaps)
    assert statistics.mean(gaps) == pytest.approx(0.5, rel=0.05)  # exponential gaps of mean 1 / rate
    assert statistics.stdev(gaps) == pytest.approx(0.5, rel=0.1)  # ... whose spread equals their mean
    assert wl.open_loop(2.0) == (items, offsets)  # the same seed sends the same schedule and prompts
    assert _workload(request_rate=[2.0], num_prompts=4000, seed=4).open_loop(2.0)[1] != offsets
    assert len({it.seed for it in items}) == len(items)  # every request its own prompt
    short, at = _workload(request_rate=[2.0], num_prompts=4000, max_duration=10.0).open_loop(2.0)
    assert at[-1] <= 10.0 and 10 <= len(short) <= 35  # ~20 arrivals in 10 s
    assert len(_workload(request_rate=[1.0]).open_loop(1.0)[0]) == int(constant("open_loop_requests"))


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--request-rate", "1", "--concurrency", "4"], "exclude each other"),
        (["--request-rate", "0"], "above 0"),
        (["--request-rate", "-2"], "above 0"),
        (["--request-rate", "nan"], "above 0"),
        (["--request-rate", "abc"], "comma-separated numbers"),
        (["--max-duration", "30"], "use it with --request-rate"),
        (["--request-rate", "1", "--max-duration", "0"], "--max-duration"),
    ],
)
def test_bad_open_loop_options_are_one_line(args, needle, capsys):
    try:
        code = main(["bench", "--engine", "openai", "--url", "http://127.0.0.1:9", *args])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_open_loop_needs_a_server(tmp_path, capsys):
    code = main(["bench", "--engine", "transformers", "--model", str(tmp_path), "--request-rate", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "needs --engine openai" in err and len(err.strip().splitlines()) == 1


def _samples(ttfts, *, rate=2.0, late=0.001):
    """Requests sent every 1 / rate seconds (``late`` behind schedule), each answered in 3 tokens 20 ms apart."""
    out = []
    for i, ttft in enumerate(ttfts):
        sent = i / rate + late
        out.append(sample(concurrency=1 + i % 5, index=i, sent_at=sent, token_times=[sent + ttft, sent + ttft + 0.02,
                          sent + ttft + 0.04], input_tokens=100, request_rate=rate, sent_offset_s=sent,
                          scheduled_offset_s=i / rate))  # fmt: skip
    return out


def test_open_level_statistics():
    samples = _samples([0.2] * 30)
    lv = open_level_result(2.0, samples, duration_s=15.0)
    assert lv.request_rate == 2.0 and lv.num_requests == 30
    assert lv.achieved_rate_per_s == pytest.approx(2.0)  # 29 gaps of 0.5 s
    assert lv.send_lateness_s.p99 == pytest.approx(0.001)
    assert lv.concurrency == 5  # the most requests in flight at once
    assert lv.ttft_s.p50 == pytest.approx(0.2) and lv.itl_s.p50 == pytest.approx(0.02)
    assert lv.saturated is False
    assert open_level_result(2.0, _samples([0.2] * 19), 10.0).saturated is None  # too few to tell


def test_a_growing_queue_is_flagged_as_the_simulator_flags_it():
    growing = [0.2 + 0.25 * i for i in range(40)]  # every request waits 0.25 s longer than the one before
    assert open_level_result(2.0, _samples(growing), 20.0).saturated is True
    assert queue_growing(growing) is True and queue_growing([0.2] * 40) is False
    # order matters: the test reads TTFTs in the order the requests were sent, whatever order they finished in
    assert open_level_result(2.0, list(reversed(_samples(growing))), 20.0).saturated is True
    # The simulator's own flag is the same function of its TTFTs: overload saturates, light load does not.
    from infer_advisor.estimate.step_time import build_step_model
    from infer_advisor.model_facts import resolve_model

    step = build_step_model(resolve_model("Qwen/Qwen2.5-0.5B", source="catalog"), gpu=None, engine="llama.cpp",
                            quantization="gguf-f16", dtype="float16", cpu_cores=2)
    cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=512, kv_capacity_tokens=4 * 256, kv_admission="reserve",
                          block_size=1)
    w = dict(input_tokens=LengthSpec(mean=128), output_tokens=LengthSpec(mean=64))
    assert simulate(step, Workload(**w, rate=50.0), cfg, requests=200).saturated
    assert not simulate(step, Workload(**w, rate=0.05), cfg, requests=200).saturated


def test_open_levels_in_the_csv_and_the_table():
    md = BenchMetadata(engine="openai", model="m", workload="throughput", request={}, random_weights=False,
                       device=DeviceInfo(kind="remote", name="http://127.0.0.1:1"), versions={}, memory_source="none",
                       started_at="2026-12-03T00:00:00+00:00", command_line=["infer-advisor", "bench"])  # fmt: skip
    samples = _samples([0.2] * 30)
    report = BenchReport(metadata=md, levels=[open_level_result(2.0, samples, 15.0)], requests=samples, complete=True)
    (row,) = level_rows(report)
    assert row["request_rate"] == 2.0 and row["achieved_rate_per_s"] == pytest.approx(2.0) and row["saturated"] is False
    (table,) = render_table(report)
    assert "open loop" in table.title and table.row_count == 1
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(row))
    writer.writerow(row)
    assert "2.0" in buf.getvalue()
