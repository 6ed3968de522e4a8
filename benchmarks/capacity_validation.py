"""The capacity simulator against a real continuous-batching server: llama.cpp's llama-server on this CPU.

    PYTHONPATH=. python benchmarks/capacity_validation.py --out benchmarks/results/capacity \\
        --plot docs/capacity_validation.png

1. build (once, cached) llama.cpp's C++ ``llama-server`` and a random 58M-parameter Llama as f16 GGUF
   (tests/support/llama_server.py), and serve it with N = 4 slots (``--parallel 4``), ``-c 4 x 256``, ``-b 512``;
2. closed-loop ``infer-advisor bench`` at concurrency 1, 2, 4 (synthetic prompts of 128 words, 64 output tokens);
3. ``infer-advisor calibrate --engine llama.cpp --from closed/bench.json --gpu cpu --max-num-seqs 4``: the step-time
   model's CPU coefficients fitted through the simulator, exactly as `plan` would use them;
4. open-loop ``infer-advisor bench --request-rate ...`` (Poisson arrivals, fixed seed) from light load to past
   saturation, one rate repeated to show the run-to-run spread;
5. :func:`simulate` at each rate with the calibrated step model and the server's scheduler limits
   (``SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=512, kv_capacity_tokens=4 x 256, kv_admission="reserve",
   block_size=1)``), the same Poisson rate, lengths and request count;
6. a table per rate (measured vs simulated p50/p90 TTFT, p50/p90 ITL, throughput, saturation) and the plot.

A second simulated column uses a *linear* step model (``a + b x decode rows + c x prompt tokens``) fitted through
the same simulator to the same closed-loop points: it separates the scheduler's error from the operator step
model's (the CPU operator model has one GEMM efficiency for every row count; ggml's CPU matmuls do not).
Every figure in the output says which it is: measured (bench), simulated (calibrated step model) or simulated
(linear step fit).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The server and workload of the validation (the issue: N parallel slots, fixed threads, fixed lengths).
SLOTS = 4
CTX_PER_SLOT = 256  # tokens of KV per slot: prompt (~147 tokens for 128 words) + 64 output fit
BATCH = 512  # llama-server -b / -ub: the token budget of one step (prefill chunk + decodes)
THREADS = 1  # one ggml thread: the 2-core machine keeps a core for the HTTP client (see docs/capacity.md)
INPUT_WORDS = 128
OUTPUT_TOKENS = 64
CLOSED_CONCURRENCY = [1, 2, 4]
SIM_SEEDS = (0, 1, 2, 3, 4)
ENGINE, QUANT, DTYPE = "llama.cpp", "gguf-f16", "float16"


def scheduler_config():
    """llama-server's scheduling limits as the simulator sees them (slots own n_ctx / parallel cells each)."""
    from infer_advisor.engines import engine_profile
    from infer_advisor.simulate import SchedulerConfig

    return SchedulerConfig(max_num_seqs=SLOTS, max_num_batched_tokens=BATCH, kv_capacity_tokens=SLOTS * CTX_PER_SLOT,
                           kv_admission="reserve", block_size=engine_profile(ENGINE).block_size)


def calibrated_step(calibration: Path, model_dir: Path):
    """The step-time model `plan` builds for this model on this CPU, with the calibration's coefficients."""
    from infer_advisor.estimate.calibrate import load_calibration
    from infer_advisor.estimate.fit import with_coefficients
    from infer_advisor.estimate.speed_data import engine_speeds
    from infer_advisor.estimate.step_time import build_step_model
    from infer_advisor.hardware import resolve_hardware
    from infer_advisor.model_facts import resolve_model

    cal = load_calibration(calibration)
    profile = with_coefficients(engine_speeds(apply_fitted=False).engines[ENGINE], cal.coefficients, kind="calibrated",
                                source=str(calibration))
    hw = resolve_hardware("cpu")
    return build_step_model(resolve_model(str(model_dir)), gpu=None, engine=ENGINE, quantization=QUANT, dtype=DTYPE,
                            profile=profile, cpu_cores=hw.cpu.cores if hw.cpu else None)


