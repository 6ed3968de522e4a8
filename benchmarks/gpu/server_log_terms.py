"""Where the llama.cpp H200 server spends a request, from its own log (retrospective: calls A-E, 2026-12-03/04).

    PYTHONPATH=src:. python benchmarks/gpu/server_log_terms.py \\
        --fit-log benchmarks/results/h200/llamacpp-fit-2026-12-03/server-deploy-fit.log.gz \\
        benchmarks/results/h200/llamacpp-openloop-{b,c,d,e}-*/

Fitted on calls A-E only (the closed loops of call A and the open-loop validation runs B-E, all already graded):
nothing here is a prediction. llama-server logs per task the slot launch, its ``prompt eval time`` (launch to the
first token: the prompt's batch and whatever the server does inside it), its ``eval time`` and the release. From
those and bench's per-request CSV (send time, TTFT):

1. **outside the slot**: TTFT less the wait for a slot (launch less send, aligned per level) less the prompt eval:
   HTTP, tokenisation, the first token's send. The simulator spends ``request_overhead_s`` before a request queues.
2. **the prompt's batch**: the server's prompt eval less the step the model gives the same batch (the prompt with
   the decodes of the slots busy at its launch): host and GPU time the server spends on a prompt beyond what
   ``llama-batched-bench`` measured, fitted as ``a + b x prompt tokens`` over prompts that had the batch to
   themselves. The simulator has it inside the step (``prompt_host_s``, ``prompt_host_s_per_token``): it holds the
   slot and stalls the other slots' decodes, as the server's single loop does.
3. **decode steps by busy slots** (a check, not fitted into the model): each task's eval time less the other
   prompts' batches that fell inside it, regressed on the time it spent with 1, 2, 3 and 4 slots busy;
4. **batch-1 decode**: the eval time per token of tasks that overlapped no other task (``--server-eval-ms`` of
   ``grade_openloop.py``).

Tasks are matched to requests by order and prompt length (the server counts the prompt less the 0-3 tokens it
reuses from the slot's last prompt, its BOS); warm-up requests are left unmatched.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_llamacpp_h200 import GPU, MODEL  # noqa: E402

from infer_advisor.estimate.step_time import StepShape, build_step_model, prefill_shape  # noqa: E402
from infer_advisor.hardware.catalog import lookup_gpu  # noqa: E402
from infer_advisor.model_facts.resolve import resolve_model  # noqa: E402

TASK = re.compile(r"task (\d+)")
TIMING = re.compile(r"= +([\d.]+) ms / +(\d+) tokens")
REUSED_MAX = 3  # tokens a slot's new prompt shares with its last one (the BOS, rarely a word more)
ALONE_MS = 90.0  # a prompt eval longer than this shared its batch with another prompt (two arrived together)


def _clock(stamp: str) -> float:
    """llama.cpp's log time, minutes.seconds.milliseconds.microseconds since start, in seconds."""
    m, s, ms, us = stamp.split(".")
    return int(m) * 60 + int(s) + int(ms) / 1e3 + int(us) / 1e6


def tasks(path: Path) -> list[dict]:
    """Every completed task of one server log: launch, prompt eval (ms, tokens), eval (ms, tokens), release, busy."""
    found: dict[int, dict] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", errors="replace") as f:
        for line in f:
            m = TASK.search(line)
            if not m:
                continue
            t = found.setdefault(int(m.group(1)), {})
            if "launch_slot_" in line:
                t["launch"] = _clock(line.split()[0])
            elif "prompt eval time" in line:
                v = TIMING.search(line)
                t.update(pms=float(v.group(1)), pn=int(v.group(2)))
            elif " eval time" in line:
                v = TIMING.search(line)
                t.update(ems=float(v.group(1)), en=int(v.group(2)))
            elif "release" in line:
                t["release"] = _clock(line.split()[0])
    done = sorted((t for t in found.values() if {"launch", "pms", "ems", "release"} <= set(t)), key=lambda t: t["launch"])
    for t in done:
        t["busy"] = sum(1 for o in done if o["launch"] < t["launch"] < o["release"])
    return done


def requests(path: Path) -> list[dict]:
    """bench's per-request rows, level after level, each level in send order."""
    with gzip.open(path, "rt") as f:
        rows = list(csv.DictReader(f))
    order = list(dict.fromkeys(r["request_rate"] for r in rows))
    return [r for rate in order for r in sorted((x for x in rows if x["request_rate"] == rate), key=lambda x: float(x["sent_offset_s"]))]


def match(ts: list[dict], rs: list[dict]) -> list[tuple[dict, dict]]:
    """The longest in-order matching of tasks to requests (a task's prompt = the request's less 0-3 reused tokens)."""
    n, m = len(ts), len(rs)
    ok = [[0 <= int(r["input_tokens"]) - t["pn"] <= REUSED_MAX for r in rs] for t in ts]
    best = np.zeros((n + 1, m + 1), dtype=np.int32)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i, j] = max(best[i + 1, j], best[i, j + 1], best[i + 1, j + 1] + 1 if ok[i][j] else 0)
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if ok[i][j] and best[i, j] == best[i + 1, j + 1] + 1:
            pairs.append((ts[i], rs[j]))
            i, j = i + 1, j + 1
        elif best[i, j] == best[i + 1, j]:
            i += 1
        else:
            j += 1
    return pairs


