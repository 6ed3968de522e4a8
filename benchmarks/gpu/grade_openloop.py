"""Grade an open-loop run of the llama.cpp H200 server against the predictions written before it (issue 21 targets).

    python benchmarks/gpu/grade_openloop.py benchmarks/results/h200/llamacpp-openloop-b-2026-12-03/open.json.gz \\
        benchmarks/results/h200/llamacpp-openloop-b-2026-12-03/predictions.json [--server-eval-ms 5.6]

Nothing is predicted here: the predictions are the ones ``predict_levels.py`` wrote on the device before the first
request. Per level: arrivals achieved, served requests/s, whether the queue grew (bench's own test), TTFT and ITL
p50 measured and predicted. Then the four targets: highest stable rate within 20% (the predicted
``max_rate_per_replica`` against the highest level whose queue did not grow and the throughput served when
overloaded), TTFT p50 and ITL p50 below saturation within 30%, batch-1 decode within 15% (``tpot_alone_s`` against
the server's own eval time per token of one request, given with --server-eval-ms). Where the predictions hold
``at_delivered`` (the plan at the arrival rate the bench's seeded schedule delivers, also written before the run), the
TTFT and ITL p50 are graded against those too (``*_at_delivered``); the run's arrivals are checked against them; and
where they hold ``on_schedule`` (one server as the plan simulates it, fed the level's exact seeded schedule), TTFT
p50 and mean against it, every level (``*_on_schedule``), whether each level grew on both sides, and the requests
served per second at the levels that grew (the capacity, which a short window measures well).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path


def _err(pred: float | None, meas: float | None) -> float | None:
    return None if not pred or not meas else pred / meas - 1


KEPT_UP = 0.93  # served / arrivals below this: the level fell behind (a stable 60-s level serves ~0.96-0.98 of
# its arrivals over its span, which counts the last requests' drain)


def _grew(level: dict) -> bool:
    """bench's own flag (TTFT of the last quarter against the first), or served under KEPT_UP of the arrivals: a level
    overloaded from its first requests carries its backlog throughout, and the quarters' TTFT ratio misses it (call B)."""
    arrived = level.get("achieved_rate_per_s") or 0
    return bool(level["saturated"]) or (arrived > 0 and level["requests_per_s"] < KEPT_UP * arrived)


def _read(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())