@dataclass
class LinearStep:
    """A step of ``decode`` sequences and ``prefill_tokens`` prompt tokens lasts ``a + b x decode + c x prefill_tokens``.

    Not the planner's model: a diagnostic with the simulator's step interface, fitted to the server's own points.
    """

    a: float
    b: float
    c: float

    def step_seconds(self, decode, decode_context, prefill_tokens=0, prefill_pairs=0.0, chunks=0, completes=0,
                     window_context=None) -> float:
        return self.a + self.b * decode + self.c * prefill_tokens

    def decode_seconds(self, batch, context_sum) -> float:
        return self.step_seconds(batch, context_sum)


def closed_points(bench_json: Path) -> list[dict]:
    """(concurrency, mean prompt tokens, output tokens, TTFT p50, TPOT p50) of each closed-loop level."""
    from infer_advisor.bench import BenchReport

    rep = BenchReport.model_validate_json(bench_json.read_text())
    return [dict(batch=lv.concurrency, input_tokens=round(lv.input_tokens_mean or INPUT_WORDS), output_tokens=OUTPUT_TOKENS,
                 ttft_s=lv.ttft_s.p50, tpot_s=lv.tpot_s.p50) for lv in rep.levels if lv.tpot_s is not None]


def fit_linear_step(points: list[dict]) -> LinearStep:
    """a, b, c minimising the simulator's log error on the closed-loop points (estimate/fit.py's loss and optimiser)."""
    from infer_advisor.estimate.fit import nelder_mead, soft_l1
    from infer_advisor.simulate import LengthSpec, Workload, simulate

    cfg = scheduler_config()

    def errors(x: list[float]) -> list[float]:
        step = LinearStep(*x)
        out = []
        for p in points:
            w = Workload(input_tokens=LengthSpec(mean=p["input_tokens"]), output_tokens=LengthSpec(mean=p["output_tokens"]),
                         arrival="closed", concurrency=p["batch"])
            res = simulate(step, w, cfg, requests=max(4 * p["batch"], 16), warmup_fraction=0.25)
            out += [res.ttft_s.p50 / p["ttft_s"] - 1, res.tpot_s.p50 / p["tpot_s"] - 1]
        return out

    best = nelder_mead(lambda x: soft_l1(errors(x)), [0.002, 0.005, 0.001], [0.0, 0.0, 0.0], [0.05, 0.05, 0.01], iters=200)
    return LinearStep(*(float(f"{v:.4g}") for v in best))


def simulate_rate(step, rate: float, input_tokens: float, requests: int) -> dict:
    """The simulator at one Poisson rate, the same request count as measured: medians over SIM_SEEDS."""
    from infer_advisor.simulate import LengthSpec, Workload, simulate

    cfg = scheduler_config()
    runs = []
    for seed in SIM_SEEDS:
        w = Workload(input_tokens=LengthSpec(mean=input_tokens), output_tokens=LengthSpec(mean=OUTPUT_TOKENS), rate=rate)
        runs.append(simulate(step, w, cfg, requests=requests, warmup_fraction=0.0, seed=seed))

    def med(f):
        return statistics.median(f(r) for r in runs)

    return dict(
        ttft_p50=med(lambda r: r.ttft_s.p50), ttft_p90=med(lambda r: r.ttft_s.p90),
        itl_p50=med(lambda r: r.itl_s.p50), itl_p90=med(lambda r: r.itl_s.p90),
        tokens_per_s=med(lambda r: r.output_tokens_per_s), requests_per_s=med(lambda r: r.requests_per_s),
        saturated=sum(r.saturated for r in runs) * 2 > len(runs),
    )


def sim_saturation_rate(step, input_tokens: float, requests_at, lo: float, hi: float, tol: float = 0.01) -> float:
    """Highest rate whose queue does not grow in the simulator (majority of SIM_SEEDS), by bisection in [lo, hi].

    ``requests_at(rate)``: the request count a measured level at that rate sends (the flag depends on the run length).
    """
    def sat(r: float) -> bool:
        return simulate_rate(step, r, input_tokens, requests_at(r))["saturated"]

    if sat(lo):
        return lo
    while not sat(hi):
        hi *= 1.5
    while hi - lo > tol * lo:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if sat(mid) else (mid, hi)
    return lo


