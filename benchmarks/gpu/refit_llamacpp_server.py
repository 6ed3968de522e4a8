"""Refit the llama.cpp H200 server's busy-slot and prompt-batch host terms on its own step timings (RETROSPECTIVE:
calls A-F, all graded before this fit; nothing here is a prediction).

    PYTHONPATH=src:. python benchmarks/gpu/refit_llamacpp_server.py [--json out.json] [--check out.json]

Call F (Llama-3.2-3B) showed the step model's busy slots too dear (server 4.70 / 5.42 / 5.51 ms at 2 / 3 / 4 busy
slots, model 5.00 / 5.75 / 6.49): the per-slot host sampling term (``sampler_s_per_vocab``) had been fitted on call
A's short-prompt ITL p50 against llama-batched-bench, not on the server's steps. Here, from the server logs of the
six runs (``server_log_terms.py``: each task's eval time less the other prompts' batches inside it, regressed on the
time it spent with 1-4 slots busy), with the model's GPU step (fitted on batched-bench, unchanged) and the per-step
host time it already has (``step_overhead_s``, ``per_sequence_s``) held:

1. **host per busy slot** (``per_sequence_s + vocab x sampler_s_per_vocab``): one slope through the origin of the
   server's decode step less the modelled GPU step less ``step_overhead_s``, over 1-4 busy slots of every run, each
   model's runs weighted equally (five 8B runs, one 3B run); bounded to 0.2-1.0 ms per slot (llama.cpp's
   common_sampler over a 128,256-entry vocabulary: the candidates array and a top-k pass, one slot after another);
2. **the prompt batch's in-step host term** (``prompt_host_s + prompt_host_s_per_token x tokens``): the server's
   prompt eval less the modelled GPU batch (``server_log_terms.prompt_excess``), least squares over the prompts that
   had their batch alone, each model weighted equally; bounded to 1-30 ms and 0-20 us per token.

A term pinned at a bound is reported as such (a physical term fitted to a bound is a question, not an answer).
``--check``: the consistency check on the same data (not a forecast): the plan's ``max_rate_per_replica`` and, at
the rates calls D (8B) and F (3B) asked, its TTFT p50 and ITL p50 and one simulated server on each level's seeded
schedule (``predict_levels.py``'s own functions), beside what bench measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_log_terms import decode_steps, prompt_excess, step_model, tasks  # noqa: E402

from infer_advisor.estimate.step_time import StepShape  # noqa: E402

R = Path("benchmarks/results/h200")
RUNS = [  # (label, model, server log): calls A-F
    ("A", "meta-llama/Llama-3.1-8B", R / "llamacpp-fit-2026-12-03/server-deploy-fit.log.gz"),
    ("B", "meta-llama/Llama-3.1-8B", R / "llamacpp-openloop-b-2026-12-03/server-deploy-open.log.gz"),
    ("C", "meta-llama/Llama-3.1-8B", R / "llamacpp-openloop-c-2026-12-03/server-deploy-open.log.gz"),
    ("D", "meta-llama/Llama-3.1-8B", R / "llamacpp-openloop-d-2026-12-04/server-deploy-open.log.gz"),
    ("E", "meta-llama/Llama-3.1-8B", R / "llamacpp-openloop-e-2026-12-04/server-deploy-open.log.gz"),
    ("F", "meta-llama/Llama-3.2-3B", R / "llamacpp-openloop-f-2026-12-04/server-deploy-open.log.gz"),
]
CONTEXT = 1237.0  # mean KV context of a decoding slot: 1,137-token prompt + half of 200 answer tokens
SLOT_BOUNDS_S = (2e-4, 1e-3)
PROMPT_BOUNDS = ((1e-3, 0.03), (0.0, 2e-5))


def gpu_step_s(step, busy: int) -> float:
    """The model's decode step of ``busy`` slots without any host term (the GPU part, fitted on batched-bench)."""
    s = StepShape(decode=busy, decode_context=busy * CONTEXT)
    host = sum(v for k, v in step.terms(s).items() if k.startswith("engine_"))
    return step.seconds(s) - host


def fit_slot(rows: list[tuple[str, int, float, float]]) -> float:
    """Per-slot host seconds: weighted slope through the origin of (server - GPU - step_overhead) on busy slots."""
    models = {m for m, *_ in rows}
    w = np.array([1.0 / sum(1 for r in rows if r[0] == m) / len(models) for m, *_ in rows])
    x = np.array([b for _, b, _, _ in rows], dtype=float)
    y = np.array([host for *_, host in rows])
    return float(np.clip((w * x * y).sum() / (w * x * x).sum(), *SLOT_BOUNDS_S))


def fit_prompt(points: list[tuple[str, int, float]]) -> tuple[float, float]:
    """(fixed s, s per token) of the in-step prompt term, weighted least squares, each model weighted equally."""
    models = {m for m, *_ in points}
    w = np.sqrt([1.0 / sum(1 for p in points if p[0] == m) / len(models) for m, *_ in points])
    a = np.column_stack([np.ones(len(points)), [n for _, n, _ in points]]) * w[:, None]
    coef, *_ = np.linalg.lstsq(a, np.array([e for *_, e in points]) * w, rcond=None)
    return float(np.clip(coef[0], *PROMPT_BOUNDS[0])), float(np.clip(coef[1], *PROMPT_BOUNDS[1]))


