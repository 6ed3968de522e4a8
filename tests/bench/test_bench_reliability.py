"""bench fails early on bad input, warms up every level, marks every file of an unfinished run, survives a kill, and
prints whole numbers in a pipe. The tiny Llama on CPU (transformers), or a URL nothing listens on (openai)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infer_advisor._output import MANIFEST, read_manifest
from infer_advisor.bench import BenchReport, bench
from infer_advisor.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _one_line(capsys, *args: str) -> str:
    code = main(["bench", *args, "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("where", ["/proc/x", "FILE", "FILE/sub"])
def test_out_is_checked_before_the_engine_or_any_request(where, tmp_path, capsys):
    """The probe: bench ran the whole benchmark, then lost the results in a traceback writing --out."""
    from tests.bench.conftest import free_port

    (tmp_path / "FILE").write_text("mine")
    out = where if where.startswith("/") else str(tmp_path / where)
    # Nothing listens on the URL: an error about --out proves the output was checked before the first request.
    err = _one_line(capsys, "--engine", "openai", "--url", f"http://127.0.0.1:{free_port()}", "--out", out)
    assert out in err and ("cannot be written" in err or "not a folder" in err)
    assert (tmp_path / "FILE").read_text() == "mine"


def test_out_is_created_before_the_first_request(tmp_path, capsys):
    from tests.bench.conftest import free_port

    out = tmp_path / "new" / "run"
    err = _one_line(capsys, "--engine", "openai", "--url", f"http://127.0.0.1:{free_port()}", "--out", str(out))
    assert "Cannot connect" in err
    assert read_manifest(out) == {**read_manifest(out), "files": [], "complete": False, "kind": "bench"}


def test_output_tokens_beyond_the_context_are_refused_before_running(tiny_llama, tmp_path, capsys):
    """The probe: --output-tokens 100000000 on a 512-token model ran for minutes."""
    start = time.monotonic()
    err = _one_line(capsys, "--engine", "transformers", "--model", str(tiny_llama), "--output-tokens", "100000000")
    assert "context of 512 tokens" in err and "--output-tokens" in err
    err = _one_line(
        capsys, "--engine", "transformers", "--model", str(tiny_llama), "--workload", "throughput",
        "--input-tokens", "500", "--output-tokens", "20",
    )  # fmt: skip
    assert "use --output-tokens 12 or less" in err
    assert time.monotonic() - start < 60


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"levels": [], "metadata": {}}', "a bench.json"),
        ("[1, 2, 3]", "not a plan"),
        ('{"model": "x"}', "not a plan"),
        ("not json", "cannot read a plan JSON"),
        (b"\xff\xfe{}", "cannot read a plan JSON"),
        ("[" * 100000 + "]" * 100000, "cannot read a plan JSON"),
    ],
)
def test_a_file_that_is_not_a_plan_is_one_line(content, needle, tiny_llama, tmp_path, capsys):
    """The probe: `bench --plan` with a file that is not a plan did no comparison without a word."""
    path = tmp_path / "plan.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    err = _one_line(capsys, "--engine", "transformers", "--model", str(tiny_llama), "--plan", str(path))
    assert needle in err and "infer-advisor plan" in err


def test_folder_with_config_but_no_weights_is_one_line(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "llama"}')
    err = _one_line(capsys, "--engine", "transformers", "--model", str(tmp_path / "m"))
    assert "no weight files" in err and "--random-weights" in err


def test_every_level_is_warmed_up_at_its_own_concurrency(tiny_llama, monkeypatch):
    """issue 13: warming up once at batch 1 left every larger batch on a cold caching allocator."""
    from infer_advisor.bench.backends.transformers_engine import TransformersEngine

    calls: list[tuple[int, int]] = []
    real = TransformersEngine.run_level

    def recording(self, items, concurrency, workload, on_done):
        calls.append((concurrency, len(items)))
        return real(self, items, concurrency, workload, on_done)

    monkeypatch.setattr(TransformersEngine, "run_level", recording)
    report = bench("transformers", tiny_llama, concurrency=[1, 3], output_tokens=3, num_prompts=3, progress=False)
    assert calls == [(1, 1), (1, 3), (3, 3), (3, 3)]  # (warm-up round, measured) per level
    assert [lv.num_requests for lv in report.levels] == [3, 3]  # warm-ups are not measured
    calls.clear()
    bench("transformers", tiny_llama, concurrency=[2], output_tokens=3, num_prompts=2, warmup=0, progress=False)
    assert calls == [(2, 2)]


def test_missing_matplotlib_is_one_note_and_the_rest_is_written(tiny_llama, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a))
    out = tmp_path / "run"
    report = bench("transformers", tiny_llama, concurrency=[1], output_tokens=3, num_prompts=1, out=out, progress=False)
    assert report.notes[0] == "bench.png not written: matplotlib is not installed (pip install 'infer-advisor[bench]')."
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "bench.csv", "bench.json", "requests.csv"]


def test_the_table_in_a_pipe_keeps_every_digit(tiny_llama, tmp_path, capsys, monkeypatch):
    """issue 13: redirected to a file, the table was cut at 80 columns ("1013…")."""
    monkeypatch.delenv("COLUMNS", raising=False)
    code = main([
        "bench", "--engine", "transformers", "--model", str(tiny_llama), "--concurrency", "1", "--output-tokens", "3",
        "--num-prompts", "1", "--no-progress", "--out", str(tmp_path / "o"),
    ])  # fmt: skip
    shown = capsys.readouterr().out
    assert code == 0
    report = BenchReport.model_validate_json((tmp_path / "o" / "bench.json").read_text())
    assert "…" not in shown and max(len(line) for line in shown.splitlines()) > 80
    assert f"{report.levels[0].output_tokens_per_s_aggregate:.1f}" in shown
    assert f"{report.levels[0].peak_memory_bytes / 2**30:.2f} GiB" in shown


_SLOW_BENCH = """
import sys, time
from infer_advisor.bench.backends import transformers_engine
from infer_advisor.cli import main

