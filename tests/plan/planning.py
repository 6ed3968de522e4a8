"""Shared helpers for the plan and rules tests: catalog models, fixed hardware, and one call to `advise`.

Hardware is built from the GPU catalog (``resolve_hardware(spec)``), never probed, so the answers do not
depend on the machine running the tests. ``cpu`` is a fixed 16-core host with 64 GiB of RAM. A GPU that is
not in the catalog (e.g. a Pascal card, to test the compute-capability gates) is given as a dict.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from infer_advisor.hardware import CPUInfo, GPUInfo, HardwareFacts, resolve_hardware  # noqa: E402
from infer_advisor.model_facts import resolve_model  # noqa: E402
from infer_advisor.model_facts.build import facts_from_config  # noqa: E402
from infer_advisor.model_facts.catalog import find_entry  # noqa: E402
from infer_advisor.model_facts.facts import ModelFacts  # noqa: E402
from infer_advisor.plan import DeploymentPlan, advise  # noqa: E402

GiB = 2**30
# The scenario host for `gpu: cpu`: 16 cores, 64 GiB of RAM (a common cloud CPU instance, e.g. 16 vCPU / 64 GiB).
CPU_HOST = CPUInfo(cores=16, memory_bytes=64 * GiB, name="scenario host (16 cores, 64 GiB)")


@cache
def catalog_model(name: str, pre_quantized_as: str | None = None) -> ModelFacts:
    """The catalog's facts for ``name``; with ``pre_quantized_as``, as if config.json had that quant_method."""
    if pre_quantized_as is None:
        return resolve_model(name, source="catalog")
    entry = find_entry(name)
    assert entry is not None, name
    config = {**entry.config, "quantization_config": {"quant_method": pre_quantized_as, "bits": 4, "group_size": 128}}
    return facts_from_config(f"{entry.name}-{pre_quantized_as}", config, "catalog")


def hardware(gpu: str | dict[str, Any]) -> HardwareFacts:
    """Hardware for a catalog spec ('H100-80GB:8x2'), 'cpu' (the fixed host), or a dict describing one GPU model."""
    if isinstance(gpu, dict):
        spec = dict(gpu)
        count = spec.pop("count", 1)
        info = GPUInfo(
            name=spec["name"],
            memory_bytes=int(spec["memory_gib"] * GiB),
            compute_capability=spec["compute_capability"],
            memory_bandwidth_bytes_per_s=spec["bandwidth_gb_s"] * 1e9,
            interconnect_bandwidth_bytes_per_s=16e9,
            catalog_source=spec["source"],
            vendor=spec.get("vendor", "nvidia"),
        )
        return HardwareFacts(kind="gpu", gpus=[info] * count, source="catalog", spec=spec["name"])
    if gpu == "cpu":
        return HardwareFacts(kind="cpu", cpu=CPU_HOST, source="catalog", spec="cpu")
    return resolve_hardware(gpu)


def plan_for(model: str, gpu: str | dict[str, Any], *, pre_quantized_as: str | None = None, explain: bool = False, **options: Any) -> DeploymentPlan:
    """``advise`` for a catalog model on fixed hardware; ``options`` are PlanRequest fields."""
    spec = gpu if isinstance(gpu, str) else gpu["name"]
    if not isinstance(gpu, str) or gpu == "cpu":
        spec = "cpu" if gpu == "cpu" else "auto"
    return advise(
        model=model,
        gpu=spec,
        model_facts=catalog_model(model, pre_quantized_as),
        hardware=hardware(gpu),
        explain=explain,
        model_source="catalog",
        **options,
    )
