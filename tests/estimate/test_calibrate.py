"""Calibration: the fit reproduces points made by a known profile, reads the committed H200 results, the shipped
transformers profile is this command's fit, and the CLI contract."""

import json
from pathlib import Path

import pytest
import yaml

from infer_advisor.cli import main
from infer_advisor.errors import DataFileError
from infer_advisor.calibrate.speed import fit_calibration, points_from_file, predict_point
from infer_advisor.estimate.calibration import Calibration, CalibrationPoint, load_calibration
from infer_advisor.estimate.fit import with_coefficients
from infer_advisor.estimate.speed_data import engine_speeds
from infer_advisor.hardware import resolve_hardware
from infer_advisor.model_facts import resolve_model

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "h200"
WARM = RESULTS / "measure_transformers_warm.json"
SHIPPED_FROM = ["meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-13b-hf", "mistralai/Mixtral-8x7B-v0.1"]


def _synthetic_points(truth, hw, mode="static") -> list[CalibrationPoint]:
    """Points the model itself predicts for ``truth``: the fit must reproduce them."""
    points = []
    for name in ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-13b-hf"):
        m = resolve_model(name, source="catalog")
        for batch in (1, 8, 32):
            p = CalibrationPoint(model=name, batch=batch, input_tokens=512, output_tokens=64, dtype="float16", ttft_s=1.0, tpot_s=1.0,
                                 origin="synthetic", mode=mode)
            ttft, tpot = predict_point(p, m, hw, truth, engine="vllm", quantization="none", dtype="float16")
            points.append(p.model_copy(update={"ttft_s": ttft, "tpot_s": tpot}))
    return points


def test_fit_reproduces_points_of_a_known_profile():
    hw = resolve_hardware("H100-80GB")
    base = engine_speeds(apply_fitted=False).engines["vllm"]
    truth = with_coefficients(base, {"step_overhead_s": 0.003, "per_sequence_s": 2e-5, "gemm_scale": 0.8, "attention_scale": 1.2})
    cal = fit_calibration(_synthetic_points(truth, hw), engine="vllm", quantization="none", dtype="float16", hw=hw, command="test")
    assert cal.fit_median_abs_error["tpot_s"] < 0.02 and cal.fit_median_abs_error["ttft_s"] < 0.05
    assert cal.coefficients["gemm_scale"] == pytest.approx(0.8, abs=0.1)


def test_closed_loop_points_are_predicted_as_clients_back_to_back():
    hw = resolve_hardware("H100-80GB")
    base = engine_speeds(apply_fitted=False).engines["vllm"]
    static = _synthetic_points(base, hw)
    closed = _synthetic_points(base, hw, mode="closed_loop")
    # the same batch: back-to-back clients overlap their prefills with others' decodes, so TTFTs differ
    assert any(abs(a.ttft_s - b.ttft_s) > 1e-6 for a, b in zip(static, closed))


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
    shipped = yaml.safe_load((REPO / "src/infer_advisor/data/speed/engines.yaml").read_text())["engines"]["transformers"]
    for name, value in cal.coefficients.items():
        got = shipped[name] if name == "host_launch_s" else shipped[name]["value"]
        assert got == pytest.approx(value, rel=1e-3, abs=1e-9), name
        if name != "host_launch_s":
            assert shipped[name]["kind"] == "measured" and "calibration_h200_transformers.json" in shipped[name]["source"]
    assert len(cal.points) == 16 and cal.command.startswith("infer-advisor calibrate")


def test_calibration_file_round_trip_and_bounds(tmp_path):
    p = CalibrationPoint(model="m", batch=1, input_tokens=8, output_tokens=4, ttft_s=0.1, tpot_s=0.02, origin="test")
    cal = Calibration(engine="vllm", quantization="none", dtype="float16", gpu="H100-80GB", coefficients={"gemm_scale": 0.9},
                      points=[p], command="t", created_at="2026-01-01T00:00:00+00:00")
    path = tmp_path / "cal.json"
    cal.write(path)
    assert load_calibration(path) == cal
    for bad in ({"gemm_scale": 9.0}, {"warp_speed": 1.0}):
        raw = json.loads(path.read_text())
        raw["coefficients"] = bad
        path.write_text(json.dumps(raw))
        with pytest.raises(DataFileError):
            load_calibration(path)
    raw["schema_version"] = 1
    path.write_text(json.dumps(raw))
    with pytest.raises(DataFileError, match="older infer-advisor"):
        load_calibration(path)


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
    assert not (tmp_path / "c.json").exists()


@pytest.mark.integration
def test_calibrate_runs_the_bench_stage(tmp_path, capsys):
    """No --from: calibrate benchmarks a real (tiny, local) model through `bench` and fits what it measured."""
    from tests.support.tiny_llama import build_tiny_llama

    model = build_tiny_llama(tmp_path / "tiny")
    out = tmp_path / "cal.json"
    code = main(["calibrate", "--engine", "transformers", "--model", str(model), "--no-random-weights", "--concurrency", "1,2",
                 "--input-tokens", "16", "--output-tokens", "4", "--device", "cpu", "--dtype", "float32", "--gpu", "cpu",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    cal = load_calibration(out)
    assert [p.batch for p in cal.points] == [1, 2] and cal.gpu == "cpu"
    assert all(p.origin == "infer-advisor bench" and p.tpot_s > 0 and p.ttft_s > 0 and p.mode == "closed_loop" for p in cal.points)


def test_llama_cpp_closed_loop_point_runs_every_slot():
    """llama.cpp on a CPU: KV of exactly slots x (prompt + output) in cells of one token, reserved per slot. All four
    clients decode together, so the predicted time per output token is the 4-sequence decode step (the default
    16-token block of the simulator left a slot idle: mean batch 2.6 of 4)."""
    from infer_advisor.estimate.step_time import build_step_model

    hw = resolve_hardware("cpu")
    model = resolve_model("Qwen/Qwen2.5-0.5B", source="catalog")
    base = engine_speeds(apply_fitted=False).engines["llama.cpp"]
    p = CalibrationPoint(model="Qwen/Qwen2.5-0.5B", batch=4, input_tokens=147, output_tokens=64, ttft_s=1.0, tpot_s=1.0,
                         origin="test", mode="closed_loop", dtype="float16")
    _, tpot = predict_point(p, model, hw, base, engine="llama.cpp", quantization="gguf-f16", dtype="float16", max_num_seqs=4)
    step = build_step_model(model, gpu=None, engine="llama.cpp", quantization="gguf-f16", dtype="float16", profile=base,
                            cpu_cores=hw.cpu.cores, cpu_simd=hw.cpu.simd)
    mid = 4 * (147 + 1 + 31)  # the four contexts half-way through the answer
    assert tpot == pytest.approx(step.decode_seconds(4, mid), rel=0.03)
