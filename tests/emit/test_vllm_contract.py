"""Contract: the vLLM flags our launch script emits are accepted by vLLM 0.33.0's own `vllm serve` parser and
by `AsyncEngineArgs.create_engine_config()` against the model's real config.json.

The harness runs in a slim cached venv (tests/emit/vllm_env.py) with VLLM_TARGET_DEVICE=cpu and
HF_HUB_OFFLINE=1. What is validated: argparse (unknown flags, bad choices), EngineArgs/VllmConfig pydantic
checks (gpu_memory_utilization <= 1, kv-cache dtype names, heads divisible by TP, max_model_len against
max_position_embeddings, quantization method vs the checkpoint's quantization_config, the Ray executor).
What is not: CUDA-kernel availability for the target GPU (vLLM runs its CPU platform here).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from infer_advisor.emit import render
from tests.emit.plans import catalog_facts, make_plan

pytestmark = pytest.mark.integration
HARNESS = Path(__file__).parent / "vllm_harness.py"


@pytest.fixture(scope="module")
def vllm_py() -> Path:
    from tests.emit.vllm_env import vllm_python

    return vllm_python()


def script_argv(plan) -> list[str]:
    """The vLLM command of the launch script, split as bash would (the head's command for multi-node)."""
    script = render(plan, "script")["serve.sh"]
    command = script.rsplit("exec vllm ", 1)[1].split("\n    ;;")[0]
    return ["vllm", *shlex.split(command.replace("\\\n", " "))]


def model_dir(tmp_path: Path, name: str) -> Path:
    from infer_advisor.model_facts.catalog import find_entry

    folder = tmp_path / name.replace("/", "--")
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find_entry(name).config))
    return folder


def plan_device(plan) -> dict:
    """The plan's GPU as CUDA would describe it to vLLM (its NVML name, CUDA-visible total, compute capability)."""
    from infer_advisor.hardware.catalog import find_entry

    g = plan.hardware.gpus[0]
    entry = find_entry(g.name)
    major, minor = str(g.compute_capability).split(".")
    name = entry.nvml_names[0] if entry and entry.nvml_names else g.name
    return {"name": name, "memory_bytes": g.usable_memory_bytes or g.memory_bytes, "capability": [int(major), int(minor)]}