def check(path: Path) -> dict:
    """The plan's figures at calls D's and F's asked rates with the code as it is now, beside bench's measurements."""
    import csv

    import predict_levels as pl
    from replay_arrivals import _capture_plan

    out = {}
    for label, folder in (("D", "llamacpp-openloop-d-2026-12-04"), ("F", "llamacpp-openloop-f-2026-12-04")):
        pred = json.loads((R / folder / "predictions.json").read_text())
        model, n_in, n_out, secs = pred["model"], pred["input_tokens"], pred["output_tokens"], pred["level_seconds"]
        rows = {float(r["request_rate"]): r for r in csv.DictReader((R / folder / "bench.csv").open())}
        top = pl._chosen(pl._plan(model, 1.0, n_in, n_out)["plan"])["max_rate_per_replica"]
        server = _capture_plan(model, pred["rates"][0], n_in, n_out)
        levels = []
        for rate in pred["rates"]:
            got = pl._chosen(pl._plan(model, rate, n_in, n_out)["plan"])
            sched = pl._on_schedule(server, pl._schedule(rate, secs, 1_000_000, pred["bench_seed"]), n_in, n_out)
            m = rows.get(rate, {})
            levels.append({"rate": rate, "replicas": got["replicas"], "ttft_p50_ms": _ms(got["ttft_p50_s"]),
                           "itl_p50_ms": _ms(got["itl_p50_s"]), "on_schedule_ttft_p50_ms": _ms(sched["ttft_p50_s"]),
                           "on_schedule_saturated": sched["saturated"], "on_schedule_served": round(sched["requests_per_s"], 3),
                           "measured_ttft_p50_ms": _ms(m.get("ttft_p50_s")), "measured_itl_p50_ms": _ms(m.get("itl_p50_s")),
                           "measured_served": round(float(m["requests_per_s"]), 3) if m else None})
        out[label] = {"model": model, "max_rate_per_replica": top, "before": pred["predicted_max_rate_per_replica"],
                      "levels": levels}
        print(label, model, f"M {top:.3f} (was {pred['predicted_max_rate_per_replica']:.3f})")
        for lv in levels:
            print("  ", json.dumps(lv))
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out


def _ms(v) -> float | None:
    return None if v in (None, "") else round(float(v) * 1e3, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--check", type=Path, help="run the consistency check on calls D and F, write it here")
    args = ap.parse_args()
    if args.check:
        check(args.check)
        return
    steps = {m: step_model(m) for m in dict.fromkeys(m for _, m, _ in RUNS)}
    per_run, slot_rows, prompt_points = {}, [], []
    for label, model, log in RUNS:
        ts, sm = tasks(log), steps[model]
        server = decode_steps(ts)
        for b, v in enumerate(server, start=1):
            slot_rows.append((model, b, v / 1e3, v / 1e3 - gpu_step_s(sm, b) - sm.step_overhead_s))
        excess = prompt_excess(ts, sm)
        prompt_points += [(model, n, e / 1e3) for n, e in excess]
        per_run[label] = {"model": model, "server_decode_ms_1_4": [round(v, 2) for v in server],
                          "gpu_model_ms_1_4": [round(gpu_step_s(sm, b) * 1e3, 2) for b in (1, 2, 3, 4)],
                          "prompt_excess_ms_p50": round(statistics.median(e for _, e in excess), 2), "prompts": len(excess)}
    slot = fit_slot(slot_rows)
    fixed, per_token = fit_prompt(prompt_points)
    vocab = {m: sm.vocab for m, sm in steps.items()}
    per_seq = next(iter(steps.values())).per_sequence_s
    out = {"host_per_busy_slot_ms": round(slot * 1e3, 3), "per_sequence_s": per_seq,
           "sampler_s_per_vocab": (slot - per_seq) / next(iter(vocab.values())),
           "prompt_host_s": fixed, "prompt_host_s_per_token": per_token, "vocab": vocab,
           "at_bounds": [n for n, v, (lo, hi) in (("slot", slot, SLOT_BOUNDS_S), ("prompt_host_s", fixed, PROMPT_BOUNDS[0]),
                                                  ("prompt_host_s_per_token", per_token, PROMPT_BOUNDS[1])) if v in (lo, hi)],
           "runs": per_run}
    for label, r in per_run.items():
        sm = steps[r["model"]]
        model = [gpu_step_s(sm, b) + sm.step_overhead_s + slot * b for b in (1, 2, 3, 4)]
        r["refit_decode_ms_1_4"] = [round(v * 1e3, 2) for v in model]
        r["refit_decode_error_pct"] = [round(100 * (m * 1e3 / s - 1), 1) for m, s in zip(model, r["server_decode_ms_1_4"])]
        r["refit_prompt_host_ms_at_1137"] = round((fixed + per_token * 1137) * 1e3, 2)
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
