"""Contract: the per-GPU defaults the plan assumes for vLLM 0.33 (data/engine_memory.yaml) are vLLM 0.33.0's own.

vLLM's `EngineArgs.get_batch_defaults` picks max_num_batched_tokens and max_num_seqs from the device's total memory
and name; the harness (tests/emit/vllm_defaults_harness.py) asks it, in the cached vLLM 0.33.0 venv, for every
catalog GPU described as CUDA would (its CUDA-visible total, its NVML name, its compute capability), and the test
compares with what the plan uses. The launch scripts leave those flags out when the plan's values equal them, so a
mismatch here would silently change what a deployment runs with.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from infer_advisor.engines.memory import batch_defaults, memory_profile
from infer_advisor.hardware import gpu_catalog
from infer_advisor.hardware.catalog import find_entry

pytestmark = pytest.mark.integration
HARNESS = Path(__file__).parent / "vllm_defaults_harness.py"


@pytest.fixture(scope="module")
def vllm_py() -> Path:
    from tests.emit.vllm_env import VLLM_VERSION, vllm_python

    assert memory_profile("vllm", VLLM_VERSION).covers(VLLM_VERSION)
    return vllm_python()


def test_vllm_033_batch_defaults_match_vllms_own_code(vllm_py):
    gpus = [g for g in gpu_catalog() if g.vendor == "nvidia"]
    devices = []
    for g in gpus:
        entry = find_entry(g.name)
        name = entry.nvml_names[0] if entry.nvml_names else g.name
        major, minor = str(g.compute_capability).split(".")
        devices.append({"name": name, "memory_bytes": g.budget_memory_bytes, "capability": [int(major), int(minor)]})
    env = {**os.environ, "VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR"}
    r = subprocess.run([str(vllm_py), str(HARNESS), json.dumps(devices)], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in r.stdout.splitlines() if line.startswith("{")]
    assert lines, f"harness printed nothing (rc {r.returncode}):\n{r.stderr[-3000:]}"
    theirs = json.loads(lines[-1])
    prof = memory_profile("vllm", "0.33.0")
    assert theirs["gpu_memory_utilization"] == prof.memory_fraction
    ours = [
        list(batch_defaults(prof, usable_memory_bytes=d["memory_bytes"], device_name=d["name"], compute_capability=g.compute_capability))
        for g, d in zip(gpus, devices)
    ]
    mismatches = [(g.name, o, t) for g, o, t in zip(gpus, ours, theirs["devices"]) if o != t]
    assert not mismatches, mismatches
    # the tiers are all exercised: A100-80GB small (by name), DGX Spark small (GB10, compute capability 12.1, by
    # capability), H100 8192/1024, B200 16384/1024
    by_name = {g.name: tuple(t) for g, t in zip(gpus, theirs["devices"])}
    assert by_name["A100-80GB"] == (2048, 256) and by_name["H100-80GB"] == (8192, 1024) and by_name["B200"] == (16384, 1024)
    assert by_name["DGX-Spark"] == (2048, 256)
