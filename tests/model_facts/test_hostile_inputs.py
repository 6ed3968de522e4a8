"""Issue 9, model-facts inputs: every bad model id, config.json or safetensors header is one line on stderr and
exit 2 (never a traceback, never a hang, never a silently wrong 'measured' figure). Each case failed on the old
code; the hypothesis tests fuzz config values and headers with a bounded time per example."""

from __future__ import annotations

import json
import os
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infer_advisor.cli import main
from infer_advisor.errors import ModelConfigError
from infer_advisor.model_facts import facts_from_config, resolve_model
from infer_advisor.model_facts.catalog import find_entry

BASE = find_entry("meta-llama/Llama-3.2-1B").config


def _folder(tmp_path, config, header: dict | None = None, data: bytes = b"", index: dict | None = None):
    folder = tmp_path / "m"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    if header is not None:
        raw = json.dumps(header).encode()
        (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    if index is not None:
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return folder


def _one_line_exit_2(capsys, *argv: str) -> str:
    rc = main(["models", *argv, "--json"])
    out = capsys.readouterr()
    assert rc == 2, out.out[:200]
    assert out.err.count("\n") == 1 and out.err.startswith("error: ") and "Traceback" not in out.err
    return out.err


def test_model_id_of_300_characters(capsys):
    err = _one_line_exit_2(capsys, "a" * 300)
    assert "not found" in err
    _one_line_exit_2(capsys, "owner/" + "b" * 300)
    _one_line_exit_2(capsys, "x" * 5000)


def test_huge_hidden_size(tmp_path, capsys):
    text = json.dumps(BASE).replace('"hidden_size": 2048', '"hidden_size": 1' + "0" * 400)
    err = _one_line_exit_2(capsys, str(_folder(tmp_path, text)))
    assert "hidden_size" in err


@pytest.mark.parametrize("layers", [10**7, 10**9, 10**30])
def test_absurd_layer_counts_fail_fast(tmp_path, capsys, layers):
    start = time.perf_counter()
    err = _one_line_exit_2(capsys, str(_folder(tmp_path, {**BASE, "num_hidden_layers": layers})))
    assert "num_hidden_layers" in err and time.perf_counter() - start < 2


def test_layer_counts_are_per_type_not_per_layer():
    """At the bound (1024 layers) a Qwen3-MoE config with a dense-layer list still costs microseconds per type."""
    cfg = {**find_entry("Qwen/Qwen3-30B-A3B").config, "num_hidden_layers": 1024, "mlp_only_layers": list(range(0, 1024, 7))}
    start = time.perf_counter()
    facts = facts_from_config("m", cfg, "local")
    assert time.perf_counter() - start < 0.5 and facts.num_layers == 1024


@pytest.mark.parametrize("where", ["config", "header"])
def test_deeply_nested_json(tmp_path, capsys, where):
    deep = "[" * 100_000 + "]" * 100_000
    if where == "config":
        folder = _folder(tmp_path, '{"model_type": "llama", "x": ' + deep + "}")
    else:
        folder = _folder(tmp_path, BASE)
        raw = ('{"a": ' + deep + "}").encode()
        (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    assert "nested too deeply" in _one_line_exit_2(capsys, str(folder))


def test_negative_offsets_and_lying_shapes_are_refused(tmp_path, capsys):
    neg = {"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}
    assert "non-negative" in _one_line_exit_2(capsys, str(_folder(tmp_path, BASE, neg, b"\0" * 8)))
    # the 82-byte file that claimed 931 GiB: a shape far larger than its byte range
    lie = {"w": {"dtype": "F32", "shape": [1 << 38], "data_offsets": [0, 8]}}
    assert "needs" in _one_line_exit_2(capsys, str(_folder(tmp_path, BASE, lie, b"\0" * 8)))
    gap = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}
    assert "gap" in _one_line_exit_2(capsys, str(_folder(tmp_path, BASE, gap, b"\0" * 12)))


def test_shard_index_outside_the_folder(tmp_path, capsys):
    outside = tmp_path / "secret.safetensors"
    outside.write_bytes(b"\0" * 16)
    for shard in ("../secret.safetensors", str(outside)):
        folder = _folder(tmp_path, BASE, index={"weight_map": {"w": shard}})
        assert "outside the model folder" in _one_line_exit_2(capsys, str(folder))


def test_more_kv_heads_than_heads(capsys, tmp_path):
    err = _one_line_exit_2(capsys, str(_folder(tmp_path, {**BASE, "num_key_value_heads": 64})))
    assert "num_key_value_heads 64 is more than num_attention_heads 32" in err
    with pytest.raises(ModelConfigError, match="multiple"):
        facts_from_config("m", {**BASE, "num_key_value_heads": 5}, "local")


def test_unreadable_model_folder(tmp_path, capsys, monkeypatch):
    folder = _folder(tmp_path, BASE)
    if os.geteuid() != 0:  # a real permission error where we can make one
        folder.chmod(0)
        try:
            assert "cannot read this folder" in _one_line_exit_2(capsys, str(folder))
        finally:
            folder.chmod(0o755)
    import infer_advisor.model_facts.resolve as resolve

    def denied(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(resolve.os, "listdir", denied)  # root ignores modes: simulate the EACCES it would get
    assert "Permission denied" in _one_line_exit_2(capsys, str(folder))


# ---------------------------------------------------------------------- fuzzing

_values = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(allow_nan=True),
    st.text(max_size=8), st.lists(st.integers(-3, 3), max_size=4), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size", "intermediate_size",
         "head_dim", "max_position_embeddings", "tie_word_embeddings", "sliding_window", "layer_types", "model_type",
         "num_local_experts", "num_experts_per_tok", "rope_scaling", "quantization_config", "text_config"]


@settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(_KEYS), _values, min_size=1, max_size=4),
       base=st.sampled_from(["meta-llama/Llama-3.2-1B", "Qwen/Qwen3-30B-A3B", "openai/gpt-oss-20b", "nvidia/Nemotron-H-56B-Base-8K"]))