def grade(open_json: Path, predictions: Path, server_eval_ms: float | None) -> tuple[list[dict], dict]:
    run, pred = _read(open_json), _read(predictions)
    top = pred["predicted_max_rate_per_replica"]
    rows = []
    for lv, p in zip(run["levels"], pred["levels"]):
        one = p["replicas"] == 1  # past the predicted rate the plan adds replicas: nothing to compare for one server
        rows.append({"asked": lv["request_rate"], "arrivals": lv["achieved_rate_per_s"], "served": lv["requests_per_s"],
                     "grew": _grew(lv), "requests": lv["num_requests"],
                     "ttft_p50": lv["ttft_s"]["p50"], "ttft_pred": p["ttft_p50_s"] if one else None,
                     "itl_p50": lv["itl_s"]["p50"], "itl_pred": p["itl_p50_s"] if one else None})
        d = p.get("at_delivered")
        if d:  # the plan at the rate the seeded schedule delivers: one replica there, or nothing to compare
            one_d = d["replicas"] == 1
            rows[-1].update(delivered_pred=d["rate"], ttft_pred_d=d["ttft_p50_s"] if one_d else None,
                            itl_pred_d=d["itl_p50_s"] if one_d else None)
        if p.get("on_schedule"):  # one server fed the level's exact schedule (every level, past the maximum too)
            rows[-1].update(ttft_sched=p["on_schedule"]["ttft_p50_s"], ttft_mean=lv["ttft_s"]["mean"],
                            ttft_mean_sched=p["on_schedule"]["ttft_mean_s"], grew_sched=bool(p["on_schedule"]["saturated"]),
                            served_sched=p["on_schedule"]["requests_per_s"])
    stable = [r["arrivals"] for r in rows if not r["grew"]]
    grew = [r for r in rows if r["grew"]]
    below = [r for r in rows if not r["grew"] and r["ttft_pred"] is not None]
    below_d = [r for r in rows if not r["grew"] and r.get("ttft_pred_d") is not None]
    summary = {
        "predicted_max_rate": top,
        "highest_stable_arrivals": max(stable) if stable else None,
        "lowest_grown_arrivals": min((r["arrivals"] for r in grew), default=None),
        "served_when_overloaded": max((r["served"] for r in grew), default=None),
        "rate_error_vs_stable": _err(top, max(stable) if stable else None),
        "rate_error_vs_overloaded": _err(top, max((r["served"] for r in grew), default=None)),
        "ttft_errors_below_saturation": [_err(r["ttft_pred"], r["ttft_p50"]) for r in below],
        "itl_errors_below_saturation": [_err(r["itl_pred"], r["itl_p50"]) for r in below],
        "delivered_rate_predicted_vs_arrivals": [(r["delivered_pred"], r["arrivals"]) for r in rows if "delivered_pred" in r],
        "ttft_errors_at_delivered": [_err(r["ttft_pred_d"], r["ttft_p50"]) for r in below_d],
        "itl_errors_at_delivered": [_err(r["itl_pred_d"], r["itl_p50"]) for r in below_d],
        "ttft_p50_errors_on_schedule": [_err(r["ttft_sched"], r["ttft_p50"]) for r in rows if "ttft_sched" in r],
        "ttft_mean_errors_on_schedule": [_err(r["ttft_mean_sched"], r["ttft_mean"]) for r in rows if "ttft_sched" in r],
        "grew_measured_vs_on_schedule": [(r["grew"], r["grew_sched"]) for r in rows if "grew_sched" in r],
        "served_errors_on_schedule_where_grown": [_err(r["served_sched"], r["served"]) for r in grew if "served_sched" in r],
        "batch1_decode_predicted_ms": (pred.get("performance") or {}).get("tpot_alone_s", 0) * 1e3,
        "batch1_decode_error": _err((pred.get("performance") or {}).get("tpot_alone_s"), server_eval_ms / 1e3 if server_eval_ms else None),
    }
    return rows, summary


def table(rows: list[dict]) -> str:
    out = ["| asked req/s | arrivals | served req/s | queue grew | requests | TTFT p50 measured / predicted (at delivered) | ITL p50 measured / predicted (at delivered) |",
           "|---:|---:|---:|:---:|---:|---:|---:|"]
    for r in rows:
        ttft = f"{r['ttft_p50'] * 1e3:,.0f} / " + (f"{r['ttft_pred'] * 1e3:,.0f} ms" if r["ttft_pred"] is not None else "(2 replicas)")
        itl = f"{r['itl_p50'] * 1e3:.1f} / " + (f"{r['itl_pred'] * 1e3:.1f} ms" if r["itl_pred"] is not None else "-")
        if "delivered_pred" in r:  # the same, predicted at the delivered rate
            ttft += f" ({r['ttft_pred_d'] * 1e3:,.0f} at {r['delivered_pred']:.3g})" if r["ttft_pred_d"] is not None else " (-)"
            itl += f" ({r['itl_pred_d'] * 1e3:.1f})" if r["itl_pred_d"] is not None else " (-)"
        if "ttft_sched" in r:
            ttft += f"; {r['ttft_sched'] * 1e3:,.0f} on its schedule"
        out.append(f"| {r['asked']:.3g} | {r['arrivals']:.2f} | {r['served']:.2f} | {'yes' if r['grew'] else 'no'} | {r['requests']} | {ttft} | {itl} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("open_json", type=Path)
    ap.add_argument("predictions", type=Path)
    ap.add_argument("--server-eval-ms", type=float, help="the server's own eval time per token of a lone request")
    args = ap.parse_args()
    rows, summary = grade(args.open_json, args.predictions, args.server_eval_ms)
    print(table(rows))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
