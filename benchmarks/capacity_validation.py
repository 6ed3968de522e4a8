"""The capacity simulator against a real continuous-batching server: llama.cpp's llama-server on this CPU.

    PYTHONPATH=. python benchmarks/capacity_validation.py --rates 0.5,1,1.5,2,2.5,3 --repeat 1.5

1. build (once, cached) llama.cpp's C++ ``llama-server`` and a random 58M-parameter Llama as f16 GGUF
   (tests/support/llama_server.py), and serve it with N = 4 slots (``--parallel 4``), ``-c 4 x 256``, ``-b 512``;
2. closed-loop ``infer-advisor bench`` at concurrency 1, 2, 4 (synthetic prompts of 128 words, 64 output tokens);
3. ``infer-advisor calibrate --engine llama.cpp --from closed/bench.json --gpu cpu --max-num-seqs 4``: the step-time
   model's CPU coefficients fitted through the simulator, exactly as `plan` would use them;
4. open-loop ``infer-advisor bench --request-rate ...`` (Poisson arrivals, fixed seed) from light load to past
   saturation, one rate repeated to show the run-to-run spread; then llama-server's own step timings (``probe_steps``);
5. :func:`simulate` at each rate with the calibrated step model and the server's scheduler limits
   (``SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=512, kv_capacity_tokens=4 x 256, kv_admission="reserve",
   block_size=1)``), the same Poisson rate, lengths and request count;
6. a table per rate (measured vs simulated p50/p90 TTFT, p50/p90 ITL, throughput, saturation) and the plot.

Two diagnostics separate the error sources: every level is also simulated with the measured arrivals replayed (the
same send times and prompt lengths: no Poisson sampling difference), and with llama-server's own step times
(:class:`ServerStep`, from the server's timings of decode steps at 1-4 busy slots and of two prefills) instead of
the operator model, so that what is left is the scheduler. Every figure in the output says which it is: measured
(bench), simulated with the calibrated step model, or simulated with the server's own step times.
"""

from __future__ import annotations

import argparse
import gzip
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
    from infer_advisor.engines.profiles import engine_profile
    from infer_advisor.simulate import SchedulerConfig

    return SchedulerConfig(max_num_seqs=SLOTS, max_num_batched_tokens=BATCH, kv_capacity_tokens=SLOTS * CTX_PER_SLOT,
                           kv_admission="reserve", block_size=engine_profile(ENGINE).block_size)


def calibrated_step(calibration: Path, model_dir: Path):
    """The step-time model `plan` builds for this model on this CPU, with the calibration's coefficients."""
    from infer_advisor.estimate.calibration import load_calibration
    from infer_advisor.estimate.fit import with_coefficients
    from infer_advisor.estimate.speed_data import engine_speeds
    from infer_advisor.estimate.step_time import build_step_model
    from infer_advisor.hardware import resolve_hardware
    from infer_advisor.model_facts import resolve_model

    cal = load_calibration(calibration)
    # On the stated profile, as `calibrate` fitted them and `plan --calibration` applies them (estimate/speed.py).
    profile = with_coefficients(engine_speeds(apply_fitted=False).engines[ENGINE], cal.coefficients, kind="measured",
                                source=str(calibration))
    hw = resolve_hardware("cpu")
    return build_step_model(resolve_model(str(model_dir)), gpu=None, engine=ENGINE, quantization=QUANT, dtype=DTYPE,
                            profile=profile, cpu_cores=hw.cpu.cores if hw.cpu else None,
                            cpu_simd=hw.cpu.simd if hw.cpu else None)


def _between(points: dict[int, float], n: int) -> float:
    """``points`` at ``n``: the value itself, or the straight line between the nearest measured counts around it."""
    if n in points:
        return points[n]
    lo, hi = max(k for k in points if k < n), min(k for k in points if k > n)
    return points[lo] + (points[hi] - points[lo]) * (n - lo) / (hi - lo)