def measured_level(lv) -> dict:
    return dict(
        rate=lv.request_rate, achieved_rate=lv.achieved_rate_per_s, requests=lv.num_requests,
        ttft_p50=lv.ttft_s.p50, ttft_p90=lv.ttft_s.p90, itl_p50=lv.itl_s.p50, itl_p90=lv.itl_s.p90,
        tokens_per_s=lv.output_tokens_per_s_aggregate, requests_per_s=lv.requests_per_s, saturated=lv.saturated,
        input_tokens=lv.input_tokens_mean,
    )


def error_pct(sim: float, meas: float) -> float:
    return (sim - meas) / meas * 100.0


METRICS = ("ttft_p50", "ttft_p90", "itl_p50", "itl_p90", "tokens_per_s")
TARGETS = {"ttft_p50": 15.0, "itl_p50": 15.0, "ttft_p90": 25.0, "itl_p90": 25.0}  # issue 10: below saturation


def compare_rates(measured: list[dict], steps: dict) -> list[dict]:
    """One row per measured level: the measurement and each simulated column with its error in percent."""
    rows = []
    for m in measured:
        row = {"measured": m}
        for name, step in steps.items():
            s = simulate_rate(step, m["rate"], m["input_tokens"] or INPUT_WORDS, m["requests"])
            s["error_pct"] = {k: error_pct(s[k], m[k]) for k in METRICS}
            row[name] = s
        rows.append(row)
    return rows


def measured_saturation(levels: list[dict]) -> dict:
    """Highest measured rate whose queue did not grow, the lowest that grew, and the completion rate under overload."""
    ok = [m["rate"] for m in levels if m["saturated"] is False]
    grew = [m["rate"] for m in levels if m["saturated"]]
    over = [m for m in levels if m["saturated"]]
    return dict(highest_stable=max(ok) if ok else None, lowest_saturated=min(grew) if grew else None,
                capacity_requests_per_s=max(m["requests_per_s"] for m in over) if over else None)


# ---------------------------------------------------------------- running it


def _run(cmd: list[str], log) -> None:
    log("$ " + shlex.join(cmd))
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"})


def measure(out: Path, work: Path, rates: list[float], repeat: float | None, num_prompts: int, max_duration: float,
            closed_prompts: int, seed: int, log=print) -> dict:
    """Build, serve, bench closed and open loop, calibrate; every result file under ``out``. Returns the run's facts."""
    from tests.support.llama_server import build_capacity_model, build_llama_server, llama_server, server_command

    t0 = time.monotonic()
    binary = build_llama_server(log=log)
    gguf = build_capacity_model(work / "capacity-llama")
    model_dir = gguf.parent
    facts: dict = {"load_average_before": os.getloadavg(), "build_and_model_s": round(time.monotonic() - t0, 1)}
    server_log = work / "llama-server.log"
    with llama_server(binary, gguf, parallel=SLOTS, ctx_per_slot=CTX_PER_SLOT, batch=BATCH, threads=THREADS,
                      alias=str(model_dir), log_file=server_log) as url:
        port = url.rsplit(":", 1)[1]
        facts["server_command"] = shlex.join(server_command(binary, gguf, port=int(port), parallel=SLOTS, ctx_per_slot=CTX_PER_SLOT,
                                                            batch=BATCH, threads=THREADS, alias=str(model_dir)))
        common = ["--engine", "openai", "--url", url, "--workload", "throughput", "--input-tokens", str(INPUT_WORDS),
                  "--output-tokens", str(OUTPUT_TOKENS), "--seed", str(seed), "--no-progress", "--force"]
        bench = [sys.executable, "-m", "infer_advisor.cli", "bench"]
        _run(bench + common + ["--concurrency", ",".join(map(str, CLOSED_CONCURRENCY)), "--num-prompts", str(closed_prompts),
                               "--warmup", "1", "--out", str(out / "closed")], log)
        _run([sys.executable, "-m", "infer_advisor.cli", "calibrate", "--engine", ENGINE, "--from", str(out / "closed" / "bench.json"),
              "--gpu", "cpu", "--max-num-seqs", str(SLOTS), "--quantization", QUANT, "--dtype", DTYPE,
              "--out", str(out / "calibration.json"), "--force"], log)
        _run(bench + common + ["--request-rate", ",".join(f"{r:g}" for r in rates), "--num-prompts", str(num_prompts),
                               "--max-duration", f"{max_duration:g}", "--warmup", "1", "--out", str(out / "open")], log)
        if repeat is not None:
            _run(bench + common + ["--request-rate", f"{repeat:g}", "--num-prompts", str(num_prompts),
                                   "--max-duration", f"{max_duration:g}", "--warmup", "1", "--out", str(out / "open-repeat")], log)
    facts["load_average_after"] = os.getloadavg()
    facts["model_dir"] = str(model_dir)
    return facts


