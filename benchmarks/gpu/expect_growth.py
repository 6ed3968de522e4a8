"""What the model itself expects of bench's growth test at each open-loop level, before the run.

    PYTHONPATH=src:. python benchmarks/gpu/expect_growth.py predictions.json [--seeds 40]

For each level of ``predict_levels.py``'s output: one server as the plan simulates it (its step model and slots,
``replay_arrivals._capture_plan``) fed the bench's seeded Poisson schedule of that level, first the run's own seed,
then seeds 0..N-1, each flagged as grade_openloop.py flags a measured level: the queue grew (the simulator's
``saturated``, the same last-quarter-against-first test bench applies) or it served under 0.93 of its arrivals. A
model that were exact would still see "grew" at this rate in that share of 75-s windows: the highest level that
holds is itself a draw, and this says how wide.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import predict_levels as pl  # noqa: E402
from grade_openloop import KEPT_UP  # noqa: E402
from replay_arrivals import _capture_plan  # noqa: E402


def grows(server: tuple, rate: float, seconds: float, seed: int, n_in: int, n_out: int) -> bool:
    offsets = pl._schedule(rate, seconds, 1_000_000, seed)
    res = pl._on_schedule(server, offsets, n_in, n_out)
    arrived = (len(offsets) - 1) / offsets[-1] if len(offsets) > 1 else rate
    return bool(res["saturated"]) or res["requests_per_s"] < KEPT_UP * arrived


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("predictions", type=Path)
    ap.add_argument("--seeds", type=int, default=40)
    args = ap.parse_args()
    pred = json.loads(args.predictions.read_text())
    n_in, n_out, secs = pred["input_tokens"], pred["output_tokens"], pred["level_seconds"]
    server = _capture_plan(pred["model"], pred["rates"][0], n_in, n_out)
    out = []
    for rate, frac in zip(pred["rates"], pred["fractions"]):
        own = grows(server, rate, secs, pred["bench_seed"], n_in, n_out)
        count = sum(grows(server, rate, secs, s, n_in, n_out) for s in range(args.seeds))
        out.append({"fraction": frac, "rate": rate, "grows_on_run_seed": own, "grows_in_seeds": count, "seeds": args.seeds})
        print(f"{frac:>5} of M ({rate} req/s): run's seed {pred['bench_seed']}: {'grows' if own else 'holds'}; "
              f"grows in {count} of {args.seeds} seeds")
    at_m = sum(grows(server, pred["predicted_max_rate_per_replica"], secs, s, n_in, n_out) for s in range(args.seeds))
    print(f"at M itself ({pred['predicted_max_rate_per_replica']:.3f}): grows in {at_m} of {args.seeds} seeds")
    print(json.dumps({"levels": out, "at_M_grows_in_seeds": at_m}))


if __name__ == "__main__":
    main()
