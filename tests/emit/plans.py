"""Real plans for the emit tests: catalog model facts + catalog GPUs through the planner (`_plan`)."""

from __future__ import annotations

import os

os.environ.setdefault("INFER_ADVISOR_NO_NVML", "1")

from infer_advisor.hardware.resolve import resolve_hardware  # noqa: E402
from infer_advisor.model_facts.build import facts_from_config  # noqa: E402
from infer_advisor.model_facts.catalog import find_entry  # noqa: E402
from infer_advisor.plan.advise import _plan  # noqa: E402
from infer_advisor.plan.models import DeploymentPlan  # noqa: E402
from infer_advisor.request import PlanRequest  # noqa: E402


def catalog_facts(model: str):
    entry = find_entry(model)
    assert entry is not None, model
    return facts_from_config(entry.name, entry.config, "catalog")


def make_plan(model: str = "meta-llama/Llama-2-7b-hf", gpu: str = "A100-80GB", **options) -> DeploymentPlan:
    request = PlanRequest(model=model, gpu=gpu, **options)
    return _plan(request, catalog_facts(model), resolve_hardware(gpu), False)


def local_plan(path: str, config: dict | None = None, **options) -> DeploymentPlan:
    """A plan whose model was read from a local folder at ``path`` (facts from ``config``, default Llama-2-7b's)."""
    facts = facts_from_config(path, config or find_entry("meta-llama/Llama-2-7b-hf").config, "local")
    request = PlanRequest(model=path, gpu=options.pop("gpu", "A100-80GB"), **options)
    return _plan(request, facts, resolve_hardware(request.gpu), False)


# One plan per engine: the golden files and the tool checks use these.
GOLDEN = {
    "vllm": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB"),
    "vllm-multinode": dict(model="meta-llama/Llama-3.1-405B", gpu="H100-80GB:8x2"),
    "sglang": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="sglang", quantization="awq"),
    "tgi": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="tgi"),
    "llama.cpp": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="llama.cpp", quantization="gguf-q4_k_m"),
    "ctranslate2": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="ctranslate2"),
    "transformers": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB", engine="transformers"),
    "trtllm": dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", stack="nvidia", kv_cache_dtype="fp8"),
    "trtllm-speculative": dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="H100-80GB:4", engine="trtllm", goal="latency"),
    "mlc": dict(model="meta-llama/Llama-3.1-8B", gpu="RTX-4090", goal="latency"),
    "exllamav2": dict(model="meta-llama/Llama-3.1-8B", gpu="RTX-4090", engine="exllamav2", goal="latency", context=8192),
    "mistralrs-cpu": dict(model="meta-llama/Llama-3.1-8B", gpu="cpu", engine="mistralrs", context=8192),
    "mistralrs-gpu": dict(model="meta-llama/Llama-3.1-8B", gpu="L40S", engine="mistralrs", context=8192),
    "llama.cpp-cpu": dict(model="meta-llama/Llama-3.1-8B", gpu="cpu", context=8192),
    "vllm-mi300x": dict(model="meta-llama/Llama-3.1-70B", gpu="MI300X"),
    "vllm-replicas": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB:4"),
    "vllm-speculative": dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="H100-80GB:4", goal="latency"),
    "tgi-replicas": dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB:2", engine="tgi"),
    "trtllm-triton": dict(model="meta-llama/Llama-3.1-8B", gpu="H100-80GB", stack="nvidia-triton", kv_cache_dtype="fp8"),
    "trtllm-triton-replicas": dict(model="meta-llama/Llama-3.3-70B-Instruct", gpu="H100-80GB:8", stack="nvidia-triton", goal="latency"),
}
