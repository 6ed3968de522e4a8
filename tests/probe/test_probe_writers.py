"""Probe: every writer (emit, quantize, bench, calibrate) under concurrent runs on the same --out, through its public
entry point. Two runs released together: exactly one wins, the other gets the clean "exists already" (exit 2 in the
CLI), never a raw OSError, and the winner's output is whole. (Kill tests: tests/test_output.py, the quantize and bench
reliability tests.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from infer_advisor._output import MANIFEST, read_manifest
from infer_advisor.errors import BenchmarkError, OutputExistsError

ROOT = Path(__file__).resolve().parents[2]
WARM = ROOT / "benchmarks" / "results" / "h200" / "measure_transformers_warm.json"


def _race(trials: int, writer) -> list[list[str]]:
    outcomes = []
    for trial in range(trials):
        barrier = threading.Barrier(2)
        got = ["", ""]

        def run(i: int) -> None:
            barrier.wait()
            try:
                got[i] = writer(trial, i)
            except OutputExistsError:
                got[i] = "exists"
            except BaseException as err:  # noqa: BLE001 - reported below
                got[i] = f"{type(err).__name__}: {err}"

        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        outcomes.append(sorted(got))
    return outcomes


_EMIT_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from infer_advisor.cli import main
    from infer_advisor.plan import advise
    advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")  # everything imported and warm
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.001)
    sys.exit(main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--emit", sys.argv[3],
                   "--out", sys.argv[1]]))
    """
)


def test_emit_two_processes(tmp_path):
    """Real processes of `infer-advisor plan --emit`, released together by a file: one wins, one exits 2."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "INFER_ADVISOR_NO_NVML": "1"}
    for trial in range(12):
        out, go = tmp_path / f"out{trial}", tmp_path / f"go{trial}"
        procs = [
            subprocess.Popen([sys.executable, "-c", _EMIT_CHILD, str(out), str(go), kind], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for kind in ("script", "k8s")
        ]  # fmt: skip
        time.sleep(1.5)  # both warm and waiting on the go file
        go.touch()
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        loser_err = next(err for code, err in results if code == 2)
        assert loser_err.count("\n") == 1 and "exists already" in loser_err, loser_err
        winner = "script" if results[0][0] == 0 else "k8s"
        assert read_manifest(out)["files"] == (["README.md", "serve.sh"] if winner == "script" else ["README.md", "k8s.yaml"])


def test_bench_claims_race(tmp_path):
    """The output is claimed before the engine loads: the loser is refused at once; the winner goes on (and here
    finds no server, which proves it had the folder)."""
    from infer_advisor.bench import bench

    def writer(trial: int, i: int) -> str:
        try:
            bench("openai", url="http://127.0.0.1:9", out=tmp_path / f"b{trial}", progress=False)
        except BenchmarkError:
            return "ran"
        return "unexpected"

    outcomes = _race(40, writer)
    assert all(o == ["exists", "ran"] for o in outcomes), outcomes


_CALIBRATE_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from infer_advisor.cli import main
    from infer_advisor.calibrate import inputs, speed  # imported and warm before the race
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.001)
    sys.exit(main(["calibrate", "--engine", "transformers", "--from", sys.argv[3], "--gpu", "H200",
                   "--model", "meta-llama/Llama-2-7b-hf,meta-llama/Llama-2-13b-hf", "--out", sys.argv[1]]))
    """
)


def test_calibrate_two_processes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "INFER_ADVISOR_NO_NVML": "1"}
    for trial in range(10):
        out, go = tmp_path / f"cal{trial}.json", tmp_path / f"go{trial}"
        procs = [
            subprocess.Popen([sys.executable, "-c", _CALIBRATE_CHILD, str(out), str(go), str(WARM)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]  # fmt: skip
        time.sleep(1.5)
        go.touch()
        results = sorted((p.wait(timeout=120), p.stderr.read()) for p in procs)
        assert [code for code, _ in results] == [0, 2], results
        assert results[1][1].count("\n") == 1 and "exists already" in results[1][1], results
        assert json.loads(out.read_text())["engine"] == "transformers"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quantize_race(tmp_path):
    """Two real CTranslate2 conversions of the tiny Llama into the same --out. transformers' weight tying survives
    the race: its from_pretrained swaps PreTrainedModel.tie_weights for a no-op while loading, and two threads loading
    at once left the no-op for the rest of the process (every later tied-embedding model untied: gemma-2-27b counted
    28.4 B in test_params_vs_transformers when run after this file); quantize now runs one conversion at a time."""
    from transformers.modeling_utils import PreTrainedModel

    from infer_advisor.quantize import quantize
    from tests.support.tiny_llama import build_tiny_llama

    tie_weights = PreTrainedModel.tie_weights

    model = build_tiny_llama(tmp_path / "tiny")

    def writer(trial: int, i: int) -> str:
        quantize(model, "ct2-int8", tmp_path / f"q{trial}", progress=False)
        return "ok"

    outcomes = _race(4, writer)
    assert all(o == ["exists", "ok"] for o in outcomes), outcomes
    assert PreTrainedModel.tie_weights is tie_weights, "a conversion left transformers' tie_weights patched"
    for trial in range(4):
        out = tmp_path / f"q{trial}"
        assert (out / "model.bin").is_file() and MANIFEST in os.listdir(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["tiny", *(f"q{t}" for t in range(4))])
