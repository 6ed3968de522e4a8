"""What `plan` predicts for a llama.cpp server on one H200 at each open-loop level, written before the levels run.

    python benchmarks/gpu/predict_levels.py --model meta-llama/Llama-3.1-8B --input-tokens 1137 --output-tokens 200 \
        --fractions 0.3,0.6,0.85,1.1,1.4 --out predictions.json

Exactly the path a user runs: ``infer-advisor plan --gpu H200 --engine llama.cpp --quantization gguf-f16 --rate R
--format json`` in a subprocess, nothing calibrated on the run it predicts. First the plan at 1 request/s gives the
highest rate one replica sustains (``max_rate_per_replica``, M); the levels are the given fractions of M; then the plan
at each level gives the chosen option's latencies at that load (one replica while R <= M; past it the plan asks for
more replicas, and what is predicted for the single server run is saturation). The source tree's hash is recorded so
the predictions can be tied to the code that made them.

The levels are rounded to three significant digits, the rates the bench is then given. With ``--level-seconds``
(the bench's ``--max-duration``) the arrivals each level will deliver are known before it runs: the bench draws its
Poisson schedule from its seed and the rate (``bench.workload.Workload.open_loop``), so a 120-s level asked at 1.68
req/s delivers 171 requests, 1.425 req/s. Each level is then also predicted by the same plan at that delivered rate
(``at_delivered``), the figure to grade TTFT against near the knee, where the median moves ~4x for 6% of rate; and
one server as the plan simulates it (its step model and slots) is fed that exact schedule (``on_schedule``: what
``replay_arrivals.py`` did after calls B and C, here before the run).
``--pick-seed TOL`` chooses the bench's seed before anything runs: the lowest from ``--seed`` up whose schedule
delivers every level within TOL of its asked rate (the input is designed, no outcome is seen), so each level probes
the load it names; the script passes it to the bench as ``--seed``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
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


def _schedule(rate: float, seconds: float, num_prompts: int | None, seed: int) -> list[float]:
    """The second each request of one level is sent: the bench's own seeded Poisson schedule."""
    from infer_advisor.bench.workload import Workload

    w = Workload(profile="throughput", concurrency=[1], warmup=0, ignore_eos=True, prompts=[], input_tokens=1,
                 output_tokens=1, seed=seed, num_prompts=num_prompts, request_rate=[rate], max_duration=seconds)
    return w.open_loop(rate)[1]


def _delivered(rate: float, seconds: float, num_prompts: int | None, seed: int) -> tuple[float, int]:
    """Arrivals/s and requests of one level's schedule (what bench reports as its achieved rate)."""
    offsets = _schedule(rate, seconds, num_prompts, seed)
    return ((len(offsets) - 1) / offsets[-1] if len(offsets) > 1 else rate), len(offsets)


def _on_schedule(plan_args: tuple, offsets: list[float], input_tokens: int, output_tokens: int) -> dict:
    """One server (the plan's step model and scheduler limits, ``replay_arrivals._capture_plan``) fed this exact
    schedule from empty: the level's own arrivals, so no Poisson sampling stands between prediction and run."""
    from infer_advisor.simulate import Workload, simulate

    step, cfg, _ = plan_args
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "schedule.jsonl"
        trace.write_text("".join(json.dumps({"input_tokens": input_tokens, "output_tokens": output_tokens,
                                             "arrival_s": t}) + "\n" for t in offsets))
        res = simulate(step, Workload(trace=trace, arrival="trace"), cfg, requests=len(offsets), warmup_fraction=0.0)
    return {"ttft_p50_s": res.ttft_s.p50, "ttft_mean_s": res.ttft_s.mean, "ttft_p90_s": res.ttft_s.p90,
            "itl_p50_s": res.itl_s.p50, "requests_per_s": res.requests_per_s, "saturated": res.saturated}


