"""A plan's speed: the step-time model through the simulator, per replica and for the deployment, with its source."""

import json
import math
import subprocess
import sys

import pytest

from infer_advisor import advise
from infer_advisor.cli import main
from infer_advisor.errors import DataFileError
from infer_advisor.estimate.calibration import Calibration, CalibrationPoint


def _calibration_file(tmp_path, gpu="H200", engine="transformers", **coefficients):
    p = CalibrationPoint(model="m", batch=1, input_tokens=512, output_tokens=64, ttft_s=0.1, tpot_s=0.02, origin="test")
    path = tmp_path / "cal.json"
    Calibration(engine=engine, quantization="none", dtype="float16", gpu=gpu, coefficients=coefficients or {"gemm_scale": 0.5},
                points=[p], command="hand-written for tests", created_at="2026-01-01T00:00:00+00:00").write(path)
    return path


def test_plan_speed_is_simulated_with_its_source_and_error():
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", concurrency=16, input_tokens=1000, output_tokens=200)
    perf = plan.performance
    assert perf.source == "estimated" and perf.coefficients == "fitted"
    # the headline is the frozen profile's prospective error once graded; before that the fit's own figures, said as such
    assert any(w in perf.accuracy for w in ("gathered after it was frozen", "leave-one-source-out", "in-sample"))
    assert perf.error_band[0] < 1 < perf.error_band[1]
    assert perf.ttft_s >= perf.ttft_alone_s > 0 and perf.tpot_s >= perf.tpot_alone_s > 0
    assert perf.e2e_s == pytest.approx(perf.ttft_s + 199 * perf.tpot_s, rel=0.15)
    assert sum(perf.decode_step_terms_s.values()) > 0 and "weights_gemm" in perf.decode_step_terms_s
    assert 0 < perf.decode_fraction_of_bandwidth_ceiling <= 1 and 0 < perf.prefill_fraction_of_compute_ceiling <= 1


def test_deployment_throughput_is_replicas_times_one_replica():
    one = advise(model="meta-llama/Llama-2-7b-hf", gpu="H100-80GB:1", concurrency=32).performance
    eight = advise(model="meta-llama/Llama-2-7b-hf", gpu="H100-80GB:8", concurrency=32)
    assert eight.parallelism.replicas == 8 and eight.performance.replicas == 8
    assert eight.performance.deployment_output_tokens_per_s == pytest.approx(8 * eight.performance.output_tokens_per_s_aggregate)
    assert eight.performance.output_tokens_per_s_aggregate == pytest.approx(one.output_tokens_per_s_aggregate)


def test_more_concurrency_more_throughput_slower_tokens():
    lo = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", concurrency=1).performance
    hi = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", concurrency=64).performance
    assert hi.output_tokens_per_s_aggregate > 10 * lo.output_tokens_per_s_aggregate
    assert hi.tpot_s > lo.tpot_s


def test_shared_prefix_shortens_prefill():
    base = dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", concurrency=4, input_tokens=4000, output_tokens=100)
    plain = advise(**base).performance
    cached = advise(**base, shared_prefix_tokens=3500).performance
    assert cached.ttft_alone_s < plain.ttft_alone_s / 3
    assert any("prefix caching" in n for n in cached.notes)


def test_calibrated_coefficients_replace_the_profile(tmp_path, capsys):
    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", concurrency=8, context=1024)
    cal = _calibration_file(tmp_path, host_launch_s=4e-5, gemm_scale=0.5)  # eager transformers is launch bound at batch 8
    calibrated = advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", concurrency=8, context=1024,
                        calibration=str(cal))
    assert calibrated.performance.source == "calibrated" and "calibrated from" in calibrated.performance.accuracy
    assert calibrated.performance.tpot_s != plan.performance.tpot_s
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H200", "--engine", "transformers",
                 "--calibration", str(cal)]) == 0
    assert "calibrated" in capsys.readouterr().out


