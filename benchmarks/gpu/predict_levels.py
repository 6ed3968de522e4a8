"""What `plan` predicts for a llama.cpp server on one H200 at each open-loop level, written before the levels run.

    python benchmarks/gpu/predict_levels.py --model meta-llama/Llama-3.1-8B --input-tokens 1137 --output-tokens 200 \
        --fractions 0.3,0.6,0.85,1.1,1.4 --out predictions.json

Exactly the path a user runs: ``infer-advisor plan --gpu H200 --engine llama.cpp --quantization gguf-f16 --rate R
--format json`` in a subprocess, nothing calibrated on the run it predicts. First the plan at 1 request/s gives the
highest rate one replica sustains (``max_rate_per_replica``, M); the levels are the given fractions of M; then the plan
at each level gives the chosen option's latencies at that load (one replica while R <= M; past it the plan asks for
more replicas, and what is predicted for the single server run is saturation). The source tree's hash is recorded so
the predictions can be tied to the code that made them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _plan(model: str, rate: float, input_tokens: int, output_tokens: int) -> dict:
    cmd = [sys.executable, "-m", "infer_advisor.cli", "plan", "--model", model, "--gpu", "H200", "--engine", "llama.cpp",
           "--quantization", "gguf-f16", "--input-tokens", str(input_tokens), "--output-tokens", str(output_tokens),
           "--rate", f"{rate:.6g}", "--no-headroom", "--format", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise SystemExit(f"plan failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {"command": cmd[3:], "plan": json.loads(proc.stdout)}


def _tree_hash() -> str:
    h = hashlib.sha256()
    for p in sorted((ROOT / "src").rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(ROOT)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def _chosen(plan: dict) -> dict:
    chosen = (plan.get("capacity") or {}).get("chosen") or {}
    keep = ("replicas", "max_rate_per_replica", "max_num_seqs", "max_num_batched_tokens", "ttft_p50_s", "ttft_p90_s",
            "itl_p50_s", "itl_p99_s", "e2e_p90_s", "output_tokens_per_s")
    return {k: chosen.get(k) for k in keep}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--input-tokens", type=int, required=True)
    ap.add_argument("--output-tokens", type=int, required=True)
    ap.add_argument("--fractions", default="0.3,0.6,0.85,1.1,1.4")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    base = _plan(args.model, 1.0, args.input_tokens, args.output_tokens)
    top = _chosen(base["plan"])["max_rate_per_replica"]
    if not top:
        raise SystemExit("the plan gives no sustainable rate")
    fractions = [float(f) for f in args.fractions.split(",")]
    rates = [round(top * f, 3) for f in fractions]
    levels = []
    for r in rates:
        got = _plan(args.model, r, args.input_tokens, args.output_tokens)
        levels.append({"rate": r, **_chosen(got["plan"])})
    out = {"made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "src_sha256_16": _tree_hash(),
           "model": args.model, "input_tokens": args.input_tokens, "output_tokens": args.output_tokens,
           "predicted_max_rate_per_replica": top, "fractions": fractions, "rates": rates, "levels": levels,
           "performance": base["plan"].get("performance"), "engine": base["plan"].get("engine"),
           "command_at_rate_1": base["command"]}
    args.out.write_text(json.dumps(out, indent=1))
    print(f"predicted max rate per replica {top:.3f} req/s; levels {rates}")
    for lv in levels:
        print(f"  {lv['rate']:.3f} req/s: replicas {lv['replicas']}, TTFT p50 {lv['ttft_p50_s']}, ITL p50 {lv['itl_p50_s']}")


if __name__ == "__main__":
    main()