def run_harness(py: Path, argv: list[str], device: dict | None = None) -> dict:
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR"}
    args = [json.dumps(argv)] + ([json.dumps(device)] if device else [])
    r = subprocess.run([str(py), str(HARNESS), *args], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    assert lines, f"harness printed nothing (rc {r.returncode}):\n{r.stderr[-3000:]}"
    return json.loads(lines[-1])


CASES = {
    "tp1": (dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB"), 1),
    "tp2-fp8-weights": (dict(model="meta-llama/Llama-2-70b-hf", gpu="H100-80GB:2"), 2),
    "tp4": (dict(model="meta-llama/Llama-2-70b-hf", gpu="L40S:4", quantization="none", engine="vllm"), 4),
    # 64 requests: at TP 4 the 70B leaves ~2.6 GiB of KV per A100-40GB (vLLM 0.33 keeps NCCL out of its budget), too few
    "tp8": (dict(model="meta-llama/Llama-2-70b-hf", gpu="A100-40GB:8", concurrency=64), 8),
    "fp8-kv": (dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", kv_cache_dtype="fp8"), 1),
    "awq-prequantized": (dict(model="Qwen/Qwen2.5-7B-Instruct-AWQ", gpu="A100-80GB"), 1),
    "lowered-context": (dict(model="meta-llama/Llama-3.1-8B", gpu="L4", concurrency=64), 1),
    "multinode-ray": (dict(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2"), 8),
    "data-parallel-replicas": (dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB:4"), 1),
    "mi300x-fp8": (dict(model="meta-llama/Llama-3.1-8B", gpu="MI300X"), 1),
    # issue 10: expert parallelism, a small token budget (max_num_seqs capped at it), pinned data parallelism
    "expert-parallel": (dict(model="mistralai/Mixtral-8x7B-v0.1", gpu="H100-80GB:4", enable_expert_parallel=True), 2),
    "small-token-budget": (dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", max_num_batched_tokens=512), 1),
    "pinned-data-parallel": (dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB:8", data_parallel_size=4), 1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_vllm_accepts_emitted_flags(case, vllm_py, tmp_path):
    options, tp = CASES[case]
    plan = make_plan(**options)
    assert plan.engine.name == "vllm" and plan.parallelism.tensor_parallel_size == tp
    argv = script_argv(plan)
    assert argv[:3] == ["vllm", "serve", plan.model.name]
    argv[2] = str(model_dir(tmp_path, plan.model.name))  # offline: the catalog's real config.json stands in for the Hub
    result = run_harness(vllm_py, argv[1:], plan_device(plan))  # vLLM's own defaults for the plan's GPU fill the flags left out
    assert result["ok"], result
    assert result["tensor_parallel_size"] == plan.parallelism.tensor_parallel_size
    assert result["pipeline_parallel_size"] == plan.parallelism.pipeline_parallel_size
    assert result["max_model_len"] == plan.engine.max_model_len
    assert result["max_num_seqs"] == plan.engine.max_num_seqs
    if plan.engine.max_num_batched_tokens:
        assert result["max_num_batched_tokens"] == plan.engine.max_num_batched_tokens
    assert result["gpu_memory_utilization"] == pytest.approx(plan.engine.gpu_memory_utilization)
    assert result["served_model_name"] in (plan.engine.served_model_name, [plan.engine.served_model_name])
    assert result["dtype"] == f"torch.{plan.dtype}"
    if plan.engine.kv_cache_dtype == "fp8":
        assert result["kv_cache_dtype"].startswith("fp8")
    if plan.quantization.engine_flag:
        assert result["quantization"] == plan.quantization.engine_flag
    if case == "awq-prequantized":
        assert "awq" in str(result["quantization"])
    if case == "lowered-context":
        assert plan.engine.max_model_len < catalog_facts(plan.model.name).max_position_embeddings
    if plan.parallelism.nodes > 1:
        assert result["distributed_executor_backend"] == "ray"
    assert result["enable_expert_parallel"] == plan.parallelism.expert_parallel
    if case == "pinned-data-parallel":
        assert result["data_parallel_size"] == 4
    if case == "small-token-budget":
        assert result["max_num_seqs"] <= result["max_num_batched_tokens"] == 512
    from infer_advisor.engines.argv import local_replicas

    assert result["data_parallel_size"] == local_replicas(plan)


def test_vllm_reads_a_dash_named_served_model_in_the_equals_form(vllm_py, tmp_path):
    """Issue 12: a model folder named `-x` gives --served-model-name=-x, which vLLM's parser takes as the name."""
    from infer_advisor.model_facts.catalog import find_entry
    from tests.emit.plans import local_plan

    folder = tmp_path / "-x"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(find_entry("meta-llama/Llama-2-7b-hf").config))
    plan = local_plan(str(folder))
    argv = script_argv(plan)
    assert "--served-model-name=-x" in argv
    result = run_harness(vllm_py, argv[1:])
    assert result["ok"], result
    assert result["served_model_name"] in ("-x", ["-x"])


@pytest.mark.parametrize(
    "mutate, stage",
    [
        (lambda a: a + ["--kv-cache-dtype", "fp9"], "config"),
        (lambda a: a + ["--tensor-parallel-size", "3"], "config"),
        (lambda a: a + ["--gpu-memory-utilization", "1.5"], "config"),
        (lambda a: a + ["--max-model-len", "999999"], "config"),
        (lambda a: a + ["--quantization", "not-a-method"], "config"),  # vLLM 0.33 checks it in ModelConfig
        (lambda a: a + ["--no-such-flag", "1"], "parse"),
    ],
    ids=["bad-kv-dtype", "tp-not-dividing-heads", "utilization-over-1", "context-beyond-model", "unknown-quantization", "unknown-flag"],
)
def test_harness_rejects_bad_flags(mutate, stage, vllm_py, tmp_path):
    """NEGATIVE: the same harness fails a flag vLLM rejects, so a pass above means something."""
    plan = make_plan(**CASES["tp1"][0])
    argv = script_argv(plan)
    argv[2] = str(model_dir(tmp_path, plan.model.name))
    result = run_harness(vllm_py, mutate(argv[1:]))
    assert not result["ok"], result
    assert result["stage"] == stage, result