def test_cpu_plan_uses_the_cpu_figures():
    plan = advise(model="meta-llama/Llama-3.2-1B", gpu="cpu")
    assert plan.performance is not None and plan.performance.tpot_s > 0
    assert any("CPU figures" in n for n in plan.performance.notes)


@pytest.mark.parametrize(
    "content, name",
    [("{not json", "cal.json"), (json.dumps({"engine": "vllm"}), "cal.json"), ("engine: vllm", "cal.yaml")],
)
def test_bad_calibration_file_is_a_data_file_error(tmp_path, content, name, capsys):
    bad = tmp_path / name
    bad.write_text(content)
    with pytest.raises(DataFileError):
        advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", calibration=str(bad))
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H200", "--calibration", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(bad) in err and "Traceback" not in err


def test_missing_calibration_file_exits_2(tmp_path, capsys):
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H200", "--calibration", str(tmp_path / "none.json")]) == 2
    assert "infer-advisor calibrate" in capsys.readouterr().err


def test_plan_path_imports_no_numpy_or_torch():
    code = ("import sys, infer_advisor.estimate.speed, infer_advisor.calibrate.speed, infer_advisor.simulate; "
            "from infer_advisor import advise; advise(model='meta-llama/Llama-2-7b-hf', gpu='A100-80GB'); "
            "print('numpy' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False False"


def test_a_calibration_applies_on_the_profile_it_was_fitted_on(tmp_path):
    """calibrate fits on the stated profile (engine_speeds(apply_fitted=False)); the plan applies its coefficients on the
    same one. On the published-fit profile, llama.cpp's fitted prefill_attention_scale (0.3, not the stated 0.8) changed
    the prefill a CPU calibration predicts from what the fit had matched to the measurements."""
    from infer_advisor.calibrate.speed import predict_point
    from infer_advisor.estimate.fit import with_coefficients
    from infer_advisor.estimate.speed import _calibrated_profile
    from infer_advisor.estimate.speed_data import engine_speed, engine_speeds
    from infer_advisor.hardware import resolve_hardware
    from infer_advisor.model_facts import resolve_model

    coefficients = {"step_overhead_s": 0.004, "per_sequence_s": 1e-4, "gemm_scale": 0.7, "cpu_bandwidth_efficiency": 0.4}
    cal = _calibration_file(tmp_path, gpu="cpu", engine="llama.cpp", **coefficients)
    stated = engine_speeds(apply_fitted=False).engines["llama.cpp"]
    profile, _, _ = _calibrated_profile(cal, "llama.cpp", None)
    assert engine_speed("llama.cpp").prefill_attention_scale.value != stated.prefill_attention_scale.value
    assert profile.prefill_attention_scale.value == stated.prefill_attention_scale.value
    hw, model = resolve_hardware("cpu"), resolve_model("Qwen/Qwen2.5-0.5B", source="catalog")
    point = CalibrationPoint(model="q", batch=1, input_tokens=150, output_tokens=32, ttft_s=1, tpot_s=1, origin="t", mode="closed_loop")
    kw = dict(engine="llama.cpp", quantization="gguf-f16", dtype="float16")
    assert predict_point(point, model, hw, profile, **kw) == predict_point(point, model, hw, with_coefficients(stated, coefficients), **kw)


def test_fit_priors_hold_unidentified_terms_and_bounds_keep_host_terms_above_zero():
    from infer_advisor.estimate.fit import bounds_of, fit_coefficients, prior_penalty
    from infer_advisor.estimate.speed_data import stated_profile

    _, prof = stated_profile("vllm", "0.9.0")
    lo, hi = bounds_of(prof, "step_overhead_s")
    assert 0 < lo < prof.step_overhead_s.value < hi
    assert prior_penalty(prof, {"step_overhead_s": prof.step_overhead_s.value}) == 0
    assert prior_penalty(prof, {"step_overhead_s": lo}) == pytest.approx(0.4 * 16 * (math.log(prof.step_overhead_s.value / lo) / math.log(hi / lo)) ** 2)
    # points that want no host cost at all: the fit stops at the lower bound, never at zero
    values = fit_coefficients(prof, ["step_overhead_s"], lambda p: [p.step_overhead_s.value / 1e-9 - 1], iters=40)
    assert values["step_overhead_s"] >= lo > 0
    # points that say nothing about the term: it stays at its prior
    values = fit_coefficients(prof, ["step_overhead_s"], lambda p: [0.0], iters=40)
    assert values["step_overhead_s"] == pytest.approx(prof.step_overhead_s.value, rel=1e-3)


def test_version_ranges_and_trial_profiles_are_what_the_user_path_reads():
    from infer_advisor.estimate.fit import with_coefficients
    from infer_advisor.estimate.speed_data import engine_speed, profile_key, stated_profile, trial_profiles, version_row

    assert engine_speed("vllm", "0.6.3").version_range.startswith("vLLM 0.6-0.7")
    assert engine_speed("vllm").version_range == engine_speed("vllm", "99.0").version_range  # newest range
    key, prof = stated_profile("vllm", "0.9.0")
    assert key == profile_key("vllm", version_row(prof, "0.9.0")) == "vllm@0.8"
    trial = with_coefficients(prof, {"step_overhead_s": 0.0123})
    with trial_profiles({key: trial}):
        assert engine_speed("vllm", "0.9.0").step_overhead_s.value == 0.0123
        assert engine_speed("vllm", "0.12.0").step_overhead_s.value != 0.0123  # another range
    assert engine_speed("vllm", "0.9.0").step_overhead_s.value != 0.0123


def test_ttft_includes_the_per_request_host_cost():
    from infer_advisor.estimate.speed_data import engine_speed

    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", concurrency=1, input_tokens=512, output_tokens=64,
                  model_source="catalog")
    perf = plan.performance
    req = engine_speed("vllm", plan.engine.version).request_overhead_s.value
    assert req > 0 and perf.ttft_alone_s > req
    assert "request_overhead" in perf.term_sources and perf.term_sources["engine_step_overhead"]


