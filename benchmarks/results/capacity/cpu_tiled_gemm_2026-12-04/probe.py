"""Diagnostic: closed bench + calibrate + the server's own steps + the calibrated model's steps (cpustep)."""
import json, sys, time, os
from pathlib import Path
sys.path[:0] = [os.getcwd(), os.getcwd() + "/src"]
from benchmarks.capacity_validation import *
from benchmarks.capacity_validation import _concurrent_timings
from infer_advisor.bench import bench
from infer_advisor.cli import main
from infer_advisor.estimate.step_time import StepShape
from tests.support.llama_server import build_capacity_model, build_llama_server, llama_server

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
binary = build_llama_server()
gguf = build_capacity_model(out / "capacity-llama")
res = {}
with llama_server(binary, gguf, parallel=SLOTS, ctx_per_slot=CTX_PER_SLOT, batch=BATCH, threads=THREADS,
                  alias=str(gguf.parent), log_file=out / "server.log") as url:
    common = dict(url=url, workload="throughput", input_tokens=INPUT_WORDS, output_tokens=OUTPUT_TOKENS, warmup=1, progress=False)
    bench("openai", concurrency=CLOSED_CONCURRENCY, num_prompts=8, out=out / "closed", **common)
    res["probe"] = probe_steps(url, repeats=3)
    # extra prefill points
    import asyncio
    pts = []
    for words in (8, 32, 64, 128, 200):
        t = [asyncio.run(_concurrent_timings(url, 1, words, 1, 7 + r))[0] for r in range(3)]
        pts.append((t[0]["prompt_n"], sorted(x["prompt_ms"] for x in t)[1]))
    res["prefill_curve"] = pts
res["closed"] = closed_points(out / "closed" / "bench.json")
main(["calibrate", "--engine", ENGINE, "--from", str(out / "closed" / "bench.json"), "--gpu", "cpu", "--max-num-seqs", str(SLOTS),
      "--quantization", QUANT, "--dtype", DTYPE, "--out", str(out / "cal.json")])
cal = json.loads((out / "cal.json").read_text())
res["coefficients"] = cal["coefficients"]; res["fit_err"] = cal.get("fit_median_abs_error")
step = calibrated_step(out / "cal.json", gguf.parent)
ctx = 150 + 32
model = {}
for n in (1, 2, 3, 4):
    model[f"decode{n}"] = {k: round(v * 1e3, 3) for k, v in step.terms(StepShape(decode=n, decode_context=n * ctx)).items() if v}
for n, _ in res["prefill_curve"]:
    model[f"prefill{n}"] = round(step.step_seconds(0, 0, n, n * (n + 1) / 2, 1, 1) * 1e3, 2)
res["model_ms"] = model
print(json.dumps(res, indent=1))
(out / "res.json").write_text(json.dumps(res, indent=1))
