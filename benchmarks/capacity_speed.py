"""How long a sizing search takes, cold (a fresh interpreter: imports, data files, the search) and warm.

    PYTHONPATH=. python benchmarks/capacity_speed.py --out benchmarks/results/capacity_speed.json

Each case runs `infer-advisor plan ... --rate ... --json` in a new process (cold, wall clock, best and median of
``--repeat``) and ``size()`` again in this process (warm: the search alone). The issue's target: a 70B model over
four GPU types and every layout in under 3 s cold.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = [
    {
        "name": "70B, 4 GPU types, every layout",
        "args": ["--model", "meta-llama/Llama-3.1-70B", "--gpu", "H100-80GB,H200,A100-80GB,L40S", "--rate", "20",
                 "--input-tokens", "2000", "--output-tokens", "300", "--ttft-p90", "1", "--itl-p99", "0.06"],
    },
    {
        "name": "8B, 4 GPU types, every layout",
        "args": ["--model", "meta-llama/Llama-3.1-8B", "--gpu", "H100-80GB,A100-80GB,L40S,L4", "--rate", "50",
                 "--input-tokens", "1000", "--output-tokens", "200", "--ttft-p90", "0.5", "--itl-p99", "0.05"],
    },
    {
        "name": "Mixtral-8x7B (MoE: expert parallel tried), 2 GPU types",
        "args": ["--model", "mistralai/Mixtral-8x7B-v0.1", "--gpu", "H100-80GB,A100-80GB", "--rate", "10",
                 "--input-tokens", "1000", "--output-tokens", "200", "--ttft-p90", "1", "--itl-p99", "0.08"],
    },
    {
        "name": "70B, --gpu any (every priced GPU type)",
        "args": ["--model", "meta-llama/Llama-3.1-70B", "--gpu", "any", "--rate", "20", "--input-tokens", "2000",
                 "--output-tokens", "300", "--ttft-p90", "1", "--itl-p99", "0.06"],
    },
]


def _kwargs(args: list[str]) -> dict:
    out, i = {}, 0
    while i < len(args):
        key = args[i].lstrip("-").replace("-", "_")
        out[key] = args[i + 1]
        i += 2
    model = out.pop("model")
    return {"model": model, **{k: (float(v) if k in ("rate", "ttft_p90", "itl_p99") else int(v) if k.endswith("tokens") else v)
                               for k, v in out.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    from infer_advisor import size

    rows = []
    for case in CASES:
        cold = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "infer_advisor.cli", "plan", *case["args"], "--json"],
                               capture_output=True, text=True)
            cold.append(time.perf_counter() - t0)
            if r.returncode not in (0, 1):
                raise SystemExit(f"{case['name']}: exit {r.returncode}: {r.stderr.strip()}")
        cap = json.loads(r.stdout)["capacity"]
        t0 = time.perf_counter()
        size(**_kwargs(case["args"]))
        warm = time.perf_counter() - t0
        chosen = cap["chosen"]
        rows.append({
            "case": case["name"], "command": "infer-advisor plan " + " ".join(case["args"]),
            "cold_s_best": round(min(cold), 2), "cold_s_median": round(statistics.median(cold), 2), "warm_search_s": round(warm, 2),
            "candidates_considered": cap["candidates_considered"], "candidates_simulated": cap["candidates_simulated"],
            "chosen": (f"{chosen['replicas']} x {chosen['gpus_per_replica']} {chosen['gpu']} TP{chosen['tensor_parallel_size']} "
                       f"PP{chosen['pipeline_parallel_size']} {chosen['quantization']} ${chosen['cost_per_hour']:,.2f}/h")
            if chosen else "none meets the targets",
        })
        print(f"{case['name']}: cold {min(cold):.2f} s (median {statistics.median(cold):.2f}), warm search {warm:.2f} s, "
              f"{cap['candidates_simulated']}/{cap['candidates_considered']} simulated; {rows[-1]['chosen']}")
    result = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "python": platform.python_version(),
              "cpu_count": __import__("os").cpu_count(), "cases": rows}
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