def outside_ms(pairs: list[tuple[dict, dict]]) -> list[float]:
    """TTFT less the slot wait less the prompt eval, per request, for levels where some request found a free slot at
    once (the level's clock offset is the smallest launch-less-send: that request waited only its HTTP part)."""
    out = []
    for rate in dict.fromkeys(r["request_rate"] for _, r in pairs):
        level = [(t, r) for t, r in pairs if r["request_rate"] == rate]
        offset = min(t["launch"] - float(r["sent_offset_s"]) for t, r in level)
        waits = [t["launch"] - float(r["sent_offset_s"]) - offset for t, r in level]
        if statistics.median(waits) > 0.5:  # no request met a free slot: no offset to align on
            continue
        out += [(float(r["ttft_s"]) - w) * 1e3 - t["pms"] for (t, r), w in zip(level, waits)]
    return out


def prompt_excess(ts: list[dict], step) -> list[tuple[int, float]]:
    """(prompt tokens, server prompt eval less the modelled batch in ms) for prompts that had their batch alone."""
    out = []
    for t in ts:
        if t["pms"] > ALONE_MS or any(o is not t and abs(o["launch"] - t["launch"]) * 1e3 < t["pms"] for o in ts):
            continue
        p = prefill_shape(1, t["pn"])
        shape = StepShape(decode=t["busy"], decode_context=t["busy"] * (t["pn"] + 100.0), prefill_tokens=t["pn"],
                          prefill_pairs=p.prefill_pairs, prefill_chunks=1, completes=1)
        modelled = step.seconds(shape) - step.terms(shape).get("engine_prompt_host", 0.0)  # the GPU batch, as before the term
        out.append((t["pn"], t["pms"] - modelled * 1e3))
    return out


def decode_steps(ts: list[dict]) -> list[float]:
    """Decode step (ms) at 1-4 busy slots: each task's eval less other prompts' batches inside it, least squares."""
    edges = sorted([(t["launch"], 1) for t in ts] + [(t["release"], -1) for t in ts])
    rows, ys = [], []
    for t in ts:
        a, b = t["launch"] + t["pms"] / 1e3, t["release"]
        stall = sum(max(0.0, min(b, o["launch"] + o["pms"] / 1e3) - max(a, o["launch"])) for o in ts if o is not t)
        share, busy, now = np.zeros(5), sum(1 for o in ts if o["launch"] <= a < o["release"]), a
        for at, d in edges:
            if at <= a:
                continue
            if at >= b:
                break
            share[min(busy, 4)] += at - now
            now, busy = at, busy + d
        share[min(busy, 4)] += b - now
        if share.sum() > 0:
            rows.append(t["en"] * share[1:] / share.sum())
            ys.append(t["ems"] / 1e3 - stall)
    coef, *_ = np.linalg.lstsq(np.array(rows), np.array(ys), rcond=None)
    return [float(c) * 1e3 for c in coef]


def alone_eval_ms(ts: list[dict]) -> list[float]:
    """Eval time per token of the tasks that overlapped no other task (batch-1 decode, the server's own timing)."""
    return [t["ems"] / t["en"] for t in ts
            if t["en"] > 1 and not any(o is not t and o["launch"] < t["release"] and t["launch"] < o["release"] for o in ts)]


def step_model(model: str):
    """The plan's step model of ``model`` on the H200 with llama.cpp f16 weights (as the runs served it)."""
    return build_step_model(resolve_model(model, source="catalog"), gpu=lookup_gpu(GPU), engine="llama.cpp",
                            quantization="gguf-f16", dtype="bfloat16")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="open-loop result folders (server-deploy-open.log.gz, requests.csv.gz)")
    ap.add_argument("--fit-log", type=Path, help="call A's server log (closed loops: prompt batches and decode steps only)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--model", default=MODEL, help="the catalog model the runs served (call F: meta-llama/Llama-3.2-3B)")
    ap.add_argument("--context", type=float, default=1237.0, help="decode context of the model's step printed beside")
    args = ap.parse_args()
    step = step_model(args.model)
    report: dict = {"runs": {}}
    excess: list[tuple[int, float]] = []
    logs = [(d.name, d / "server-deploy-open.log.gz", d / "requests.csv.gz") for d in args.runs]
    if args.fit_log:
        logs.insert(0, ("call-A-closed-loops", args.fit_log, None))
    for name, log, reqs in logs:
        ts = tasks(log)
        alone = alone_eval_ms(ts)
        run = {"tasks": len(ts), "decode_step_ms_at_1_4_busy": [round(v, 2) for v in decode_steps(ts)],
               "alone_eval_ms_per_token_p50": round(statistics.median(alone), 3) if alone else None, "alone_tasks": len(alone)}
        mine = prompt_excess(ts, step)
        excess += mine
        run["prompt_eval_less_model_ms_p50"] = round(statistics.median(e for _, e in mine), 2) if mine else None
        if reqs is not None and reqs.exists():
            outs = outside_ms(match(ts, requests(reqs)))
            run["outside_ms_p50"] = round(statistics.median(outs), 2) if outs else None
        report["runs"][name] = run
        print(name, json.dumps(run))
    x = np.array([n for n, _ in excess], dtype=float)
    y = np.array([e for _, e in excess])
    b, a = np.polyfit(x, y, 1)
    resid = y - (a + b * x)
    report["prompt_fit"] = {"fixed_ms": round(a, 2), "per_token_us": round(b * 1e3, 2), "prompts": len(x),
                            "residual_ms_p50_abs": round(float(np.median(np.abs(resid))), 2)}
    report["model_decode_step_ms_at_1_4_busy"] = [round(step.seconds(StepShape(decode=d, decode_context=d * args.context)) * 1e3, 2)
                                                  for d in (1, 2, 3, 4)]
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
