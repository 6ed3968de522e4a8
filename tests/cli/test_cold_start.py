"""What `plan` builds and imports on a cold start (issue 19, item 6; figures in docs/speed.md).

pydantic stays the typed contract (PlanRequest in, DeploymentPlan out, data files validated on first read and kept,
``_snapshot``), but a start builds no schema it does not need: none at import, and on a warm cache only the request,
the plan's output sections and the two estimates the plan is made of. A model class that forgets ``defer_build`` or
an internal object validated for nothing shows up here, not as a slower start nobody measures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# Modules whose models a plan may build a schema for: the request (validated input) and the plan's output.
ALLOWED = {
    "infer_advisor.request:PlanRequest",
    "infer_advisor.estimate.speed:PerformanceEstimate",  # DeploymentPlan.performance
    "infer_advisor.estimate.memory:MemoryEstimate",  # the memory model's result, validated as computed
}
ALLOWED_MODULES = ("infer_advisor.plan.models:",)

_PROBE = r"""
import contextlib, io, json, sys
import pydantic
from infer_advisor.cli import main

def complete():
    out, stack = [], [pydantic.BaseModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("infer_advisor") and sub.__dict__.get("__pydantic_complete__"):
                out.append(f"{sub.__module__}:{sub.__name__}")
    return sorted(set(out))

import infer_advisor.cli.plan_cmd, infer_advisor.request, infer_advisor.api, infer_advisor.plan.advise
import infer_advisor.estimate.speed, infer_advisor.simulate, infer_advisor.estimate.step_time
at_import = complete()
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--format", "json"])
print(json.dumps({"code": code, "at_import": at_import, "after_plan": complete(), "modules": sorted(sys.modules)}))
"""


def _run(env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_warm_plan_builds_only_the_request_and_the_plans_schemas(tmp_path):
    env = {**os.environ, "INFER_ADVISOR_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    env.pop("INFER_ADVISOR_NO_SNAPSHOT", None)
    _run(env)  # the first run validates the shipped data and keeps it
    seen = _run(env)
    assert seen["code"] == 0
    assert seen["at_import"] == []  # every model defers its schema (defer_build=True)
    extra = [c for c in seen["after_plan"] if c not in ALLOWED and not c.startswith(ALLOWED_MODULES)]
    assert extra == [], f"schemas built on the plan path for internal objects: {extra}"
    assert "infer_advisor.request:PlanRequest" in seen["after_plan"]
    assert "infer_advisor.plan.models:DeploymentPlan" in seen["after_plan"]
    # kept facts: the architecture reader is not imported for a catalog model, nor the NVML probe for a named GPU,
    # nor speculative decoding's or LoRA's modules for a plan without them
    for module in ("infer_advisor.model_facts.arch", "infer_advisor.model_facts.params", "infer_advisor.hardware.probe",
                   "infer_advisor.engines.speculative", "infer_advisor.engines.draft_shape", "infer_advisor.estimate.lora_cost"):
        assert module not in seen["modules"], module
