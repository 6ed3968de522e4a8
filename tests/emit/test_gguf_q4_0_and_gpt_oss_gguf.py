"""gguf-q4_0 end to end, and gpt-oss on llama.cpp from ggml-org's native MXFP4 GGUF (gguf10).

Q4_0 is llama.cpp's legacy 4-bit type (ggml block_q4_0: 32 weights + one fp16 scale = 4.5 bits; llama-quantize's
type name Q4_0, tools/quantize/quantize.cpp QUANT_OPTIONS). gpt-oss is served by llama.cpp from its own GGUF, the
experts in ggml type MXFP4 (llama.cpp PR #15091); ggml-org publishes it as ggml-org/gpt-oss-20b-GGUF / -120b-GGUF.
Every artifact of both plans passes the real tools (bash -n, shellcheck, hadolint, kubernetes-validate, compose)."""

from __future__ import annotations

import pytest
from tests.emit.plans import make_plan

from infer_advisor.emit import render
from infer_advisor.estimate.weights import weights_bytes
from tests.emit.checks import check_file, flag_value

GIB = 2**30


@pytest.fixture(scope="module")
def q4_0_plan():
    return make_plan(model="Qwen/Qwen3-30B-A3B", gpu="RTX-4090", engine="llama.cpp", quantization="gguf-q4_0", concurrency=1)


@pytest.fixture(scope="module")
def gpt_oss_plan():
    return make_plan(model="openai/gpt-oss-20b", gpu="RTX-4090", engine="llama.cpp", concurrency=1)


def test_q4_0_plans_with_4_5_bit_weights_and_a_quantize_step(q4_0_plan):
    q = q4_0_plan.quantization
    assert q4_0_plan.feasible and q.method == "gguf-q4_0" and q.bits == 4.5 and q.needs_quantize_step
    # 30.5B parameters at 4.5 bits (every tensor Q4_0 in the format table): about 16 GiB
    assert 15.5 * GIB < q4_0_plan.memory.weights_bytes < 16.5 * GIB


def test_q4_0_artifacts_quantize_to_q4_0_and_serve_that_file(q4_0_plan):
    files = render(q4_0_plan, "all")
    for name, text in files.items():
        check_file(name, text)
    serve = files["serve.sh"]
    assert "--method gguf-q4_0" in serve and "model-q4_0.gguf" in serve
    assert "model-q4_0.gguf" in files["docker-compose.yml"] and "model-q4_0.gguf" in files["k8s.yaml"]


def test_gpt_oss_on_llama_cpp_serves_the_mxfp4_gguf(gpt_oss_plan):
    plan = gpt_oss_plan
    assert plan.feasible and plan.engine.name == "llama.cpp"
    q = plan.quantization
    assert q.method == "gguf-mxfp4" and q.pre_quantized and not q.needs_quantize_step
    assert q.published_checkpoint is not None and q.published_checkpoint.repo == "ggml-org/gpt-oss-20b-GGUF"
    # the file's size as llama-bench prints it: 11.27 GiB
    assert abs(plan.memory.weights_bytes / GIB - 11.27) < 0.01


def test_gpt_oss_artifacts_pull_the_repository_with_hf(gpt_oss_plan):
    files = render(gpt_oss_plan, "all")
    for name, text in files.items():
        check_file(name, text)
    serve = files["serve.sh"]
    assert "-hf ggml-org/gpt-oss-20b-GGUF " in serve and "infer-advisor quantize" not in serve


def test_mxfp4_gguf_format_matches_llama_bench_sizes():
    """The format alone (MXFP4 experts, Q8_0 elsewhere) against llama-bench's printed sizes of both files."""
    from tests.emit.plans import catalog_facts

    for model, printed in (("openai/gpt-oss-20b", 11.27), ("openai/gpt-oss-120b", 59.02)):
        got = weights_bytes(catalog_facts(model), "gguf-mxfp4", "bfloat16") / GIB
        assert abs(got / printed - 1) < 0.01, (model, got)


def test_other_engines_still_serve_gpt_oss_in_mxfp4_experts():
    plan = make_plan(model="openai/gpt-oss-20b", gpu="H100-80GB", engine="vllm")
    assert plan.quantization.method == "mxfp4-experts" and plan.quantization.published_checkpoint is None


def test_gpt_oss_120b_gguf_command():
    plan = make_plan(model="openai/gpt-oss-120b", gpu="H100-80GB", engine="llama.cpp", concurrency=1)
    assert plan.feasible and plan.quantization.method == "gguf-mxfp4"
    argv = render(plan, "script")["serve.sh"].split()
    assert flag_value(argv, "-hf") == "ggml-org/gpt-oss-120b-GGUF"


@pytest.mark.parametrize(("args", "method", "served"), [
    (["--model", "Qwen/Qwen3-30B-A3B", "--quantization", "gguf-q4_0"], "gguf-q4_0", "model-q4_0.gguf"),
    (["--model", "openai/gpt-oss-20b"], "gguf-mxfp4", "ggml-org/gpt-oss-20b-GGUF"),
])
def test_cli_plan_json_and_emit(args, method, served, tmp_path, monkeypatch, capsys):
    """The user's path: `plan --format json`, then `plan --emit all` (what was refused before gguf10)."""
    import json

    from infer_advisor._output import MANIFEST
    from infer_advisor.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("INFER_ADVISOR_NO_NVML", "1")
    base = ["plan", *args, "--model-source", "catalog", "--gpu", "RTX-4090", "--engine", "llama.cpp", "--concurrency", "1"]
    assert main([*base, "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["feasible"] and plan["quantization"]["method"] == method
    out = tmp_path / "out"
    assert main([*base, "--emit", "all", "--out", str(out)]) == 0
    for path in out.iterdir():
        if path.name != MANIFEST:
            check_file(path.name, path.read_text())
    assert served in (out / "serve.sh").read_text()
