"""Old vs new CPU step model on the SAME measured runs: calibrate on closed/bench.json, simulate the open levels."""
import json, sys, tempfile
from pathlib import Path
from benchmarks.capacity_validation import *
from infer_advisor.bench import BenchReport
from infer_advisor.cli import main
from infer_advisor.estimate.step_time import StepShape
import infer_advisor, contextlib, io
print("code:", infer_advisor.__file__)
for run in sys.argv[1:]:
    runs, model_dir = Path(run) / "capacity-runs0", Path(run) / "capacity-model0" / "capacity-llama"
    tmp = Path(tempfile.mkdtemp())
    with contextlib.redirect_stdout(io.StringIO()):
        main(["calibrate", "--engine", ENGINE, "--from", str(runs / "closed" / "bench.json"), "--gpu", "cpu", "--max-num-seqs", str(SLOTS),
              "--quantization", QUANT, "--dtype", DTYPE, "--out", str(tmp / "cal.json")])
    cal = json.loads((tmp / "cal.json").read_text())
    step = calibrated_step(tmp / "cal.json", model_dir)
    rep = BenchReport.model_validate_json((runs / "open" / "bench.json").read_text())
    lv = [measured_level(l) for l in rep.levels]
    sims = [simulate_rate(step, m["rate"], m["input_tokens"] or INPUT_WORDS, m["requests"]) for m in lv]
    (l, ms, o), (sl, sm, so) = lv, sims
    err = lambda a, b: round((a / b - 1) * 100, 1)
    checks = {"light ttft (30%)": err(sl["ttft_p50"], l["ttft_p50"]), "light itl (60%)": err(sl["itl_p50"], l["itl_p50"]),
              "medium ttft (40%)": err(sm["ttft_p50"], ms["ttft_p50"]), "medium itl (40%)": err(sm["itl_p50"], ms["itl_p50"]),
              "overload req/s (30%)": err(so["requests_per_s"], o["requests_per_s"])}
    print(run, {k: round(v, 6) for k, v in cal["coefficients"].items()}, "fit", {k: round(v * 100, 1) for k, v in cal["fit_median_abs_error"].items()})
    print("   steps ms 1-4:", [round(step.step_seconds(n, n * 180) * 1e3, 2) for n in (1, 2, 3, 4)], "prefill148:", round(step.step_seconds(0, 0, 148, 148 * 74.5, 1, 1) * 1e3, 1))
    print("   measured light ttft/itl ms", round(l["ttft_p50"] * 1e3, 1), round(l["itl_p50"] * 1e3, 2), "| sim", round(sl["ttft_p50"] * 1e3, 1), round(sl["itl_p50"] * 1e3, 2))
    print("   errors %:", checks, "sat", o["saturated"], so["saturated"], ms["saturated"], sm["saturated"])