real = transformers_engine.TransformersEngine.run_level
def run_level(self, items, concurrency, workload, on_done):
    if concurrency == 2 and len(items) == 2 and not hasattr(self, "warmed"):
        self.warmed = True
    elif concurrency == 2:
        print("second level", flush=True)
        time.sleep(120)
    return real(self, items, concurrency, workload, on_done)
transformers_engine.TransformersEngine.run_level = run_level
sys.exit(main(["bench", "--engine", "transformers", "--model", sys.argv[1], "--concurrency", "1,2",
               "--output-tokens", "3", "--num-prompts", "2", "--out", sys.argv[2], "--no-progress"]))
"""


def test_a_killed_run_leaves_files_marked_incomplete_and_force_replaces_them(tiny_llama, tmp_path, capsys):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "INFER_ADVISOR_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SLOW_BENCH, str(tiny_llama), str(out)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout.readline().strip() == "second level"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    names = sorted(p.name for p in out.iterdir())
    assert names == [MANIFEST, "bench.incomplete.csv", "bench.incomplete.png", "bench.json", "requests.incomplete.csv"]
    kept = json.loads((out / "bench.json").read_text())
    assert kept["complete"] is False and [lv["concurrency"] for lv in kept["levels"]] == [1]
    args = ["--engine", "transformers", "--model", str(tiny_llama), "--concurrency", "1", "--output-tokens", "3",
            "--num-prompts", "1", "--out", str(out)]  # fmt: skip
    assert "exists already" in _one_line(capsys, *args)
    assert main(["bench", *args, "--force", "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "bench.csv", "bench.json", "bench.png", "requests.csv"]


def test_allocator_peak_adds_the_cuda_context(monkeypatch):
    """The arithmetic of the GPU memory figure (the GPU itself is exercised on the device machine, not in CI)."""
    from types import SimpleNamespace

    from infer_advisor.bench.memory import AllocatorPeak

    counters = {"peak": 0, "resets": 0}
    cuda = SimpleNamespace(
        synchronize=lambda: None,
        reset_peak_memory_stats=lambda: counters.update(resets=counters["resets"] + 1, peak=0),
        max_memory_allocated=lambda: counters["peak"],
    )
    with AllocatorPeak(SimpleNamespace(cuda=cuda), context_bytes=500 * 2**20, device_sampler=None) as mem:
        counters["peak"] = 3 * 2**30
    assert counters["resets"] == 1 and mem.peak == 3 * 2**30 + 500 * 2**20 and mem.device_peak is None
