"""The performance model against hand-computed figures (issue: 'Predict speed', 'Done means')."""

import json
import subprocess
import sys

import pytest

from infer_advisor import advise
from infer_advisor.cli import main
from infer_advisor.engines import engine_profile
from infer_advisor.errors import DataFileError
from infer_advisor.estimate.calibrate import Calibration, CalibrationPoint
from infer_advisor.estimate.memory import estimate_memory
from infer_advisor.estimate.speed import SpeedProfile, StepWork, _expert_share, estimate_speed, prefill_work, step_time
from infer_advisor.hardware import resolve_hardware
from infer_advisor.model_facts import resolve_model

H200_BW = 4.8e12  # catalog: H200 SXM datasheet, 4.8 TB/s
H200_FP16 = 989.4e12  # catalog: dense fp16 TFLOPS


@pytest.fixture(scope="module")
def llama2_7b():
    return resolve_model("meta-llama/Llama-2-7b-hf", source="catalog")


def _calibration_file(tmp_path, **over):
    fields = dict(
        engine="transformers", quantization="none", dtype="float16", gpu="H200", bandwidth_bytes_per_s=H200_BW,
        flops_per_s=H200_FP16, bandwidth_efficiency=0.5, compute_efficiency=0.5, step_overhead_s=0.001,
        layer_overhead_s=0.0, moe_layer_overhead_s=0.0, kv_traffic_factor=1.0,
        points=[CalibrationPoint(model="m", batch=1, input_tokens=512, output_tokens=64, ttft_s=0.1, tpot_s=0.02, origin="test")],
        command="hand-written for tests", created_at="2026-01-01T00:00:00+00:00",
    )
    fields.update(over)
    path = tmp_path / "cal.json"
    Calibration(**fields).write(path)
    return path


def _speed(model, hw, cal, *, batch=1, tp=1, engine="transformers"):
    mem = estimate_memory(model, gpu_memory_bytes=hw.gpu.memory_bytes, engine=engine_profile(engine), dtype="float16",
                          tp=tp, context=576, concurrency=batch, input_tokens=512)
    return mem, estimate_speed(model, hw, engine=engine, quantization="none", dtype="float16", tp=tp, pp=1, memory=mem,
                               concurrency=batch, input_tokens=512, output_tokens=64, calibration=cal)


def test_dense_ttft_and_tpot_by_hand(llama2_7b, tmp_path):
    """Llama-2-7B fp16 on one H200, batch 1, prompt 512, 64 new tokens, eta 0.5/0.5, 1 ms serial overhead."""
    mem, perf = _speed(llama2_7b, resolve_hardware("H200"), _calibration_file(tmp_path))
    assert mem.weights_bytes_per_gpu == 13_476_831_232  # 6,738,415,616 params x 2 bytes
    assert mem.kv_cache_bytes_per_token_per_gpu == 524_288  # 2 x 32 layers x 32 heads x 128 x 2 bytes
    # decode: weights + KV at the mean context 512 + 64/2 = 544 tokens, at half of 4.8 TB/s
    decode_bytes = 13_476_831_232 + 544 * 524_288  # 13,762,043,904
    assert perf.decode_bytes_per_step_per_gpu == decode_bytes
    assert perf.tpot_s == pytest.approx(0.001 + decode_bytes / (0.5 * H200_BW), rel=1e-9)  # 6.734 ms
    # prefill: 2 x (params - embedding - lm_head) x 512 + lm_head on the last position + causal attention
    matmul_params = 6_738_415_616 - 2 * 32_000 * 4096  # 6,476,271,616
    flops = 2 * matmul_params * 512 + 2 * 32_000 * 4096 + 2 * 32 * 512 * 512 * 4096  # 6,700,683,755,520
    assert perf.prefill_flops_per_gpu == flops
    assert perf.ttft_s == pytest.approx(0.001 + flops / (0.5 * H200_FP16), rel=1e-9)  # 14.545 ms
    assert perf.e2e_s == pytest.approx(perf.ttft_s + 63 * perf.tpot_s)
    assert perf.output_tokens_per_s_per_request == pytest.approx(64 / perf.e2e_s)
    assert perf.decode_fraction_of_bandwidth_ceiling == pytest.approx((decode_bytes / H200_BW) / perf.tpot_s)
    assert perf.source == "calibrated" and "cal.json" in perf.profile


def test_launch_overhead_overlaps_gpu_work():
    """max(launch, memory): a launch-bound step does not get slower until the GPU work outlasts the launches."""
    p = SpeedProfile(bandwidth_efficiency=1.0, compute_efficiency=1.0, step_overhead_s=0.002, layer_overhead_s=0.0005,
                     kind="assumed", source="test")
    small = StepWork(bytes=1e9, flops=0, allreduce_bytes=0, layers=32, moe_layers=0)  # 0.21 ms < 16 ms of launches
    big = StepWork(bytes=1e11, flops=0, allreduce_bytes=0, layers=32, moe_layers=0)  # 20.8 ms > 16 ms
    kw = dict(bandwidth=H200_BW, flops=H200_FP16, tp=1, pp=1, interconnect=1.0, allreduce_latency=0.0)
    assert step_time(small, p, **kw) == pytest.approx(0.002 + 32 * 0.0005)
    assert step_time(big, p, **kw) == pytest.approx(0.002 + 1e11 / H200_BW)


