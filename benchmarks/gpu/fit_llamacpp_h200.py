"""The llama.cpp CUDA terms of the step model from measurements on the lent H200 (never from the open-loop validation).

    PYTHONPATH=src:. python benchmarks/gpu/fit_llamacpp_h200.py \\
        --batched benchmarks/results/h200/llamacpp-fit-2026-12-03/batched-f16-kvu.jsonl \\
        --closed benchmarks/results/h200/llamacpp-fit-2026-12-03/closed-long.json.gz \\
        --short benchmarks/results/h200/llamacpp-fit-2026-12-03/closed-short.json.gz \\
        --server-log benchmarks/results/h200/llamacpp-fit-2026-12-03/server-deploy-fit.log

Each term is solved on the step model the user's plan builds (Llama-3.1-8B, H200, llama.cpp, gguf-f16), one
measurement kind at a time, every other term as the data files state it:

1. ``ggml-f16.bandwidth_scale``: ``llama-batched-bench`` decode at one sequence (ggml's f16 mat-vec kernel);
2. ``ggml-f16.batched_bandwidth_scale``: its decode at 2-8 sequences (tensor-core tiles: mmf, then cuBLAS);
3. ``ggml-f16.compute_scale``: its prompt processing of one sequence (cuBLAS f16 in 512-row micro-batches);
4. ``sampler_s_per_vocab``: the server's ITL p50 in closed loops of short prompts at 1, 2, 4 clients less the
   step the model gives batched-bench's: host work per sampled slot (llama-server samples each slot on the CPU over
   the whole vocabulary between steps), a least-squares slope through the origin over the busy slots;
5. ``request_overhead_s``: TTFT p50 at one client less the modelled prefill step: the request's host time outside
   the steps (HTTP, tokenisation, slot launch, the first token's detokenisation and send).

Prints the values with the class factors the data files need (the weight-kernel class multiplies the measured
bf16 curve and the engine's fitted gemm_scale: the factor is the solved figure over those) and the model's error
on every measurement once they are in (run again after writing them: every error should be within a few percent).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_io import read_text  # noqa: E402

from infer_advisor.estimate.speed_data import engine_speed, engine_speeds as engines_file, kernels
from infer_advisor.estimate.step_time import build_step_model
from infer_advisor.hardware.catalog import lookup_gpu
from infer_advisor.model_facts.resolve import resolve_model

MODEL, GPU = "meta-llama/Llama-3.1-8B", "H200"
TIMING = re.compile(r"\|\s+(prompt eval|eval) time =\s+([\d.]+) ms /\s+(\d+) tokens")


def step_model():
    return build_step_model(resolve_model(MODEL, source="catalog"), gpu=lookup_gpu(GPU), engine="llama.cpp",
                            quantization="gguf-f16", dtype="bfloat16")


def solve(f, target: float, lo: float, hi: float) -> float:
    """x in [lo, hi] with f(x) = target, f monotonic in x (bisection in log space; an end when out of range)."""
    rising = f(hi) > f(lo)
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if (f(mid) < target) == rising else (lo, mid)
    return (lo * hi) ** 0.5


def batched_rows(paths: list[Path]) -> list[dict]:
    rows = []
    for p in paths:
        rows += [json.loads(line) for line in p.read_text().splitlines() if line.startswith("{")]
    return rows


def fit_steps(sm, rows: list[dict]) -> dict:
    """Solve the kernel figures on batched-bench rows (StepModel attributes; every other term as stated).

    One row: the weights stream at ``gemm_bw`` as the data files state it (ggml's f16 mat-vec taken at the measured
    cuBLAS mat-vec efficiency: one decode step cannot split bandwidth from fixed costs), and the GEMM kernels' fixed
    time (``gemm_launch``) is solved; more rows: the bandwidth of the tensor-core kernels; prompts: their compute."""
    def decode_ms(r):
        return r["t_tg"] / r["tg"] * 1e3

    def ctx(r):
        return r["pp"] + r["tg"] / 2

    sampler, sm.sampler_s = sm.sampler_s, 0.0  # batched-bench does not sample
    launch0 = sm.gemm_launch
    one = [solve(lambda x, r=r: _set(sm, gemm_launch=launch0 / x).decode_seconds(1, ctx(r)) * 1e3, decode_ms(r), 1e-3, 1e3)
           for r in rows if r["pl"] == 1]
    launch = launch0 / statistics.median(one)
    _set(sm, gemm_launch=launch)
    many = [solve(lambda bw, r=r: _set(sm, gemm_bw_batched=bw).decode_seconds(r["pl"], r["pl"] * ctx(r)) * 1e3, decode_ms(r), 1e11, 2e13)
            for r in rows if 2 <= r["pl"] <= 8]
    batched = statistics.median(many)
    _set(sm, gemm_bw_batched=batched)
    pre = [solve(lambda c, r=r: _set(sm, gemm_compute_scale=c).step_seconds(0, 0.0, r["pp"], r["pp"] * (r["pp"] + 1) / 2, 1, 1) * 1e3,
                 r["t_pp"] * 1e3, 0.01, 2.0) for r in rows if r["pl"] == 1 and r["pp"] >= 512]
    compute = statistics.median(pre)
    _set(sm, gemm_compute_scale=compute)
    errors = [(r["pp"], r["pl"], round(sm.decode_seconds(r["pl"], r["pl"] * ctx(r)) * 1e3 / decode_ms(r) - 1, 4)) for r in rows if r["pl"] <= 8]
    sm.sampler_s = sampler
    return {"gemm_launch": launch, "launch_scale": launch / launch0, "gemm_bw_batched": batched, "gemm_compute_scale": compute,
            "decode_errors_pp_pl": errors,
            "spread": {"launch": [launch0 / max(one), launch0 / min(one)], "batched_bw": [min(many), max(many)], "prefill": [min(pre), max(pre)]}}


def _set(sm, **attrs):
    for k, v in attrs.items():
        setattr(sm, k, v)
    sm._layer_cache.clear()
    return sm


def levels(path: Path) -> list[dict]:
    return json.loads(read_text(path))["levels"]


def fit_sampler(sm, short: list[dict], in_tokens: float, out_tokens: float) -> tuple[float, list]:
    """Seconds per sampled slot per step: ITL p50 less the modelled step, slope through the origin over the slots."""
    pts = []
    for lv in short:
        b = lv["concurrency"]
        model = sm.decode_seconds(b, b * (in_tokens + out_tokens / 2)) - sm.sampler_s * b
        pts.append((b, lv["itl_s"]["p50"] - model))
    slope = sum(b * e for b, e in pts) / sum(b * b for b, _ in pts)
    return slope, pts


def gpu_seconds_per_decode_step(folder: Path) -> float | None:
    """nsys kernel sums of batched-bench at -ntg 1 and -ntg 65 (one sequence): their difference over 64 steps."""
    import csv

    totals = []
    for tg in (1, 65):
        path = folder / f"nsys-tg{tg}_cuda_gpu_kern_sum.csv"
        if not path.exists():
            return None
        rows = list(csv.DictReader(path.read_text().splitlines()))
        totals.append(sum(float(r["Total Time (ns)"]) for r in rows) * 1e-9)
    return (totals[1] - totals[0]) / 64


def server_timings(log: Path) -> list[tuple[str, float, int]]:
    text = read_text(log)
    return [(m[1], float(m[2]) / 1e3, int(m[3])) for m in TIMING.finditer(text)]


def check_closed_loops(paths: list[Path]) -> list[dict]:
    """Every closed-loop level predicted through the user's path (``advise(concurrency=...)``: the plan's own
    slots, token budget and KV cache) against the measured means."""
    from infer_advisor import advise

    rows = []
    for path in paths:
        for lv in levels(path):
            plan = advise(model=MODEL, gpu=GPU, engine="llama.cpp", quantization="gguf-f16", concurrency=lv["concurrency"],
                          input_tokens=round(lv["input_tokens_mean"]), output_tokens=200)
            perf = plan.performance
            got = {"ttft": perf.ttft_s, "tpot": perf.tpot_s, "req_s": perf.requests_per_s}
            want = {"ttft": lv["ttft_s"]["mean"], "tpot": lv["tpot_s"]["mean"], "req_s": lv["requests_per_s"]}
            rows.append({"run": path.stem, "clients": lv["concurrency"], "slots": plan.engine.max_num_seqs,
                         **{f"{k}_measured": round(want[k], 4) for k in got}, **{f"{k}_predicted": round(got[k], 4) for k in got},
                         **{f"{k}_error": round(got[k] / want[k] - 1, 3) for k in got}})
    return rows


def server_by_level(timings: list, closed: Path | None, short: Path | None) -> list[dict]:
    """The server's own prompt-eval and per-token eval times by closed-loop level, in the order the levels ran (one
    warm-up round of `concurrency` requests before each level's measured ones; long and short prompts apart)."""
    pe = [(s, n) for kind, s, n in timings if kind == "prompt eval"]
    ev = [(s, n) for kind, s, n in timings if kind == "eval"]
    out = []
    for path, is_long in ((closed, True), (short, False)):
        if path is None:
            continue
        mine = [i for i, (_, n) in enumerate(pe) if (n > 600) == is_long]
        at = 0
        for lv in levels(path):
            count = lv["concurrency"] + lv["ttft_s"]["n"]
            idx = mine[at:at + count][lv["concurrency"]:]  # the warm-up round first
            at += count
            p_s = [pe[i][0] for i in idx if i < len(pe)]
            e_s = [ev[i][0] / ev[i][1] for i in idx if i < len(ev) and ev[i][1]]
            out.append({"prompt": "long" if is_long else "short", "concurrency": lv["concurrency"], "requests": len(p_s),
                        "prompt_eval_s_median": statistics.median(p_s) if p_s else None,
                        "eval_s_per_token_median": statistics.median(e_s) if e_s else None,
                        "ttft_p50_s": lv["ttft_s"]["p50"], "itl_p50_s": lv["itl_s"]["p50"], "requests_per_s": lv["requests_per_s"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batched", type=Path, action="append", required=True)
    ap.add_argument("--closed", type=Path, help="bench JSON, closed loop, 1000-word prompts (1 client at least)")
    ap.add_argument("--short", type=Path, help="bench JSON, closed loop, short prompts at 1, 2, 4 clients")
    ap.add_argument("--server-log", type=Path)
    ap.add_argument("--nsys", type=Path, help="folder with nsys-tg1/nsys-tg65 _cuda_gpu_kern_sum.csv")
    ap.add_argument("--check", action="store_true", help="only predict the closed loops (--closed, --short) and print the errors")
    args = ap.parse_args()
    if args.check:
        for row in check_closed_loops([p for p in (args.closed, args.short) if p]):
            print(json.dumps(row))
        return
    sm = step_model()
    prof = engine_speed("llama.cpp", gpu=GPU)
    k = kernels().gemm["bf16"]
    wk = engines_file().weight_kernels["ggml-f16"]
    if args.nsys:  # before the kernel fit: the host part of a batched-bench step is what the GPU does not account for
        gpu = gpu_seconds_per_decode_step(args.nsys)
        rows = [r for r in batched_rows(args.batched) if r["pl"] == 1 and r["pp"] >= 1000]
        if gpu and rows:
            step = statistics.median(r["t_tg"] / r["tg"] for r in rows)
            print(json.dumps({"nsys_gpu_s_per_decode_step": gpu, "batched_bench_step_s": step,
                              "host_s_per_step (step_overhead_s + per_sequence_s)": step - gpu}))
    fit = fit_steps(sm, batched_rows(args.batched))
    bw = sm.ceil.bandwidth * k.bandwidth_efficiency * prof.gemm_scale.value
    out = {"ggml-f16 (x the factors now in the file)": {
               "launch_scale": wk.launch_scale * fit["launch_scale"],
               "batched_bandwidth_scale": fit["gemm_bw_batched"] / bw,
               "compute_scale": fit["gemm_compute_scale"] / prof.gemm_scale.value},
           "fractions_of_datasheet_bandwidth": {"one_row": sm.gemm_bw / sm.ceil.bandwidth, "batched": fit["gemm_bw_batched"] / sm.ceil.bandwidth},
           "gemm_fixed_us_per_kernel": fit["gemm_launch"] * 1e6, "decode_errors_pp_pl": fit["decode_errors_pp_pl"], "spread": fit["spread"]}
    if args.short:
        short = levels(args.short)
        in_tok = statistics.mean(lv["input_tokens_mean"] for lv in short)
        slope, pts = fit_sampler(sm, short, in_tok, short[0]["output_tokens_total"] / max(short[0]["ttft_s"]["n"], 1))
        out["sampler_s_per_slot"] = slope
        out["sampler_s_per_vocab"] = slope / sm.vocab
        out["sampler_points_extra_s_by_slots"] = pts
        sm.sampler_s = slope
    if args.closed:
        one = next(lv for lv in levels(args.closed) if lv["concurrency"] == 1)
        prompt = round(one["input_tokens_mean"])
        prefill = sm.step_seconds(0, 0.0, prompt, prompt * (prompt + 1) / 2, 1, 1)
        out["request_overhead_s"] = one["ttft_s"]["p50"] - prefill
        out["ttft_p50_one_client_s"], out["modelled_prefill_step_s"] = one["ttft_s"]["p50"], prefill
    if args.server_log:
        out["server_by_level"] = server_by_level(server_timings(args.server_log), args.closed, args.short)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