@dataclass
class ServerStep:
    """llama-server's own step times as the simulator's step model: a decode-only step of n sequences lasts what the
    server reported for n slots decoding together; a step with prompt tokens lasts a prefill of all its rows
    (``prefill_fixed_s + prefill_s_per_row x (prompt tokens + decodes)``, one ggml graph).

    Not the planner's model: a diagnostic that takes the operator model's shape out of the comparison, so that what
    is left is the scheduler (admission into slots, prefill in the token budget beside the decodes, queueing).
    """

    decode_s: dict[int, float]
    prefill_fixed_s: float
    prefill_s_per_row: float
    pp: int = 1  # one pipeline stage: the simulator asks every step model for its stage count (simulate/pipeline.py)
    request_overhead_s: float = 0.0  # host time per request before it is queued: none (the server timings alone)

    @classmethod
    def from_probe(cls, probe: dict, streamed_tpot_s: dict[int, float] | None = None) -> ServerStep:
        """Decode steps from the server's own timings, or, with ``streamed_tpot_s`` (closed-loop TPOT p50 by
        concurrency), as a streaming client saw them on the same machine (the server's timings leave out the cost of
        sending each token, which depends on the host); counts between two measured ones are interpolated."""
        (n0, ms0), (n1, ms1) = sorted(probe["prefill_points"])
        per_row = (ms1 - ms0) / (n1 - n0) / 1e3
        decode = {int(n): ms / 1e3 for n, ms in probe["decode_step_ms_by_sequences"].items()}
        if streamed_tpot_s:
            decode = {n: _between(streamed_tpot_s, n) for n in decode}
        return cls(decode, ms0 / 1e3 - n0 * per_row, per_row)

    def step_seconds(self, decode, decode_context, prefill_tokens=0, prefill_pairs=0.0, chunks=0, completes=0,
                     window_context=None) -> float:
        if prefill_tokens:
            return self.prefill_fixed_s + self.prefill_s_per_row * (prefill_tokens + decode)
        return self.decode_s[min(max(decode, 1), max(self.decode_s))]

    def decode_seconds(self, batch, context_sum) -> float:
        return self.step_seconds(batch, context_sum)


def closed_points(bench_json: Path) -> list[dict]:
    """(concurrency, mean prompt tokens, output tokens, TTFT p50, TPOT p50) of each closed-loop level."""
    from infer_advisor.bench import BenchReport

    rep = BenchReport.model_validate_json(bench_json.read_text())
    return [dict(batch=lv.concurrency, input_tokens=round(lv.input_tokens_mean or INPUT_WORDS), output_tokens=OUTPUT_TOKENS,
                 ttft_s=lv.ttft_s.p50, tpot_s=lv.tpot_s.p50) for lv in rep.levels if lv.tpot_s is not None]


def _summary(results) -> dict:
    """Medians over simulator runs of the figures the table compares."""

    def med(f):
        return statistics.median(f(r) for r in results)

    return dict(
        ttft_p50=med(lambda r: r.ttft_s.p50), ttft_p90=med(lambda r: r.ttft_s.p90),
        itl_p50=med(lambda r: r.itl_s.p50), itl_p90=med(lambda r: r.itl_s.p90),
        tokens_per_s=med(lambda r: r.output_tokens_per_s), requests_per_s=med(lambda r: r.requests_per_s),
        saturated=sum(bool(r.saturated) for r in results) * 2 > len(results),
    )


def simulate_rate(step, rate: float, input_tokens: float, requests: int) -> dict:
    """What a planner does: Poisson arrivals at ``rate``, fixed lengths, ``requests`` of them; medians over SIM_SEEDS."""
    from infer_advisor.simulate import LengthSpec, Workload, simulate

    cfg = scheduler_config()
    w = Workload(input_tokens=LengthSpec(mean=input_tokens), output_tokens=LengthSpec(mean=OUTPUT_TOKENS), rate=rate)
    return _summary([simulate(step, w, cfg, requests=requests, warmup_fraction=0.0, seed=seed) for seed in SIM_SEEDS])


def replay(step, samples, tmp: Path) -> dict:
    """The simulator fed the measured requests themselves: their send times and prompt lengths (a trace), so the
    Poisson sample is the same on both sides and only the step model and the scheduler can differ."""
    from infer_advisor.simulate import Workload, simulate

    ordered = sorted(samples, key=lambda s: s.sent_offset_s)
    path = tmp / f"trace-{ordered[0].request_rate:g}.jsonl"
    path.write_text("".join(json.dumps({"input_tokens": s.input_tokens or INPUT_WORDS, "output_tokens": s.output_tokens,
                                        "arrival_s": s.sent_offset_s}) + "\n" for s in ordered))
    w = Workload(trace=path, arrival="trace")
    return _summary([simulate(step, w, scheduler_config(), requests=len(ordered), warmup_fraction=0.0)])