def test_tensor_parallel_adds_two_all_reduces_per_layer():
    p = SpeedProfile(bandwidth_efficiency=1.0, compute_efficiency=1.0, step_overhead_s=0.0, kind="assumed", source="test")
    work = StepWork(bytes=1e9, flops=0, allreduce_bytes=8 * 4096 * 2, layers=32, moe_layers=0)  # batch 8, hidden 4096, fp16
    kw = dict(bandwidth=H200_BW, flops=H200_FP16, pp=1, interconnect=450e9, allreduce_latency=2e-5)
    one = step_time(work, p, tp=1, **kw)
    four = step_time(work, p, tp=4, **kw)
    ring = 2 * 3 / 4 * 65_536 / 450e9 + 2e-5  # ring all-reduce of 64 KiB over 4 ranks
    assert one == pytest.approx(1e9 / H200_BW)
    assert four - one == pytest.approx(2 * 32 * ring)


def test_tp_plan_is_faster_per_token_but_pays_communication(llama2_7b, tmp_path):
    cal = _calibration_file(tmp_path)
    hw = resolve_hardware("H100-80GB:2")
    _, tp1 = _speed(llama2_7b, hw, cal, batch=8, tp=1)
    _, tp2 = _speed(llama2_7b, hw, cal, batch=8, tp=2)
    assert tp2.tpot_s < tp1.tpot_s
    # the serial 1 ms is not halved; the memory term is (weights and KV split in two); 64 all-reduces are added
    assert tp2.tpot_s > 0.001 + (tp1.tpot_s - 0.001) / 2


def test_moe_reads_routed_experts_and_computes_active_params(tmp_path):
    mixtral = resolve_model("mistralai/Mixtral-8x7B-v0.1", source="catalog")
    f = mixtral.params.expert_linear / mixtral.num_parameters
    assert _expert_share(mixtral, 1) == pytest.approx((1 - f) + f * 2 / 8)  # top-2 of 8 experts
    assert _expert_share(mixtral, 10_000) == pytest.approx(1.0)
    mem = estimate_memory(mixtral, gpu_memory_bytes=141 * 2**30, engine=engine_profile("transformers"), context=576,
                          concurrency=1, input_tokens=512)
    pre = prefill_work(mixtral, mem, tp=1, pp=1, batch=1, prompt=512, act_bytes=2)
    matmul = mixtral.num_active_parameters - mixtral.params.embedding - mixtral.params.lm_head
    attention = 2 * mixtral.num_layers * 512 * 512 * mixtral.num_attention_heads * mixtral.head_dim
    assert pre.flops == 2 * matmul * 512 + 2 * mixtral.params.lm_head + attention
    assert mixtral.num_active_parameters < mixtral.num_parameters / 3  # ~12.9B of 46.7B


def test_plan_prints_speed_with_its_source(tmp_path, capsys):
    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", concurrency=8, context=1024)
    assert plan.performance.source == "estimated" and "transformers" in plan.performance.profile
    assert 0 < plan.performance.decode_fraction_of_bandwidth_ceiling < 1
    assert 0 < plan.performance.prefill_fraction_of_compute_ceiling < 1
    cal = _calibration_file(tmp_path)
    calibrated = advise(model="meta-llama/Llama-2-7b-hf", gpu="H200", engine="transformers", concurrency=8, context=1024,
                        calibration=str(cal))
    assert calibrated.performance.source == "calibrated"
    assert calibrated.performance.tpot_s != plan.performance.tpot_s
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H200", "--engine", "transformers",
                 "--calibration", str(cal)]) == 0
    out = capsys.readouterr().out
    assert "TPOT" in out and "calibrated" in out


def test_cpu_plan_says_its_figures_are_typical():
    plan = advise(model="meta-llama/Llama-3.2-1B", gpu="cpu")
    assert plan.performance is not None
    assert any("CPU plan" in n for n in plan.performance.notes)


def test_calibration_round_trip(tmp_path):
    path = _calibration_file(tmp_path, bandwidth_efficiency=0.37, layer_overhead_s=0.0004)
    from infer_advisor.estimate.calibrate import load_calibration

    back = load_calibration(path)
    assert back == Calibration.model_validate_json(path.read_text())
    assert back.profile().bandwidth_efficiency == 0.37 and back.profile().layer_overhead_s == 0.0004


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


def test_plan_path_imports_no_numpy():
    code = "import sys, infer_advisor.estimate.speed, infer_advisor.estimate.calibrate; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
