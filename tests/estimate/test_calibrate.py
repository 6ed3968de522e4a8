"""Calibration: the fit recovers a known profile, reads the committed H200 results, and the CLI contract."""

import json
from pathlib import Path

import pytest
import yaml

from infer_advisor.cli import main
from infer_advisor.engines import engine_profile
from infer_advisor.estimate.calibrate import CalibrationPoint, fit_calibration, load_calibration, points_from_file
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.speed import SpeedProfile, decode_work, prefill_work, step_time
from infer_advisor.hardware import resolve_hardware
from infer_advisor.model_facts import resolve_model

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "h200"
WARM = RESULTS / "measure_transformers_warm.json"
SHIPPED_FROM = ["meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-13b-hf", "mistralai/Mixtral-8x7B-v0.1"]


def _synthetic_points(truth: SpeedProfile, hw) -> list[CalibrationPoint]:
    """Points the model itself predicts for ``truth``: the fit must give ``truth`` back."""
    bw, flops = hw.gpu.memory_bandwidth_bytes_per_s, hw.gpu.tflops["fp16"] * 1e12
    kw = dict(bandwidth=bw, flops=flops, tp=1, pp=1, interconnect=1.0, allreduce_latency=0.0)
    points = []
    for name in ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf"):
        m = resolve_model(name, source="catalog")
        for batch in (1, 8, 32, 128):
            mem = estimate_memory(m, gpu_memory_bytes=hw.gpu.memory_bytes, engine=engine_profile("transformers"), dtype="float16",
                                  context=576, concurrency=batch, input_tokens=512)
            dec = decode_work(m, mem, tp=1, pp=1, batch=batch, context=544, act_bytes=2)
            pre = prefill_work(m, mem, tp=1, pp=1, batch=batch, prompt=512, act_bytes=2)
            points.append(CalibrationPoint(model=name, batch=batch, input_tokens=512, output_tokens=64, dtype="float16",
                                           ttft_s=step_time(pre, truth, **kw), tpot_s=step_time(dec, truth, **kw), origin="synthetic"))
    return points


def test_fit_recovers_a_known_profile():
    hw = resolve_hardware("H200")
    truth = SpeedProfile(bandwidth_efficiency=0.6, compute_efficiency=0.45, step_overhead_s=0.003, layer_overhead_s=0.0005,
                         kv_traffic_factor=3.0, kind="assumed", source="test")
    cal = fit_calibration(_synthetic_points(truth, hw), engine="transformers", quantization="none", dtype="float16", hw=hw,
                          command="test")
    assert cal.bandwidth_efficiency == pytest.approx(0.6, abs=0.011)
    assert cal.layer_overhead_s == pytest.approx(0.0005, abs=2e-5)
    assert cal.step_overhead_s == pytest.approx(0.003, abs=5e-4)
    assert cal.compute_efficiency == pytest.approx(0.45, rel=0.05)
    assert cal.fit_rms_error_pct["tpot_s"] < 2 and cal.fit_rms_error_pct["ttft_s"] < 5


def test_points_from_the_committed_h200_measurements_use_the_warm_run():
    points, gpu, dtype = points_from_file(WARM)
    raw = json.loads(WARM.read_text())
    assert gpu == "NVIDIA H200" and dtype == "float16"
    assert len(points) == sum(len(m.get("points", [])) for m in raw["models"]) >= 12
    first = raw["models"][0]["points"][0]
    assert points[0].tpot_s == first["decode_step_s_warm_median"] and "warm allocator" in points[0].origin


def test_shipped_transformers_profile_is_this_commands_fit(tmp_path, capsys):
    out = tmp_path / "cal.json"
    code = main(["calibrate", "--engine", "transformers", "--from", str(WARM), "--gpu", "H200", "--model", ",".join(SHIPPED_FROM),
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    cal = load_calibration(out)
    shipped = yaml.safe_load((REPO / "src/infer_advisor/data/perf_profiles.yaml").read_text())["profiles"]["transformers"]["default"]
    assert cal.bandwidth_efficiency == pytest.approx(shipped["bandwidth_efficiency"], abs=1e-3)
    assert cal.compute_efficiency == pytest.approx(shipped["compute_efficiency"], abs=1e-3)
    assert cal.layer_overhead_s == pytest.approx(shipped["layer_overhead_s"], abs=1e-6)
    assert cal.moe_layer_overhead_s == pytest.approx(shipped["moe_layer_overhead_s"], abs=1e-6)
    assert len(cal.points) == 16 and cal.command.startswith("infer-advisor calibrate")


def test_calibrate_refuses_bad_input(tmp_path, capsys):
    not_results = tmp_path / "x.json"
    not_results.write_text(json.dumps({"hello": 1}))
    assert main(["calibrate", "--engine", "transformers", "--from", str(not_results), "--gpu", "H200", "--out", str(tmp_path / "c.json")]) == 2
    assert "not a bench.json" in capsys.readouterr().err
    one = tmp_path / "one.json"
    raw = json.loads(WARM.read_text())
    raw["models"] = [dict(raw["models"][0], points=raw["models"][0]["points"][:1])]
    one.write_text(json.dumps(raw))
    assert main(["calibrate", "--engine", "transformers", "--from", str(one), "--gpu", "H200", "--out", str(tmp_path / "c.json")]) == 2
    assert "at least two" in capsys.readouterr().err
    assert main(["calibrate", "--engine", "transformers", "--from", str(WARM), "--gpu", "cpu", "--out", str(tmp_path / "c.json")]) == 2
    assert not (tmp_path / "c.json").exists()


@pytest.mark.integration
def test_calibrate_runs_the_bench_stage(tmp_path, capsys):
    """No --from: calibrate benchmarks a real (tiny, local) model through `bench` and fits what it measured."""
    from tests.support.tiny_llama import build_tiny_llama

    model = build_tiny_llama(tmp_path / "tiny")
    out = tmp_path / "cal.json"
    code = main(["calibrate", "--engine", "transformers", "--model", str(model), "--no-random-weights", "--concurrency", "1,2",
                 "--input-tokens", "16", "--output-tokens", "4", "--device", "cpu", "--dtype", "float32", "--gpu", "H200",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    cal = load_calibration(out)
    assert [p.batch for p in cal.points] == [1, 2]
    assert all(p.origin == "infer-advisor bench" and p.tpot_s > 0 and p.ttft_s > 0 for p in cal.points)