def sim_saturation_rate(step, input_tokens: float, requests_at, lo: float, hi: float, tol: float = 0.01) -> float:
    """Highest rate whose queue does not grow in the simulator (majority of SIM_SEEDS), by bisection in [lo, hi].

    ``requests_at(rate)``: the requests a measured level at that rate sends (the queue test depends on the run length).
    """
    def sat(r: float) -> bool:
        return simulate_rate(step, r, input_tokens, requests_at(r))["saturated"]

    if sat(lo):
        return lo
    while not sat(hi):
        lo, hi = hi, hi * 1.5
    while hi - lo > tol * lo:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if sat(mid) else (mid, hi)
    return lo


def measured_level(lv) -> dict:
    return dict(
        rate=lv.request_rate, achieved_rate=lv.achieved_rate_per_s, requests=lv.num_requests,
        ttft_p50=lv.ttft_s.p50, ttft_p90=lv.ttft_s.p90, itl_p50=lv.itl_s.p50, itl_p90=lv.itl_s.p90,
        tokens_per_s=lv.output_tokens_per_s_aggregate, requests_per_s=lv.requests_per_s, saturated=lv.saturated,
        input_tokens=lv.input_tokens_mean, max_in_flight=lv.concurrency,
        send_lateness_p99=lv.send_lateness_s.p99 if lv.send_lateness_s else None,
    )


def error_pct(sim: float, meas: float) -> float:
    return (sim - meas) / meas * 100.0


METRICS = ("ttft_p50", "ttft_p90", "itl_p50", "itl_p90", "tokens_per_s")
TARGETS = {"ttft_p50": 15.0, "itl_p50": 15.0, "ttft_p90": 25.0, "itl_p90": 25.0}  # issue 10, below saturation


def compare_report(report, steps: dict, tmp: Path) -> list[dict]:
    """One row per open-loop level of ``report``: the measurement and every simulated column with its error (%).

    Columns: ``poisson_<step>`` (the same rate, lengths and request count, Poisson arrivals drawn by the simulator:
    what a planner predicts) and ``replay_<step>`` (the measured arrivals replayed)."""
    rows = []
    for lv in report.levels:
        m = measured_level(lv)
        samples = [s for s in report.requests if s.request_rate == lv.request_rate]
        row: dict = {"measured": m}
        for name, step in steps.items():
            for kind, sim in (("poisson", simulate_rate(step, m["rate"], m["input_tokens"] or INPUT_WORDS, m["requests"])),
                              ("replay", replay(step, samples, tmp))):
                sim["error_pct"] = {k: error_pct(sim[k], m[k]) for k in METRICS}
                row[f"{kind}_{name}"] = sim
        rows.append(row)
    return rows


def measured_saturation(levels: list[dict]) -> dict:
    """The highest measured rate whose queue did not grow, the lowest that grew, and the completion rate under overload."""
    ok = [m["rate"] for m in levels if m["saturated"] is False]
    grew = [m["rate"] for m in levels if m["saturated"]]
    over = [m for m in levels if m["saturated"]]
    return dict(highest_stable=max(ok) if ok else None, lowest_saturated=min(grew) if grew else None,
                capacity_requests_per_s=max(m["requests_per_s"] for m in over) if over else None)


# ---------------------------------------------------------------- running it


