"""Local folders: config.json plus safetensors headers written by the real `safetensors` library."""

from __future__ import annotations

import json
import struct

import pytest
import torch
from safetensors.torch import save_file

from infer_advisor.errors import ModelConfigError, ModelNotFoundError, UnsupportedArchitectureError
from infer_advisor.model_facts import resolve_model
from infer_advisor.model_facts.catalog import find_entry

SMALL_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 100,
    "torch_dtype": "bfloat16",
}


def write_folder(path, config=SMALL_LLAMA, tensors=None):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config))
    if tensors is not None:
        save_file(tensors, str(path / "model.safetensors"))
    return path


def mixed_tensors():
    return {
        "a.weight": torch.zeros(3, 5, dtype=torch.bfloat16),  # 15 elements, 30 bytes
        "b.weight": torch.zeros(7, dtype=torch.float16),  # 7 elements, 14 bytes
        "c.qweight": torch.zeros(2, 4, dtype=torch.int32),  # 8 elements, 32 bytes
    }


def test_single_file_header_counts(tmp_path):
    folder = write_folder(tmp_path / "m", tensors=mixed_tensors())
    f = resolve_model(str(folder))
    assert f.source == "local" and f.name == str(folder)
    st = f.safetensors
    assert (st.num_tensors, st.num_parameters, st.num_files) == (3, 30, 1)
    assert st.bytes_by_dtype == {"BF16": 30, "F16": 14, "I32": 32}
    assert st.total_bytes == 76
    assert f.num_parameters == 64 * 100 * 2 + 2 * (64 * 64 * 2 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64) + 64


def test_sharded_checkpoint_uses_the_index(tmp_path):
    folder = write_folder(tmp_path / "m")
    save_file({"x": torch.zeros(10, dtype=torch.bfloat16)}, str(folder / "model-00001-of-00002.safetensors"))
    save_file({"y": torch.zeros(4, 4, dtype=torch.float32)}, str(folder / "model-00002-of-00002.safetensors"))
    save_file({"stray": torch.zeros(1000)}, str(folder / "not-in-index.safetensors"))  # ignored: not in weight_map
    index = {
        "metadata": {"total_size": 84},
        "weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"},
    }
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    st = resolve_model(str(folder), source="local").safetensors
    assert (st.num_tensors, st.num_parameters, st.num_files) == (2, 26, 2)
    assert st.bytes_by_dtype == {"BF16": 20, "F32": 64}


def test_index_naming_a_missing_shard(tmp_path):
    folder = write_folder(tmp_path / "m")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {"x": "gone.safetensors"}}))
    with pytest.raises(ModelConfigError, match="gone.safetensors"):
        resolve_model(str(folder))


def test_folder_without_safetensors_has_no_summary(tmp_path):
    f = resolve_model(str(write_folder(tmp_path / "m")))
    assert f.safetensors is None and f.torch_dtype == "bfloat16"


def test_truncated_header(tmp_path):
    folder = write_folder(tmp_path / "m", tensors=mixed_tensors())
    path = folder / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[:20])  # header length says more than the file holds
    with pytest.raises(ModelConfigError) as err:
        resolve_model(str(folder))
    assert str(path) in str(err.value) and "truncated" in str(err.value)
    path.write_bytes(data[:5])  # not even the 8-byte length
    with pytest.raises(ModelConfigError, match="truncated"):
        resolve_model(str(folder))


def test_truncated_data(tmp_path):
    folder = write_folder(tmp_path / "m", tensors=mixed_tensors())
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-10])  # header intact, tensor data cut short
    with pytest.raises(ModelConfigError, match="truncated or corrupt"):
        resolve_model(str(folder))


def test_garbage_header(tmp_path):
    folder = write_folder(tmp_path / "m")
    junk = b"\xff\xfe not json at all {{{"
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(junk)) + junk)
    with pytest.raises(ModelConfigError, match="not valid JSON"):
        resolve_model(str(folder))
    bad = json.dumps({"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(bad)) + bad + b"\0" * 8)
    with pytest.raises(ModelConfigError, match="'t'"):
        resolve_model(str(folder))
    (folder / "model.safetensors").write_bytes(b"PK\x03\x04" + b"\0" * 100)  # a zip, not safetensors
    with pytest.raises(ModelConfigError, match="header length"):
        resolve_model(str(folder))


def test_malformed_and_missing_config(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    with pytest.raises(ModelConfigError, match="no config.json"):
        resolve_model(str(folder))
    (folder / "config.json").write_text('{"model_type": "llama", "hidden_size": 64,')
    with pytest.raises(ModelConfigError) as err:
        resolve_model(str(folder))
    assert str(folder / "config.json") in str(err.value) and "invalid JSON" in str(err.value)
    (folder / "config.json").write_text("[1, 2]")
    with pytest.raises(ModelConfigError, match="JSON object"):
        resolve_model(str(folder))
    (folder / "config.json").write_text(json.dumps({k: v for k, v in SMALL_LLAMA.items() if k != "vocab_size"}))
    with pytest.raises(ModelConfigError, match="vocab_size"):
        resolve_model(str(folder))


def test_unsupported_architecture(tmp_path):
    folder = write_folder(
        tmp_path / "m", {"architectures": ["RWKVForCausalLM"], "model_type": "rwkv", "hidden_size": 8}
    )
    with pytest.raises(UnsupportedArchitectureError, match="RWKVForCausalLM"):
        resolve_model(str(folder))


def test_local_source_requires_a_folder(tmp_path):
    with pytest.raises(ModelNotFoundError, match="not a directory"):
        resolve_model(str(tmp_path / "nope"), source="local")


def test_catalog_config_in_a_folder_gives_the_same_count(tmp_path):
    config = find_entry("google/gemma-3-27b-it").config
    f = resolve_model(str(write_folder(tmp_path / "g", config)))
    assert f.num_parameters == resolve_model("gemma-3-27b", source="catalog").num_parameters


@pytest.mark.integration
def test_tiny_llama_checkpoint_matches_its_headers(tmp_path):
    from tests.support.tiny_llama import build_tiny_llama

    folder = build_tiny_llama(tmp_path / "tiny")
    f = resolve_model(str(folder))
    assert f.safetensors is not None
    # untied, unquantized: the analytic count is what the checkpoint holds, tensor for tensor
    assert f.num_parameters == f.safetensors.num_parameters
    assert f.safetensors.bytes_by_dtype == {"F32": 4 * f.num_parameters}
    assert f.torch_dtype == "float32"
    assert f.safetensors.num_tensors == 2 + 2 * 9 + 1  # embed, lm_head, 9 per layer, final norm
