"""The per-engine and per-server hook tables (engines/stacks.py, engines/front_server.py): the planner and the emit
stage ask them instead of naming an engine or a server."""

from __future__ import annotations

import pytest

from infer_advisor import advise
from infer_advisor.engines.front_server import FILES, SERVERS, front_server, launch_files
from infer_advisor.engines.stacks import STACKS, server_stack
from infer_advisor.engines.triton import triton_facts
from infer_advisor.errors import RequestError

TRITON_VERSION = next(iter(triton_facts().releases))


def test_a_stack_applies_only_to_its_engine():
    assert server_stack("vllm", "nvidia-triton", "0.11.0") is None
    assert server_stack("trtllm", "nvidia", TRITON_VERSION) is None
    assert server_stack("trtllm", "auto", TRITON_VERSION) is None
    stack = server_stack("trtllm", "nvidia-triton", TRITON_VERSION)
    facts = triton_facts()
    assert stack.config["server"] == "triton" and stack.config["port"] == facts.http_port
    assert stack.config["image"] == stack.decision["value"] == facts.image_for(facts.releases[TRITON_VERSION])
    assert stack.decision["rule_id"] == "server.triton" and stack.note and "MiB" in stack.note


def test_an_unknown_engine_version_behind_a_stack_is_one_line():
    with pytest.raises(RequestError, match="No Triton release is known to ship TensorRT-LLM 0.0.1"):
        server_stack("trtllm", "nvidia-triton", "0.0.1")


def test_every_stack_names_a_server_the_emitters_know():
    for (engine, stack), build in STACKS.items():
        assert build(TRITON_VERSION).config["server"] in SERVERS, (engine, stack)
        assert build(TRITON_VERSION).config["server"] in FILES


def test_a_plan_without_a_server_in_front_gets_none_and_only_its_engines_files():
    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    assert plan.engine.server is None and front_server(plan) is None
    assert launch_files(plan, None, render=lambda *a, **k: "") == []  # vLLM reads no file at start


def test_the_triton_plan_gets_triton_from_the_table():
    plan = advise(model="meta-llama/Llama-3.1-8B-Instruct", gpu="H100-80GB", stack="nvidia-triton")
    server = front_server(plan)
    assert server is SERVERS["triton"]
    assert server.display(plan).startswith("Triton Inference Server ") and server.ports(1)[0].port == server.ports(0)[0].port + 3
    assert [d.rule_id for d in plan.decisions if d.decides == "server"] == ["server.triton"]