def analyse(out: Path, model_dir: Path) -> dict:
    """Simulate every measured rate with the calibrated and the linear step model; the comparison as a dict."""
    from infer_advisor.bench import BenchReport

    cal_step = calibrated_step(out / "calibration.json", model_dir)
    points = closed_points(out / "closed" / "bench.json")
    lin = fit_linear_step(points)
    steps = {"simulated_calibrated": cal_step, "simulated_linear": lin}
    runs = {}
    for name in ("open", "open-repeat"):
        path = out / name / "bench.json"
        if path.exists():
            rep = BenchReport.model_validate_json(path.read_text())
            runs[name] = [measured_level(lv) for lv in rep.levels]
    measured = runs["open"]
    rows = compare_rates(measured, steps)
    repeat = compare_rates(runs["open-repeat"], steps) if "open-repeat" in runs else []
    sat = measured_saturation(measured)
    input_tokens = statistics.mean(m["input_tokens"] for m in measured if m["input_tokens"])
    count = {m["rate"]: m["requests"] for m in measured}

    def requests_at(rate: float) -> int:  # a level sends min(num_prompts, rate x max_duration) requests
        near = min(count, key=lambda r: abs(r - rate))
        return max(20, round(count[near] * (rate / near if count[near] < max(count.values()) else 1.0)))

    lo = min(count)
    sim_sat = {name: sim_saturation_rate(step, input_tokens, requests_at, lo, max(count)) for name, step in steps.items()}
    return {
        "closed_points": points,
        "linear_step": {"a_s": lin.a, "b_s_per_decode": lin.b, "c_s_per_prompt_token": lin.c},
        "calibration": json.loads((out / "calibration.json").read_text()),
        "rates": rows,
        "repeat": repeat,
        "saturation": {"measured": sat, "simulated_highest_stable": sim_sat},
    }


# ---------------------------------------------------------------- reporting


def _ms(v: float) -> str:
    return f"{v * 1e3:.0f}" if v >= 0.1 else f"{v * 1e3:.1f}"


def _cell(sim: dict, meas: dict, key: str) -> str:
    return f"{_ms(sim[key])} ({sim['error_pct'][key]:+.0f}%)"


