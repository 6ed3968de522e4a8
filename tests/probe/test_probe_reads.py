"""Probe (issue 18, reads): every file a user names is a regular file of bounded size, read in linear time and once.

Each CLI case runs in a subprocess with a timeout, so a read that blocks (a FIFO without a writer) fails the test
instead of hanging it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.probe.contract import TIME_LIMIT_S

PLAN = ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]
SIZED = [*PLAN, "--rate", "2", "--ttft-p90", "5"]


def _cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "INFER_ADVISOR_OFFLINE": "1", "INFER_ADVISOR_NO_NVML": "1",
           "INFER_ADVISOR_CACHE": str(cwd / "cache")}
    return subprocess.run([sys.executable, "-m", "infer_advisor.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIME_LIMIT_S, check=False)


def _one_line_exit_2(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-800:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("how", ["lengths", "rules", "gpu", "from-log", "models-add", "calibration"])
def test_a_fifo_is_refused_not_read(how, fifo, tmp_path):
    if how == "rules":
        folder = tmp_path / "rules"
        folder.mkdir()
        os.mkfifo(folder / "site.yaml")
        args = [*PLAN, "--rules", str(folder)]
    else:
        args = {
            "lengths": [*SIZED, "--lengths-file", str(fifo)],
            "gpu": ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", str(fifo)],
            "from-log": ["calibrate", "--from-log", str(fifo), "--gpu", "H100-80GB", "--out", str(tmp_path / "c.json")],
            "models-add": ["models", "add", str(fifo), "--id", "org/name", "--catalog-dir", str(tmp_path / "cat")],
            "calibration": [*PLAN, "--calibration", str(fifo)],
        }[how]
    line = _one_line_exit_2(_cli(args, tmp_path))
    assert "FIFO" in line or "not a regular file" in line or "not found" in line, line


@pytest.mark.parametrize("how", ["lengths", "from-log"])
def test_a_device_is_refused(how, tmp_path):
    args = {"lengths": [*SIZED, "--lengths-file", "/dev/zero"],
            "from-log": ["calibrate", "--from-log", "/dev/zero", "--gpu", "H100-80GB", "--out", str(tmp_path / "c.json")]}[how]
    assert "device" in _one_line_exit_2(_cli(args, tmp_path))


def test_an_oversized_log_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.log"
    with open(big, "wb") as fh:
        fh.truncate(200 * 2**20)  # sparse: 200 MiB of zeros without writing them
    line = _one_line_exit_2(_cli(["calibrate", "--from-log", str(big), "--gpu", "H100-80GB", "--out", str(tmp_path / "c.json")], tmp_path))
    assert "MiB" in line


@pytest.mark.parametrize("row", [{"input_tokens": True, "output_tokens": 10}, {"input_tokens": "512", "output_tokens": 10},
                                 {"input_tokens": 10**30, "output_tokens": 10}, {"input_tokens": 10, "output_tokens": 10, "arrival_s": "NaN"}])
def test_trace_values_of_the_wrong_type_are_refused(row, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps(row) + "\n")
    _one_line_exit_2(_cli([*SIZED, "--lengths-file", str(trace)], tmp_path))


def test_the_trace_is_parsed_once_per_plan(tmp_path, monkeypatch):
    import infer_advisor.bounded_read as br
    from infer_advisor import advise
    from infer_advisor.simulate import workload

    workload._read_trace_cached.cache_clear()
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps({"input_tokens": 200 + i % 50, "output_tokens": 100}) + "\n" for i in range(2000)))
    opened = []
    real = br.bounded_lines
    monkeypatch.setattr(br, "bounded_lines", lambda *a, **k: (opened.append(a[0]), real(*a, **k))[1])
    monkeypatch.setenv("INFER_ADVISOR_OFFLINE", "1")
    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", rate=2, ttft_p90=5, lengths_file=str(trace))
    assert len(opened) == 1, f"trace read {len(opened)} times"


def test_log_parsing_is_linear_on_adversarial_lines(monkeypatch):
    """For each pattern, 1 MB of its leading literal repeated (with and without a tail that almost matches), as one
    line and as many lines, parses in time proportional to a benign 1 MB log (the old parser: 169 s for 1.1 MB of
    "llama_kv_cache"). Compared as a ratio so a loaded machine does not fail it; and under 1 s each when idle-ish."""
    import re

    from infer_advisor.engines import log_search
    from infer_advisor.engines import startup_log as sl

    seen: dict[str, set[str]] = {}  # pattern -> engines whose parser uses it
    real_compile = re.compile
    logs = sorted((Path(__file__).parents[1] / "estimate" / "logs").glob("*.log"))
    for log in logs:
        engine = sl.detect_engine(log.read_text(encoding="utf-8"))
        monkeypatch.setattr(sl.re, "compile", lambda p, f=0, e=engine: (
            seen.setdefault(p, set()).add(e) if isinstance(p, str) else None, real_compile(p, f))[1])
        log_search._compiled.cache_clear()
        sl.parse_startup_log(log.read_text(encoding="utf-8"))
    monkeypatch.setattr(sl.re, "compile", real_compile)
    log_search._compiled.cache_clear()
    assert len(seen) > 40, len(seen)
    benign = (logs[0].read_text(encoding="utf-8") * (2**20 // logs[0].stat().st_size + 1))[: 2**20]
    start = time.perf_counter()
    sl.parse_startup_log(benign)
    base = max(time.perf_counter() - start, 0.01)
    lead = real_compile(r"^(?:[^\\\[\](){}.*+?^$|]|\\[.()\[\]{}#=' /:-])+")
    worst = (0.0, "")
    seen["llama_kv_cache"] = {"llama.cpp"}
    for pattern, engines in sorted(seen.items()):
        m = lead.match(pattern.removeprefix("\\b"))
        unit = re.sub(r"\\(.)", r"\1", m.group(0)) if m else pattern[:12]
        for tail in ("", " = 1 "):
            for sep in ("", "\n"):
                text = ((unit + tail + sep) * (2**20 // len(unit + tail + sep) + 1))[: 2**20]
                for engine in sorted(engines):
                    start = time.perf_counter()
                    try:
                        sl.parse_startup_log(text, engine=engine)
                    except ValueError:
                        pass
                    took = time.perf_counter() - start
                    worst = max(worst, (took, f"{pattern!r} tail {tail!r} sep {sep!r} {engine}"))
    assert worst[0] < max(1.0, 20 * base), f"{worst[0]:.2f} s (benign 1 MB log: {base:.3f} s) for {worst[1]}"


def test_the_parsed_yaml_cache_is_bounded(tmp_path, monkeypatch):
    """The cache kept every file parsed (a 40 MB bad --gpu file added 41.9 MB) and never evicted."""
    from infer_advisor import _data

    monkeypatch.setenv("INFER_ADVISOR_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_data, "CACHE_MAX_FILES", 3)
    for i in range(8):
        path = tmp_path / f"f{i}.yaml"
        path.write_text(f"a: {i}\nb: [1, 2]\n")
        assert _data.read_structured(path) == {"a": i, "b": [1, 2]}
    assert len(list((tmp_path / "cache" / "parsed-yaml").glob("*.json"))) <= 3
    big = tmp_path / "big.yaml"
    big.write_text("x: " + "y" * (_data.CACHE_MAX_BYTES + 10) + "\n")
    before = set((tmp_path / "cache" / "parsed-yaml").glob("*.json"))
    _data.read_structured(big)
    assert set((tmp_path / "cache" / "parsed-yaml").glob("*.json")) <= before | set()  # not cached
    dup = tmp_path / "dup.yaml"
    dup.write_text("a: 1\na: 2\n")
    with pytest.raises(ValueError, match="duplicate key"):
        _data.read_structured(dup)
