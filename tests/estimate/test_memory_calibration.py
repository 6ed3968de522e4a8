"""Memory calibrations from start-up logs: the fit, how a plan uses it, and how a bad or foreign file is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infer_advisor import advise
from infer_advisor.errors import CalibrationMismatchError, DataFileError, RequestError
from infer_advisor.estimate.calibration import load_calibrations, load_memory_calibration
from infer_advisor.estimate.calibration_file import CalibrationHeader, check_applies
from infer_advisor.calibrate.memory import estimate_for_log, fit_memory_calibration
from infer_advisor.engines.startup_log import GIB, parse_startup_log

LOGS = Path(__file__).parent / "logs"


def calibrate(tmp_path: Path, log: str, **kw) -> Path:
    cal = fit_memory_calibration(parse_startup_log((LOGS / log).read_text()), source=log, **kw)
    out = tmp_path / f"{log}.json"
    cal.write(out)
    return out


V1 = dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", engine="vllm", engine_version="0.19.0", context=8192, gpu_memory_utilization=0.95)


def test_calibration_reproduces_the_logged_kv_capacity(tmp_path):
    path = calibrate(tmp_path, "vllm_v0_0.6.4_rtx3090_llama31_8b.log", gpu="RTX-3090", model="meta-llama/Llama-3.1-8B")
    cal = load_memory_calibration(path)
    assert (cal.engine, cal.engine_version, cal.gpu, cal.tp) == ("vllm", "0.6.4.post1", "RTX-3090", 1)
    assert cal.kv_cache_tokens == 31_232 and cal.activation_scale is not None
    plan = advise(model="meta-llama/Llama-3.1-8B", gpu="RTX-3090", engine="vllm", engine_version="0.6.4.post1", context=20000,
                  gpu_memory_utilization=0.9, concurrency=1, calibration=[path])
    assert plan.memory.kv_cache_tokens == pytest.approx(31_232, rel=0.03)
    assert plan.memory.source == "calibrated (log)"
    for figure in ("gpu_memory_bytes", "activation", "non_torch", "weights"):
        assert plan.memory.figure_sources[figure] == "calibrated (log)", figure
    assert plan.memory.gpu_memory_bytes == round(23.58 * GIB)


def test_calibration_transfers_to_another_context_of_the_same_setup(tmp_path):
    """Calibrate at max_model_len 20000 (issue 10517's first log), predict its 29000 run: 1478 blocks = 23,648 tokens.
    V0 profiles a batch as long as max_model_len, so the activation figure moves with the context."""
    cal = load_memory_calibration(calibrate(tmp_path, "vllm_v0_0.6.4_rtx3090_llama31_8b.log", gpu="RTX-3090", model="meta-llama/Llama-3.1-8B"))
    log29k = parse_startup_log((LOGS / "vllm_v0_0.6.4_rtx3090_llama31_8b_29k.log").read_text())
    kw = dict(model="meta-llama/Llama-3.1-8B", gpu="RTX-3090")
    before, after = estimate_for_log(log29k, **kw), estimate_for_log(log29k, **kw, calibration=cal)
    assert after.activation_tokens == 29000
    assert abs(after.kv_cache_tokens - 23_648) < abs(before.kv_cache_tokens - 23_648)
    # +3.0% (docs/accuracy.md: a calibration carries over to another context of the same setup within a few percent)
    assert after.kv_cache_tokens == pytest.approx(23_648, rel=0.04)


def test_tp_specific_figures_apply_only_at_the_logged_tp(tmp_path):
    path = calibrate(tmp_path, "vllm_v0_0.7_rtx4090x2_r1_qwen14b.log", gpu="RTX-4090", model="Qwen/Qwen2.5-14B")
    cal = load_memory_calibration(path)
    assert cal.tp == 2 and cal.non_torch_bytes == round(0.25 * GIB)
    assert cal.for_layout(2) is cal
    other = cal.for_layout(4)
    assert other.non_torch_bytes is None and other.residual_bytes == 0 and other.weights_bytes is None
    assert other.activation_scale == cal.activation_scale and other.gpu_memory_bytes == cal.gpu_memory_bytes


def test_plan_refuses_another_gpu_or_version_and_warns_when_asked(tmp_path):
    path = calibrate(tmp_path, "vllm_v1_0.19_h100_llama31_8b.log", gpu="H100-80GB", model="meta-llama/Llama-3.1-8B")
    assert advise(**V1, calibration=[path]).memory.source == "calibrated (log)"
    with pytest.raises(CalibrationMismatchError, match=r"made for vllm 0.19.0 on H100-80GB, the plan is for vllm 0.19.0 on A100-80GB"):
        advise(**{**V1, "gpu": "A100-80GB"}, calibration=[path])
    with pytest.raises(CalibrationMismatchError, match="the plan is for vllm 0.33.0 on H100-80GB"):
        advise(**{**V1, "engine_version": None}, calibration=[path])
    with pytest.raises(CalibrationMismatchError, match="the plan is for sglang"):
        advise(**{**V1, "engine": "sglang", "engine_version": None}, calibration=[path])
    warned = advise(**{**V1, "gpu": "A100-80GB"}, calibration=[path], calibration_mismatch="warn")
    assert any("made for vllm 0.19.0 on H100-80GB and is applied to vllm 0.19.0 on A100-80GB" in w for w in warned.warnings)
    assert warned.memory.source == "calibrated (log)"
    assert warned.memory.figure_sources["gpu_memory_bytes"] != "calibrated (log)"  # another GPU keeps its own total


def test_a_speed_calibration_for_another_engine_is_refused_too():
    h200 = Path(__file__).parents[2] / "benchmarks/results/h200/calibration_h200_transformers.json"
    with pytest.raises(CalibrationMismatchError, match="made for transformers on H200, the plan is for vllm"):
        advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="vllm", calibration=[h200])
    ok = advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", calibration=str(h200))
    assert ok.performance.source == "calibrated"


def test_memory_and_speed_calibrations_together(tmp_path):
    mem = calibrate(tmp_path, "vllm_v1_0.19_h100_llama31_8b.log", gpu="H100-80GB", model="meta-llama/Llama-3.1-8B")
    speed = json.loads((Path(__file__).parents[2] / "benchmarks/results/h200/calibration_h200_transformers.json").read_text())
    speed.update(engine="vllm", gpu="H100-80GB")
    speed_file = tmp_path / "speed.json"
    speed_file.write_text(json.dumps(speed))
    plan = advise(**V1, calibration=f"{mem},{speed_file}")
    assert plan.memory.source == "calibrated (log)" and plan.performance.source == "calibrated"
    cals = load_calibrations([mem, speed_file])
    assert len(cals.memory) == 1 and len(cals.speed) == 1
    with pytest.raises(DataFileError, match="a second memory calibration"):
        load_calibrations([mem, mem])


@pytest.mark.parametrize(
    "change,problem",
    [
        ({"gpu_memory_bytes": float("inf")}, "not a finite number"),
        ({"activation_scale": float("nan")}, "not a finite number"),
        ({"gpu_memory_bytes": -5}, "greater than"),
        ({"non_torch_bytes": 10**15}, "less than or equal"),
        ({"activation_scale": 1000}, "less than or equal"),
        ({"kind": "voodoo"}, "not a calibration kind"),
        ({"engine": ""}, "at least 1 character"),
        ({"surprise": 1}, "Extra inputs"),
    ],
)
def test_bad_memory_calibrations_are_one_line_errors(tmp_path, change, problem):
    good = json.loads(calibrate(tmp_path, "vllm_v1_0.19_h100_llama31_8b.log", gpu="H100-80GB", model="meta-llama/Llama-3.1-8B").read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**good, **change}))
    with pytest.raises(DataFileError, match=problem) as err:
        load_calibrations([bad])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "change,problem",
    [
        ({"coefficients": {"gemm_scale": float("inf")}}, "not a finite number"),
        ({"coefficients": {"gemm_scale": 0.0}}, "outside the plausible range"),
        ({"coefficients": {"step_overhead_s": 1e9}}, "outside the plausible range"),
        ({"coefficients": {"warp_drive": 1.0}}, "unknown coefficient"),
        ({"coefficients": {}}, "at least 1 item"),
    ],
)
def test_bad_speed_calibrations_are_refused(tmp_path, change, problem):
    good = json.loads((Path(__file__).parents[2] / "benchmarks/results/h200/calibration_h200_transformers.json").read_text())
    bad = tmp_path / "speed.json"
    bad.write_text(json.dumps({**good, **change}))
    with pytest.raises(DataFileError, match=problem):
        advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", calibration=[bad])


def test_check_applies_is_generic():
    header = CalibrationHeader(kind="speed", engine="vllm", engine_version="0.8.5", gpu="L40S", tp=1, created="now", source="bench.json")
    assert check_applies(header, path="f", engine="vllm", engine_version="0.8.5", gpu="l40s", mode="refuse") is None
    assert check_applies(header, path="f", engine="vllm", engine_version=None, gpu="L40S", mode="refuse") is None
    with pytest.raises(CalibrationMismatchError):
        check_applies(header, path="f", engine="vllm", engine_version="0.9.0", gpu="L40S", mode="refuse")
    assert "applied" in check_applies(header, path="f", engine="vllm", engine_version="0.9.0", gpu="L40S", mode="warn")


def test_log_without_gpu_or_version_needs_the_options():
    log = parse_startup_log((LOGS / "vllm_v0_0.2_a100_llama2_7b.log").read_text())
    with pytest.raises(RequestError, match="--engine-version"):
        fit_memory_calibration(log, source="x", gpu="A100-80GB")
    with pytest.raises(RequestError, match="--gpu"):
        fit_memory_calibration(log, source="x", engine_version="0.2.7")
    cal = fit_memory_calibration(log, source="x", gpu="A100-80GB", engine_version="0.2.7")
    assert cal.calibrated_kv_cache_tokens == pytest.approx(117_616, rel=0.01)


def test_sglang_and_llamacpp_calibrations(tmp_path):
    sgl = load_memory_calibration(calibrate(tmp_path, "sglang_0.5.9_h100_llama31_8b.log", gpu="H100-80GB", model="meta-llama/Llama-3.1-8B",
                                            engine_version="0.5.9"))
    assert sgl.calibrated_kv_cache_tokens == pytest.approx(420_853, rel=0.01)
    cpp = load_memory_calibration(calibrate(tmp_path, "llamacpp_b7200_rtx4090_mistral7b.log", model="mistralai/Mistral-7B-v0.3"))
    assert (cpp.engine, cpp.engine_version, cpp.gpu) == ("llama.cpp", "b7200", "RTX-4090")
    assert cpp.predicted_kv_cache_tokens == 32_768 and cpp.activation_scale is not None