def markdown(result: dict) -> str:
    """The comparison tables (measured, simulated with the calibrated step model, simulated with the linear step fit)."""
    lines = []
    sections = [("Open loop", result["rates"])] + ([("Repeat (same rate, same seed)", result["repeat"])] if result["repeat"] else [])
    for title, rows in sections:
        lines += [f"**{title}.** Times in ms; simulated columns give (simulated - measured) / measured.", "",
                  "| rate req/s (achieved) | reqs | queue grows (meas / cal / lin) | TTFT p50 meas | cal | lin | TTFT p90 meas | cal | lin "
                  "| ITL p50 meas | cal | lin | ITL p90 meas | cal | lin | tok/s meas | cal | lin |",
                  "|---" * 19 + "|"]
        for row in rows:
            m, c, li = row["measured"], row["simulated_calibrated"], row["simulated_linear"]
            flags = " / ".join("yes" if x else "no" for x in (m["saturated"], c["saturated"], li["saturated"]))
            cells = [f"{m['rate']:g} ({m['achieved_rate']:.2f})", str(m["requests"]), flags]
            for key in ("ttft_p50", "ttft_p90", "itl_p50", "itl_p90"):
                cells += [_ms(m[key]), _cell(c, m, key), _cell(li, m, key)]
            cells += [f"{m['tokens_per_s']:.1f}", f"{c['tokens_per_s']:.1f} ({c['error_pct']['tokens_per_s']:+.0f}%)",
                      f"{li['tokens_per_s']:.1f} ({li['error_pct']['tokens_per_s']:+.0f}%)"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    sat = result["saturation"]
    ms, ss = sat["measured"], sat["simulated_highest_stable"]
    lines += ["**Saturation.**", "", "| | highest rate whose queue does not grow (req/s) |", "|---|---:|",
              f"| measured | between {ms['highest_stable']} and {ms['lowest_saturated']} (the rates run) |",
              f"| simulated, calibrated step model | {ss['simulated_calibrated']:.2f} |",
              f"| simulated, linear step fit | {ss['simulated_linear']:.2f} |", ""]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rates"]
    rates = [r["measured"]["rate"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, label in ((axes[0], "ttft", "TTFT (ms)"), (axes[1], "itl", "inter-token latency (ms)")):
        for q, style in (("p50", "o"), ("p90", "s")):
            ax.plot(rates, [r["measured"][f"{key}_{q}"] * 1e3 for r in rows], style, color="black", label=f"measured {q}")
            ax.plot(rates, [r["simulated_calibrated"][f"{key}_{q}"] * 1e3 for r in rows], "-" + style, color="tab:blue", alpha=0.8,
                    fillstyle="none", label=f"simulated {q} (calibrated step model)")
            ax.plot(rates, [r["simulated_linear"][f"{key}_{q}"] * 1e3 for r in rows], "--" + style, color="tab:orange", alpha=0.8,
                    fillstyle="none", label=f"simulated {q} (linear step fit)")
        for rep in result["repeat"]:
            m = rep["measured"]
            ax.plot([m["rate"]] * 2, [m[f"{key}_p50"] * 1e3, m[f"{key}_p90"] * 1e3], "x", color="gray", label="repeat run (p50, p90)")
        ax.set_xlabel("request rate (req/s, Poisson)")
        ax.set_ylabel(label)
        if key == "ttft":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[1].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    fig.legend(seen.values(), seen.keys(), loc="lower center", ncol=4, fontsize=7)
    fig.suptitle(f"llama-server ({SLOTS} slots, -b {BATCH}, {THREADS} thread) on this 2-core CPU: measured vs simulated "
                 f"({INPUT_WORDS}-word prompts, {OUTPUT_TOKENS} output tokens)", fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "capacity")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "capacity-validation",
                    help="Where the model is built (not committed).")
    ap.add_argument("--rates", default="0.4,0.8,1.2,1.6,2.0,2.4", help="Open-loop request rates (req/s).")
    ap.add_argument("--repeat", type=float, default=1.2, help="A rate run a second time for the spread (0: none).")
    ap.add_argument("--num-prompts", type=int, default=300)
    ap.add_argument("--max-duration", type=float, default=150.0, help="Seconds of arrivals per rate.")
    ap.add_argument("--closed-prompts", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--analyse-only", action="store_true", help="Re-analyse the results already in --out.")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs" / "capacity_validation.png")
    args = ap.parse_args(argv)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "benchmarks/capacity_validation.py", *(argv if argv is not None else sys.argv[1:])])
    facts_path = out / "run.json"
    if args.analyse_only:
        facts = json.loads(facts_path.read_text())
    else:
        rates = [float(r) for r in args.rates.split(",") if r]
        facts = measure(out, args.work, rates, args.repeat or None, args.num_prompts, args.max_duration, args.closed_prompts, args.seed)
        facts.update(command=command, machine=platform.platform(), cpus=os.cpu_count(),
                     date=time.strftime("%Y-%m-%d %H:%M:%S %z"))
        facts_path.write_text(json.dumps(facts, indent=2) + "\n")
    result = analyse(out, Path(facts["model_dir"]))
    result["run"] = facts
    (out / "validation.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    (out / "validation.md").write_text(f"Command: `{facts['command']}`\n\n{table}\n")
    print(table)
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