def _run(cmd: list[str], log) -> None:
    log("$ " + shlex.join(cmd))
    subprocess.run(cmd, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"})


async def _concurrent_timings(url: str, n: int, words: int, tokens: int, seed: int) -> list[dict]:
    """llama-server's own ``timings`` of ``n`` completions sent at once (``words``-word prompts, ``tokens`` each)."""
    import asyncio

    import httpx

    from infer_advisor.bench.workload import synthetic_text

    async def one(client, i: int) -> dict:
        body = {"prompt": synthetic_text(words, seed + i), "max_tokens": tokens, "temperature": 0.0, "ignore_eos": True}
        return (await client.post("/v1/completions", json=body)).json()["timings"]

    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        return await asyncio.gather(*(one(client, i) for i in range(n)))


def probe_steps(url: str, repeats: int = 3) -> dict:
    """llama-server's own timings of its steps: decode with 1-4 slots busy (8-word prompts, started together; the
    server's predicted_per_token_ms is the step time a slot sees) and the prefill of a short and a benchmark-sized
    prompt (prompt_ms). Medians of ``repeats``."""
    import asyncio

    def run(n: int, words: int, tokens: int, seed: int):
        return _concurrent_timings(url, n, words, tokens, seed)

    decode = {}
    for n in range(1, SLOTS + 1):
        runs = [statistics.median(t["predicted_per_token_ms"] for t in asyncio.run(run(n, 8, OUTPUT_TOKENS, 100 * r)))
                for r in range(repeats)]
        decode[n] = round(statistics.median(runs), 2)
    points = []
    for words in (8, INPUT_WORDS):
        timings = [asyncio.run(run(1, words, 1, 7 + r))[0] for r in range(repeats)]
        points.append((timings[0]["prompt_n"], round(statistics.median(t["prompt_ms"] for t in timings), 1)))
    return {"decode_step_ms_by_sequences": decode, "prefill_points": points,
            "source": "llama-server's own timings: predicted_per_token_ms (decode), prompt_n and prompt_ms (prefill)"}


def measure(out: Path, work: Path, rates: list[float], repeat: float | None, num_prompts: int, max_duration: float,
            closed_prompts: int, seed: int, log=print) -> dict:
    """Build, serve, bench closed and open loop, calibrate; every result file under ``out``. Returns the run's facts."""
    from tests.support.llama_server import build_capacity_model, build_llama_server, llama_server, server_command

    t0 = time.monotonic()
    binary = build_llama_server(log=log)
    gguf = build_capacity_model(work / "capacity-llama")
    # The model's config.json beside the results, and the server's name for the model: bench.json records that name,
    # so `calibrate --from closed/bench.json` (and the analysis, and `plan`) resolve the model's facts from it.
    (out / "model").mkdir(exist_ok=True)
    (out / "model" / "config.json").write_text((gguf.parent / "config.json").read_text())
    model_dir = out / "model"
    alias = str(model_dir.relative_to(ROOT)) if model_dir.is_relative_to(ROOT) else str(model_dir)
    facts: dict = {"load_average_before": os.getloadavg(), "build_and_model_s": round(time.monotonic() - t0, 1)}
    server_log = work / "llama-server.log"
    with llama_server(binary, gguf, parallel=SLOTS, ctx_per_slot=CTX_PER_SLOT, batch=BATCH, threads=THREADS,
                      alias=alias, log_file=server_log) as url:
        port = url.rsplit(":", 1)[1]
        facts["server_command"] = shlex.join(server_command(binary, gguf, port=int(port), parallel=SLOTS, ctx_per_slot=CTX_PER_SLOT,
                                                            batch=BATCH, threads=THREADS, alias=alias))
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
        facts["server_step_times"] = probe_steps(url)
    facts["load_average_after"] = os.getloadavg()
    return facts


def _bench_json(folder: Path) -> str:
    """A level's bench.json, or the bench.json.gz it is committed as (the open-loop reports are kept gzipped so that
    the working tree the GPU calls carry stays under its 64 MiB)."""
    plain = folder / "bench.json"
    return plain.read_text() if plain.exists() else gzip.decompress((folder / "bench.json.gz").read_bytes()).decode()


def analyse(out: Path, model_dir: Path) -> dict:
    """Simulate every measured level with the calibrated step model and the server's own step times; as a dict."""
    import tempfile

    from infer_advisor.bench import BenchReport

    cal_step = calibrated_step(out / "calibration.json", model_dir)
    points = closed_points(out / "closed" / "bench.json")
    probe = json.loads((out / "run.json").read_text())["server_step_times"]
    server = ServerStep.from_probe(probe)
    steps = {"calibrated": cal_step, "server": server}
    reports = {name: BenchReport.model_validate_json(_bench_json(out / name)) for name in ("open", "open-repeat")
               if (out / name / "bench.json").exists() or (out / name / "bench.json.gz").exists()}
    with tempfile.TemporaryDirectory() as tmp:
        rows = {name: compare_report(rep, steps, Path(tmp)) for name, rep in reports.items()}
    measured = [r["measured"] for r in rows["open"]]
    request = reports["open"].metadata.request
    num_prompts, max_duration = request.get("num_prompts"), request.get("max_duration")
    input_tokens = statistics.mean(m["input_tokens"] for m in measured if m["input_tokens"])

    def requests_at(rate: float) -> int:  # what an open-loop level at `rate` sends: the bench's two bounds
        n = num_prompts or 100
        return max(20, min(n, round(rate * max_duration) + 1) if max_duration else n)

    lo = min(m["rate"] for m in measured)
    sim_sat = {name: sim_saturation_rate(step, input_tokens, requests_at, lo, max(m["rate"] for m in measured))
               for name, step in steps.items()}
    over = [r for r in rows["open"] if r["measured"]["saturated"]]
    capacity = {"measured": max((r["measured"]["requests_per_s"] for r in over), default=None)}
    for name in steps:
        capacity[f"poisson_{name}"] = max((r[f"poisson_{name}"]["requests_per_s"] for r in over), default=None)
    return {
        "closed_points": points,
        "server_step_times": probe,
        "calibrated_step_ms": {"decode_by_sequences": {n: round(cal_step.decode_seconds(n, n * (INPUT_WORDS + 20 + OUTPUT_TOKENS / 2)) * 1e3, 2)
                                                       for n in range(1, SLOTS + 1)},
                               "prefill": [(t, round(cal_step.step_seconds(0, 0.0, t, t * (t + 1) / 2, 1, 1) * 1e3, 1))
                                           for t, _ in probe["prefill_points"]]},
        "calibration": json.loads((out / "calibration.json").read_text()),
        "rates": rows["open"],
        "repeat": rows.get("open-repeat", []),
        "saturation": {"measured": measured_saturation(measured), "simulated_highest_stable": sim_sat,
                       "requests_per_s_at_overload": capacity},
    }


# ---------------------------------------------------------------- reporting


def _ms(v: float) -> str:
    return f"{v * 1e3:.0f}" if v >= 0.1 else f"{v * 1e3:.1f}"


def _with_error(sim: dict, key: str) -> str:
    value = f"{sim[key]:.1f}" if key == "tokens_per_s" else _ms(sim[key])
    return f"{value} ({sim['error_pct'][key]:+.0f}%)"


def _yes(flag) -> str:
    return {True: "yes", False: "no", None: "-"}[flag]


def markdown(result: dict) -> str:
    """The comparison tables: measured vs the planner's simulation, then the replay that separates the error sources."""
    lines: list[str] = []
    sections = [("Measured vs simulated (calibrated step model, Poisson arrivals at the same rate)", result["rates"])]
    if result["repeat"]:
        sections.append(("Repeat run (same rate, same seed, same server)", result["repeat"]))
    for title, rows in sections:
        lines += [f"**{title}.** Times in ms; in brackets (simulated - measured) / measured.", "",
                  "| rate req/s (achieved) | reqs | queue grows meas / sim | TTFT p50 meas | sim | TTFT p90 meas | sim "
                  "| ITL p50 meas | sim | ITL p90 meas | sim | tok/s meas | sim |",
                  "|---:" * 13 + "|"]
        for row in rows:
            m, c = row["measured"], row["poisson_calibrated"]
            cells = [f"{m['rate']:g} ({m['achieved_rate']:.2f})", str(m["requests"]), f"{_yes(m['saturated'])} / {_yes(c['saturated'])}"]
            for key in ("ttft_p50", "ttft_p90", "itl_p50", "itl_p90"):
                cells += [_ms(m[key]), _with_error(c, key)]
            cells += [f"{m['tokens_per_s']:.1f}", _with_error(c, "tokens_per_s")]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["**Where the error comes from: the measured arrivals replayed** (same send times and prompt lengths), with the "
              "calibrated step model and with llama-server's own step times (ServerStep). Error in % against the measurement.", "",
              "| rate req/s | TTFT p50 cal | server | TTFT p90 cal | server | ITL p50 cal | server | ITL p90 cal | server | tok/s cal | server |",
              "|---:" * 11 + "|"]
    for row in result["rates"]:
        cells = [f"{row['measured']['rate']:g}"]
        for key in METRICS:
            cells += [f"{row[f'replay_{n}']['error_pct'][key]:+.0f}" for n in ("calibrated", "server")]
        lines.append("| " + " | ".join(cells) + " |")
    sat = result["saturation"]
    ms, ss, cap = sat["measured"], sat["simulated_highest_stable"], sat["requests_per_s_at_overload"]
    band = f"between {ms['highest_stable']:g} and {ms['lowest_saturated']:g}" if ms["highest_stable"] and ms["lowest_saturated"] else str(ms)
    lines += ["", "**Saturation.** The highest rate whose queue does not grow (the same test on both sides), and the "
              "requests completed per second at the overloaded rates (the server's capacity).", "",
              "| | highest stable rate (req/s) | req/s served when overloaded |", "|---|---:|---:|",
              f"| measured | {band} (rates run) | {cap['measured']:.2f} |" if cap["measured"] else f"| measured | {band} | - |",
              f"| simulated, calibrated step model | {ss['calibrated']:.2f} | {cap['poisson_calibrated'] or float('nan'):.2f} |",
              f"| simulated, llama-server's own step times | {ss['server']:.2f} | {cap['poisson_server'] or float('nan'):.2f} |", ""]
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rates"]
    rates = [r["measured"]["rate"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, key, label in ((axes[0], "ttft", "TTFT (ms, log scale)"), (axes[1], "itl", "inter-token latency (ms)")):
        for q, marker in (("p50", "o"), ("p90", "s")):
            ax.plot(rates, [r["measured"][f"{key}_{q}"] * 1e3 for r in rows], marker, color="black", label=f"measured {q}")
            ax.plot(rates, [r["poisson_calibrated"][f"{key}_{q}"] * 1e3 for r in rows], "-" + marker, color="tab:blue",
                    fillstyle="none", label=f"simulated {q}, calibrated step model")
            ax.plot(rates, [r["replay_server"][f"{key}_{q}"] * 1e3 for r in rows], ":" + marker, color="tab:orange",
                    fillstyle="none", label=f"simulated {q}, server's own step times, measured arrivals")
        for rep in result["repeat"]:
            m = rep["measured"]
            ax.plot([m["rate"]] * 2, [m[f"{key}_p50"] * 1e3, m[f"{key}_p90"] * 1e3], "x", color="gray", markersize=8,
                    label="repeat run (p50, p90)")
        ax.set_xlabel("request rate (req/s, Poisson)")
        ax.set_ylabel(label)
        if key == "ttft":
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    handles, labels = axes[1].get_legend_handles_labels()
    seen = dict(zip(labels, handles))
    fig.legend(seen.values(), seen.keys(), loc="lower center", ncol=3, fontsize=7)
    fig.suptitle(f"llama-server ({SLOTS} slots, -b {BATCH}, {THREADS} thread) on a 2-core CPU: measured vs simulated "
                 f"({INPUT_WORDS}-word prompts, {OUTPUT_TOKENS} output tokens)", fontsize=9)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "capacity")
    ap.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "capacity-validation",
                    help="Where the model is built (not committed).")
    ap.add_argument("--rates", default="0.5,1,1.5,2,2.5,3", help="Open-loop request rates (req/s).")
    ap.add_argument("--repeat", type=float, default=1.5, help="A rate run a second time for the spread (0: none).")
    ap.add_argument("--num-prompts", type=int, default=300)
    ap.add_argument("--max-duration", type=float, default=150.0, help="Seconds of arrivals per rate.")
    ap.add_argument("--closed-prompts", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--analyse-only", action="store_true", help="Re-analyse the results already in --out.")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs" / "capacity_validation.png")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    facts_path = out / "run.json"
    if args.analyse_only:
        facts = json.loads(facts_path.read_text())
    else:
        command = shlex.join(["python", "benchmarks/capacity_validation.py", *(argv if argv is not None else sys.argv[1:])])
        rates = [float(r) for r in args.rates.split(",") if r]
        started = time.strftime("%Y-%m-%d %H:%M:%S %z")
        facts = measure(out, args.work, rates, args.repeat or None, args.num_prompts, args.max_duration, args.closed_prompts,
                        args.seed)
        facts.update(command=command, machine=platform.platform(), cpus=os.cpu_count(), started=started,
                     finished=time.strftime("%Y-%m-%d %H:%M:%S %z"))
        facts_path.write_text(json.dumps(facts, indent=2) + "\n")
    result = analyse(out, out / "model")
    result["run"] = facts
    (out / "validation.json").write_text(json.dumps(result, indent=2) + "\n")
    table = markdown(result)
    (out / "validation.md").write_text(f"Command: `{facts['command']}` ({facts.get('started', '')})\n\n{table}\n")
    print(table)
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
