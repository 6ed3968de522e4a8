"""Measure the plan path's speed targets (issue: core advisor).

    python benchmarks/startup.py [--runs 21] [--json results/startup.json]

1. `infer-advisor plan --model meta-llama/Llama-2-7b-hf --gpu A100-80GB --json` cold start: a new
   process each run (wall clock, median; target <= 0.3 s on the 2-core dev machine).
2. `advise()` on a catalog model, warm (same process, after one call; median; target <= 10 ms).

Results are printed and, with --json, written for docs/ (not asserted in CI: timings depend on the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time


def cold_start(runs: int) -> list[float]:
    exe = shutil.which("infer-advisor") or sys.executable
    argv = [exe] if exe != sys.executable else [exe, "-m", "infer_advisor.cli"]
    argv += ["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--json"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    subprocess.run(argv, check=True, capture_output=True, env=env)  # warm the OS file cache and the YAML cache
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t)
    return times


def warm_advise(runs: int, model: str, gpu: str) -> list[float]:
    from infer_advisor import advise

    advise(model=model, gpu=gpu)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        advise(model=model, gpu=gpu)
        times.append(time.perf_counter() - t)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    cold = cold_start(args.runs)
    warm = {f"{m} on {g}": warm_advise(args.runs * 5, m, g) for m, g in [
        ("meta-llama/Llama-2-7b-hf", "A100-80GB"),
        ("meta-llama/Llama-3.1-70B", "H100-80GB:8"),
        ("mistralai/Mixtral-8x7B-v0.1", "L40S:4"),
    ]}
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "cold_start_s": {"median": statistics.median(cold), "min": min(cold), "max": max(cold), "runs": len(cold), "target": 0.3},
        "advise_warm_ms": {k: {"median": statistics.median(v) * 1e3, "min": min(v) * 1e3, "runs": len(v), "target": 10.0} for k, v in warm.items()},
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
