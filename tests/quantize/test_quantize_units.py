"""Fast, offline tests of the quantize stage's shared parts: method table, request, calibration, group sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infer_advisor.errors import DataFileError, EngineNotInstalledError, RequestError
from infer_advisor.quantize import QuantizeRequest, QuantizeResult, QuickCheck, method_names, resolve_method
from infer_advisor.quantize.calibration import builtin_calibration_path, load_calibration
from infer_advisor.quantize.core import linear_input_sizes, validate_group_size
from infer_advisor.quantize.methods import method_table, require_backend

SRC = Path(__file__).resolve().parents[2] / "src" / "infer_advisor"


def test_method_table_lists_the_issue_methods_with_sources():
    raw = yaml.safe_load((SRC / "data" / "quantize" / "methods.yaml").read_text())
    assert all(entry["source"] for entry in raw["methods"])
    assert all(entry["source"] for entry in raw["backends"].values())
    assert set(method_names()) == {
        "awq", "w4a16", "ct2-int8", "ct2-int8_float16", "ct2-int8_bfloat16", "ct2-float16", "ct2-bfloat16",
        "ct2-float32", "gguf-f16", "gguf-q8_0", "gguf-q4_k_m", "gguf-q4_0",
    }  # fmt: skip
    assert resolve_method("awq").backend == "llmcompressor"
    assert resolve_method("awq", "autoawq").extra == "autoawq"
    assert resolve_method("ct2-int8_bfloat16").ct2_quantization == "int8_bfloat16"
    assert resolve_method("gguf-q4_k_m").gguf_type == "q4_k_m"
    assert resolve_method("gguf-q4_0").gguf_type == "q4_0"
    extras = {name: b.extra for name, b in method_table().backends.items()}
    assert extras == {"ct2": "ctranslate2", "llmcompressor": "awq", "autoawq": "autoawq", "gguf": "llamacpp"}


def test_extras_named_by_backends_exist_in_pyproject():
    import tomllib

    extras = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for backend in method_table().backends.values():
        assert backend.extra in extras


@pytest.mark.parametrize("name", [b.module for n, b in method_table().backends.items() if n != "gguf"])
def test_backend_modules_follow_the_contract(name):
    import importlib
    import inspect

    module = importlib.import_module(f"infer_advisor.quantize.{name}")
    assert list(inspect.signature(module.run).parameters) == ["source", "work_dir", "spec", "calibration", "progress"]
    assert {"prompt", "max_new_tokens", "eval_texts"} <= set(inspect.signature(module.check).parameters)


def test_group_size_only_for_grouped_methods():
    assert resolve_method("awq", group_size=64).group_size == 64
    assert resolve_method("ct2-int8", group_size=64).group_size is None


def test_unknown_method_and_backend_name_the_fix():
    with pytest.raises(RequestError, match=r"Did you mean 'awq'.*Choose from: awq, w4a16"):
        resolve_method("aqw")
    with pytest.raises(RequestError, match="--backend llmcompressor or autoawq"):
        resolve_method("awq", "ct2")


def test_every_request_field_is_described():
    for model in (QuantizeRequest, QuantizeResult, QuickCheck):
        missing = [n for n, f in model.model_fields.items() if not f.description]
        assert not missing, f"{model.__name__}: {missing}"
    with pytest.raises(ValueError):
        QuantizeRequest(model="m", method="awq", out="o", grup_size=64)


def _config(tmp_path: Path, **fields) -> Path:
    base = {"hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4}
    (tmp_path / "config.json").write_text(json.dumps({**base, **fields}))
    return tmp_path


def test_group_size_must_divide_every_linear_input(tmp_path):
    model = _config(tmp_path, intermediate_size=320)
    assert linear_input_sizes(model)["intermediate_size (down_proj)"] == 320
    validate_group_size(model, resolve_method("awq", group_size=64))
    with pytest.raises(RequestError, match=r"--group-size 128 does not divide intermediate_size \(down_proj\) = 320.*--group-size 64"):
        validate_group_size(model, resolve_method("awq"))
    validate_group_size(model, resolve_method("ct2-int8"))  # no groups: nothing to check


def test_group_size_reads_nested_text_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"text_config": {"hidden_size": 96, "num_attention_heads": 2}}))
    with pytest.raises(RequestError, match="hidden_size"):
        validate_group_size(tmp_path, resolve_method("w4a16"))


def test_builtin_calibration_is_a_few_hundred_lines():
    samples = load_calibration(None, num_samples=10_000)
    assert len(samples) >= 150
    assert builtin_calibration_path().read_text().count("\n") == len(samples)
    assert load_calibration(None, num_samples=5) == samples[:5]


def test_calibration_txt_paragraphs_lines_and_jsonl(tmp_path):
    paragraphs = tmp_path / "p.txt"
    paragraphs.write_text("first line\ncontinues here\n\nsecond paragraph\n\n\nthird\n")
    assert load_calibration(paragraphs, 10) == ["first line continues here", "second paragraph", "third"]
    lines = tmp_path / "l.txt"
    lines.write_text("one\ntwo\nthree\n")
    assert load_calibration(lines, 2) == ["one", "two"]
    rows = tmp_path / "r.jsonl"
    rows.write_text('{"text": "alpha"}\n\n{"text": "beta", "id": 2}\n')
    assert load_calibration(rows, 10) == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.jsonl", '{"text": "ok"}\n{"txt": "no"}\n', 'line 2: expected an object with a "text"'),
        ("bad2.jsonl", "{not json}\n", "line 1: invalid JSON"),
        ("empty.txt", "\n\n", "no calibration text"),
        ("data.csv", "a,b\n", "must be a .txt file"),
    ],
)
def test_calibration_errors_name_file_and_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataFileError, match=message) as err:
        load_calibration(path, 10)
    assert str(path) in str(err.value)
    with pytest.raises(DataFileError, match="not found"):
        load_calibration(tmp_path / "missing.txt", 10)


def test_missing_backend_names_the_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "awq" else real(name, *a))
    with pytest.raises(EngineNotInstalledError, match=r"pip install 'infer-advisor\[autoawq\]'.*missing: awq"):
        require_backend(resolve_method("awq", "autoawq"))


def test_importing_the_stage_stays_light():
    code = (
        "import sys, infer_advisor.quantize, infer_advisor.cli.quantize_cmd; "
        "heavy = [m for m in ('torch', 'transformers', 'ctranslate2', 'llmcompressor', 'awq') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