def test_fuzzed_config_values_are_a_plan_or_one_line(tmp_path, capsys, changes, base):
    folder = _folder(tmp_path, {**find_entry(base).config, **changes})
    start = time.perf_counter()
    rc = main(["models", str(folder), "--json"])
    out = capsys.readouterr()
    assert time.perf_counter() - start < 2
    assert rc in (0, 2)
    if rc == 2:
        assert out.err.count("\n") == 1 and "Traceback" not in out.err


_dims = st.lists(st.integers(-2, 2**41), max_size=3)


@settings(max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tensors=st.dictionaries(
        st.text(min_size=1, max_size=4),
        st.fixed_dictionaries({"dtype": st.sampled_from(["F32", "BF16", "I8", "F4", "XYZ"]), "shape": _dims,
                               "data_offsets": st.lists(st.integers(-10, 64), min_size=0, max_size=3)}),
        max_size=3,
    ),
    data=st.binary(max_size=64),
)
def test_fuzzed_safetensors_headers_are_measured_or_one_line(tmp_path, capsys, tensors, data):
    folder = _folder(tmp_path, BASE, tensors, data)
    rc = main(["models", str(folder), "--json"])
    out = capsys.readouterr()
    assert rc in (0, 2)
    if rc == 2:
        assert out.err.count("\n") == 1 and "Traceback" not in out.err
    else:  # whatever is reported as measured is within the file
        st_summary = json.loads(out.out)["safetensors"]
        assert st_summary["total_bytes"] <= len(data)


def test_resolve_model_raises_the_project_errors_only(tmp_path):
    with pytest.raises(ModelConfigError):
        resolve_model(str(_folder(tmp_path, "{not json")), source="local")