def test_a_finite_burst_with_spread_answers_is_slower_than_the_steady_state():
    """--requests N: N requests at once, answers spread around the mean; the run ends with the longest answers decoding
    at a small batch, so its tokens over its makespan sit below the steady state at the same concurrency, and the run
    lasts at least as long as its longest answer takes alone (one decode step per token)."""
    base = dict(model="Qwen/Qwen3-8B", model_source="catalog", gpu="H100-80GB", engine="vllm", concurrency=1000,
                input_tokens=217, output_tokens=202, context=2048)
    steady = advise(**base).performance
    burst = advise(**base, requests=1000, input_distribution="lognormal", output_distribution="exponential").performance
    assert burst.output_tokens_per_s_aggregate < 0.9 * steady.output_tokens_per_s_aggregate
    assert any("finite run of 1000 requests" in n for n in burst.notes)
    # 1000 exponential answers of mean 202: the longest is ~202 * ln(1000) ~ 1,400 tokens, one step each at batch >= 1
    makespan = 1000 * 202 / burst.output_tokens_per_s_aggregate
    assert makespan > 1000 * burst.tpot_alone_s


def test_requests_reads_the_length_spreads_and_is_refused_with_rate():
    from infer_advisor.errors import RequestError

    base = dict(model="Qwen/Qwen3-8B", model_source="catalog", gpu="H100-80GB", engine="vllm", input_tokens=200, output_tokens=100)
    with pytest.raises(RequestError, match="--output-distribution is used only when sizing"):
        advise(**base, output_distribution="exponential")
    plan = advise(**base, requests=64, output_distribution="exponential")  # without --concurrency: all 64 at once
    assert plan.performance.concurrency == 64
    with pytest.raises(RequestError, match="--requests .* and --rate"):
        advise(**base, requests=64, rate=2.0)
