"""The plan's own simulation of one open-loop level, fed the arrival times the server really saw (a diagnostic).

    python benchmarks/gpu/replay_arrivals.py \
        benchmarks/results/h200/llamacpp-openloop-c-2026-12-03/requests.csv.gz --rate 1.5

The plan (``advise(..., rate=R, headroom=False)``: the path ``plan --rate R --no-headroom`` runs) simulates its
operating point with its own Poisson sample (seed 0; 400 requests until 2026-12-04, now until its TTFT percentiles
settle). A bench level is another Poisson sample, and near the knee of a slot-bound server TTFT p50 moves steeply
with the rate (3.4x between 1.42 and 1.50 req/s for Llama-3.1-8B on the H200, docs/capacity.md "Why TTFT p50 at
the knee"). This script takes the step model and the scheduler limits of the operating point the plan simulated and
runs them on the measured requests' send times and lengths (a trace), so both sides see the same arrivals and only
the step model and the scheduler can differ. It also runs the plan's workload with many seeds and long runs, to show
the simulator's own sampling spread.

Nothing is fitted: the step model is the plan's, unchanged. Run it only after the predictions are committed.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path


def _capture_plan(model: str, rate: float, input_tokens: int, output_tokens: int):
    """(step model, scheduler config, workload) of the operating point the plan simulates at ``rate``."""
    import infer_advisor.capacity.sizing as sizing
    from infer_advisor import advise

    seen: dict = {}
    original = sizing.operating_point

    def recording(step, workload, cfg, r, **kw):
        seen["args"] = (step, cfg, workload)
        return original(step, workload, cfg, r, **kw)

    sizing.operating_point = recording
    try:
        advise(model, gpu="H200", engine="llama.cpp", quantization="gguf-f16", input_tokens=input_tokens,
               output_tokens=output_tokens, rate=rate, headroom=False)
    finally:
        sizing.operating_point = original
    if "args" not in seen:
        raise SystemExit("the plan simulated no operating point (no replica meets the targets?)")
    return seen["args"]


def _levels(path: Path) -> dict[float, list[dict]]:
    opener = gzip.open if path.suffix == ".gz" else open
    by: dict[float, list[dict]] = defaultdict(list)
    with opener(path, "rt") as f:
        for row in csv.DictReader(f):
            by[float(row["request_rate"])].append(row)
    return {k: sorted(v, key=lambda r: float(r["sent_offset_s"])) for k, v in by.items()}


def _q(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[int(p * (len(s) - 1))]


def _ms(values: list[float]) -> str:
    return f"p50 {_q(values, .5) * 1e3:.0f} mean {statistics.fmean(values) * 1e3:.0f} p90 {_q(values, .9) * 1e3:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("requests_csv", type=Path, help="bench's per-request CSV (requests.csv or .csv.gz)")
    ap.add_argument("--rate", type=float, required=True, help="the plan's rate whose operating point is replayed")
    ap.add_argument("--model", default="meta-llama/Llama-3.1-8B")
    ap.add_argument("--input-tokens", type=int, default=1137)
    ap.add_argument("--output-tokens", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=30, help="seeds for the plan's own workload (400 requests each)")
    args = ap.parse_args()
    from infer_advisor.simulate import Workload, simulate

    step, cfg, workload = _capture_plan(args.model, args.rate, args.input_tokens, args.output_tokens)
    out: dict = {"plan_rate": args.rate, "levels": []}
    with tempfile.TemporaryDirectory() as tmp:
        for asked, rows in _levels(args.requests_csv).items():
            sent = [float(r["sent_offset_s"]) for r in rows]
            trace = Path(tmp) / f"trace-{asked:g}.jsonl"
            trace.write_text("".join(json.dumps({"input_tokens": int(r["input_tokens"]), "output_tokens": int(r["output_tokens"]),
                                                 "arrival_s": s}) + "\n" for r, s in zip(rows, sent)))
            res = simulate(step, Workload(trace=trace, arrival="trace"), cfg, requests=len(rows), warmup_fraction=0.0)
            measured = [float(r["ttft_s"]) for r in rows]
            achieved = len(rows) / max(sent[-1], 1e-9)
            print(f"asked {asked:g} req/s, {len(rows)} requests, arrivals {achieved:.3f}/s: TTFT measured {_ms(measured)}; "
                  f"simulated on these arrivals p50 {res.ttft_s.p50 * 1e3:.0f} mean {res.ttft_s.mean * 1e3:.0f} "
                  f"p90 {res.ttft_s.p90 * 1e3:.0f} ms")
            out["levels"].append({"asked": asked, "requests": len(rows), "arrivals_per_s": achieved,
                                  "measured_ttft_p50_s": _q(measured, .5), "replayed_ttft_p50_s": res.ttft_s.p50,
                                  "measured_ttft_mean_s": statistics.fmean(measured), "replayed_ttft_mean_s": res.ttft_s.mean})
    at = workload.model_copy(update={"rate": args.rate, "arrival": "poisson"})
    p50 = [simulate(step, at, cfg, requests=400, seed=s).ttft_s.p50 for s in range(args.seeds)]
    long = [simulate(step, at, cfg, requests=20_000, seed=s).ttft_s.p50 for s in range(2)]
    print(f"plan's workload at {args.rate:g} req/s, 400 requests, seeds 0-{args.seeds - 1}: TTFT p50 "
          f"q10 {_q(p50, .1) * 1e3:.0f} q25 {_q(p50, .25) * 1e3:.0f} median {_q(p50, .5) * 1e3:.0f} "
          f"q75 {_q(p50, .75) * 1e3:.0f} q90 {_q(p50, .9) * 1e3:.0f} ms (seed 0, the plan's: {p50[0] * 1e3:.0f}); "
          f"20,000 requests: {', '.join(f'{v * 1e3:.0f}' for v in long)} ms")
    out.update(seed_p50_s=p50, long_run_p50_s=long)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
