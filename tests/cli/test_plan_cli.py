"""`infer-advisor plan` end to end: the JSON contract, offline, and one-line errors with exit 2."""

import json

import pytest

from infer_advisor.cli import main

CONTRACT = [
    ("model", "name"), ("model", "source"), ("model", "num_parameters"), ("model", "architecture"),
    ("memory", "weights_bytes"), ("memory", "kv_cache_bytes_per_token"), ("memory", "total_bytes_per_gpu"),
    ("engine", "name"), ("quantization", "method"), ("parallelism", "tensor_parallel_size"),
    ("parallelism", "pipeline_parallel_size"), ("parallelism", "nodes"),
]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def run_json(capsys, *args):
    rc = main(["plan", *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_default_plan_json_contract(capsys):
    rc, plan = run_json(capsys, "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB")
    assert rc == 0
    for section, key in CONTRACT:
        assert key in plan[section], (section, key)
    assert plan["model"]["source"] == "catalog"
    assert plan["model"]["num_parameters"] == 6_738_415_616
    assert plan["memory"]["kv_cache_bytes_per_token"] == 524_288
    assert plan["hardware"]["gpus"][0]["name"] == "A100-80GB"
    assert plan["hardware"]["gpus"][0]["compute_capability"] == 8.0
    assert isinstance(plan["dtype"], str) and plan["quantization"]["method"] == "none"
    assert all(d["rule_id"] for d in plan["decisions"])
    assert plan["performance"] is None or plan["performance"]["source"] in ("estimated", "calibrated")


def test_table_output_names_sources(capsys):
    assert main(["plan", "--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB"]) == 0
    out = capsys.readouterr().out
    assert "catalog" in out and "estimated" in out and "vllm" in out


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "meta-llama/Llama-2-7b-hff", "--gpu", "A100-80GB"], "Did you mean"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "H10"], "Unknown GPU"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB:0"], "Bad GPU spec"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB:4x-1"], "Bad GPU spec"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--context", "99999"], "max_position_embeddings"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--concurrency", "0"], "--concurrency"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
        (["--model", "meta-llama/Llama-2-7b-hf", "--gpu", "A100-80GB", "--rules", "/nonexistent/rules"], "rule"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    assert main(["plan", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert needle in err


def test_malformed_local_config_is_one_line(capsys, tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    assert main(["plan", "--model", str(tmp_path), "--gpu", "A100-80GB"]) == 2
    err = capsys.readouterr().err
    assert "config.json" in err and err.count("\n") == 1


def test_truncated_safetensors_header_is_one_line(capsys, tmp_path):
    from infer_advisor.model_facts import resolve_model

    cfg = resolve_model("meta-llama/Llama-2-7b-hf", source="catalog").config
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "model.safetensors").write_bytes((1000).to_bytes(8, "little") + b'{"a": ')
    assert main(["plan", "--model", str(tmp_path), "--gpu", "A100-80GB"]) == 2
    err = capsys.readouterr().err
    assert "safetensors" in err and err.count("\n") == 1


def test_local_model_is_read_from_disk(capsys, tmp_path):
    from infer_advisor.model_facts import resolve_model

    cfg = resolve_model("Qwen/Qwen2.5-0.5B", source="catalog").config
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    rc, plan = run_json(capsys, "--model", str(tmp_path), "--gpu", "T4")
    assert rc == 0
    assert plan["model"]["source"] == "local"
    assert plan["dtype"] == "float16"  # T4 has no bfloat16


def test_infeasible_plan_exits_1_with_reason_and_suggestion(capsys):
    rc, plan = run_json(capsys, "--model", "meta-llama/Llama-3.1-405B", "--gpu", "T4")
    assert rc == 1
    assert plan["feasible"] is False
    assert plan["infeasible_reason"]
    assert plan["suggestion"] and plan["suggestion"].startswith("--gpu ")


def test_triton_follows_the_engine_version_and_refuses_one_it_has_no_release_for(capsys):
    """--stack nvidia-triton with main's --engine-version: the Triton release is looked up for the version the plan
    runs; a TensorRT-LLM version data/triton.yaml does not map to a Triton release is one line, exit 2 (plain
    --stack nvidia plans it, with main's version note)."""
    base = ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB", "--engine", "trtllm"]
    rc, plan = run_json(capsys, *base, "--stack", "nvidia-triton", "--engine-version", "1.2.1")
    assert rc == 0 and plan["engine"]["server"] == "triton" and plan["engine"]["server_version"] == "26.07"
    assert plan["engine"]["image"] == "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3"
    assert any(d["rule_id"] == "server.triton" for d in plan["decisions"])
    rc, plan = run_json(capsys, *base, "--stack", "nvidia", "--engine-version", "1.1.0")
    assert rc == 0 and plan["engine"]["server"] is None and plan["engine"]["version"] == "1.1.0"
    rc = main(["plan", *base, "--stack", "nvidia-triton", "--engine-version", "1.1.0"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "No Triton release is known to ship TensorRT-LLM 1.1.0" in err
