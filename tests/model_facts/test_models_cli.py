"""`infer-advisor models` end to end (real CLI entry point, subprocesses for import-cost checks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from infer_advisor.cli import main


def test_list_json(capsys):
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["models"]
    assert len(rows) >= 32
    llama = next(r for r in rows if r["name"] == "meta-llama/Llama-2-7b-hf")
    assert llama["params_billions"] == 6.74 and llama["context"] == 4096
    assert llama["architecture"] == "LlamaForCausalLM" and llama["source"].startswith("https://huggingface.co/")
    assert next(r for r in rows if r["name"] == "Qwen/Qwen2.5-7B-Instruct-AWQ")["pre_quantized"] == "awq"


def test_list_table(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "meta-llama/Llama-3.1-405B" in out and "405.85" in out and "catalog" in out


def test_the_listing_stays_readable_with_the_whole_catalog(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    rows = json.loads((main(["models", "--json"]), capsys.readouterr().out)[1])["models"]
    ids = len(rows) + sum(len(r["variants"]) for r in rows)
    assert f"{len(rows)} configs, {ids} Hub ids" in out and len(rows) >= 120
    assert "…" not in out  # piped output is as wide as its rows: no figure or name is cut
    lines = [line for line in out.splitlines() if "DeepSeek-V4-Flash " in line or line.rstrip().endswith("DeepSeek-V4-Flash")]
    assert lines and "284.33" in lines[0] and "fp8-block-fp4-experts" in lines[0]  # one line per model


def test_list_one_family(capsys):
    assert main(["models", "--family", "qwen3-vl"]) == 0
    out = capsys.readouterr().out
    assert "Qwen/Qwen3-VL-8B-Instruct" in out and "+ Qwen/Qwen3-VL-32B-Thinking" in out and "Llama" not in out
    assert main(["models", "--family", "glm", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["models"]
    assert rows and {r["family"] for r in rows} == {"GLM-5"} and {r["model_type"] for r in rows} == {"glm_moe_dsa"}


def test_one_model(capsys):
    assert main(["models", "llama-3-8b", "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["name"] == "meta-llama/Meta-Llama-3-8B" and facts["source"] == "catalog"
    assert facts["kv_cache_elements_per_token"] * 2 == 131_072
    assert "config" not in facts  # the raw config stays out of the published JSON
    assert main(["models", "mixtral-8x7b"]) == 0
    out = capsys.readouterr().out
    assert "46,702,792,704" in out and "computed from catalog config.json" in out


def test_unknown_model_is_one_line_and_exit_2(capsys):
    assert main(["models", "lama-2-7b", "--source", "catalog"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "meta-llama/Llama-2-7b-hf" in err
    assert "Traceback" not in err


def test_imports_stay_light():
    code = (
        "import sys; import infer_advisor.cli.models_cmd, infer_advisor.model_facts; "
        "from infer_advisor.model_facts import resolve_model; resolve_model('llama-2-7b', source='catalog'); "
        "heavy = [m for m in ('rich', 'torch', 'transformers', 'huggingface_hub', 'safetensors') if m in sys.modules]; "
        "print(heavy)"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