def _pick_seed(rates: list[float], seconds: float, num_prompts: int, first: int, tol: float, tries: int = 50_000) -> int | None:
    """The lowest seed from ``first`` whose bench schedule delivers every rate within ``tol`` (None: none found)."""
    for seed in range(first, first + tries):
        if all(abs(_delivered(r, seconds, num_prompts, seed)[0] / r - 1) <= tol for r in rates):
            return seed
    return None


def _level(args: argparse.Namespace, rate: float, server: tuple | None) -> dict:
    """The plan at the asked rate; with --level-seconds also at the delivered rate and on the exact schedule."""
    got = _plan(args.model, rate, args.input_tokens, args.output_tokens)
    level = {"rate": rate, **_chosen(got["plan"])}
    if server is not None:
        offsets = _schedule(rate, args.level_seconds, args.num_prompts, args.seed)
        arrived = float(f"{(len(offsets) - 1) / offsets[-1]:.4g}")
        at = _plan(args.model, arrived, args.input_tokens, args.output_tokens)
        level["at_delivered"] = {"rate": arrived, "requests": len(offsets), **_chosen(at["plan"])}
        level["on_schedule"] = _on_schedule(server, offsets, args.input_tokens, args.output_tokens)
    return level


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
    ap.add_argument("--level-seconds", type=float, help="bench --max-duration: also predict at each level's delivered rate")
    ap.add_argument("--num-prompts", type=int, default=1_000_000, help="bench --num-prompts (caps a level's requests)")
    ap.add_argument("--seed", type=int, default=0, help="bench --seed (its default 0)")
    ap.add_argument("--pick-seed", type=float, metavar="TOL", help="with --level-seconds: pick the bench seed (above)")
    args = ap.parse_args()
    base = _plan(args.model, 1.0, args.input_tokens, args.output_tokens)
    top = _chosen(base["plan"])["max_rate_per_replica"]
    if not top:
        raise SystemExit("the plan gives no sustainable rate")
    fractions = [float(f) for f in args.fractions.split(",")]
    rates = [float(f"{top * f:.3g}") for f in fractions]  # exactly the rates the bench is given
    if args.level_seconds and args.pick_seed:
        picked = _pick_seed(rates, args.level_seconds, args.num_prompts, args.seed, args.pick_seed)
        print(f"bench seed {picked}: the lowest from {args.seed} delivering every level within {args.pick_seed:.0%}"
              if picked is not None else f"no seed delivers every level within {args.pick_seed:.0%}: seed {args.seed}")
        args.seed = args.seed if picked is None else picked
    server = None
    if args.level_seconds:  # the single server's step model and slots, as the plan simulates them below its maximum
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from replay_arrivals import _capture_plan

        server = _capture_plan(args.model, rates[0], args.input_tokens, args.output_tokens)
    levels = [_level(args, r, server) for r in rates]
    out = {"made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "src_sha256_16": _tree_hash(),
           "model": args.model, "input_tokens": args.input_tokens, "output_tokens": args.output_tokens,
           "predicted_max_rate_per_replica": top, "fractions": fractions, "rates": rates, "levels": levels,
           "performance": base["plan"].get("performance"), "engine": base["plan"].get("engine"),
           "command_at_rate_1": base["command"], "level_seconds": args.level_seconds, "bench_seed": args.seed}
    args.out.write_text(json.dumps(out, indent=1))
    print(f"predicted max rate per replica {top:.3f} req/s; levels {rates}")
    for lv in levels:
        print(f"  {lv['rate']:.3f} req/s: replicas {lv['replicas']}, TTFT p50 {lv['ttft_p50_s']}, ITL p50 {lv['itl_p50_s']}")
        if "at_delivered" in lv:
            d = lv["at_delivered"]
            print(f"    delivers {d['rate']:.4g} req/s ({d['requests']} requests): replicas {d['replicas']}, "
                  f"TTFT p50 {d['ttft_p50_s']}, ITL p50 {d['itl_p50_s']}; one server on this schedule: TTFT p50 "
                  f"{lv['on_schedule']['ttft_p50_s']:.4f} mean {lv['on_schedule']['ttft_mean_s']:.4f}")


if __name__ == "__main__":
    main()
