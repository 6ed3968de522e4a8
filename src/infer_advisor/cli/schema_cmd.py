"""`infer-advisor schema`: the JSON Schema of the published result models (the stable contract)."""

from __future__ import annotations

import argparse
import json

HELP = "Print the JSON Schema of the plan (or another result) model."
_MODELS = {
    "plan": ("infer_advisor.plan.models", "DeploymentPlan"),
    "request": ("infer_advisor.request", "PlanRequest"),
    "model-facts": ("infer_advisor.model_facts.facts", "ModelFacts"),
    "hardware": ("infer_advisor.hardware.facts", "HardwareFacts"),
    "rules": ("infer_advisor.rules.schema", "RuleFile"),
    "capacity": ("infer_advisor.capacity.result", "CapacityResult"),
    "diagnosis": ("infer_advisor.doctor.diagnosis", "Diagnosis"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    from ._format import add_format_option

    parser.add_argument("which", nargs="?", default="plan", choices=sorted(_MODELS), help="Which model (default: plan).")
    add_format_option(parser, ("json",), help="json (the only format: a JSON Schema; accepted so every command takes --format json).")


def run(ns: argparse.Namespace) -> int:
    import importlib

    module, name = _MODELS[ns.which]
    model = getattr(importlib.import_module(module), name)
    print(json.dumps(model.model_json_schema(), indent=2))
    return 0
