"""GGUF backend: the f16 file against its source, llama.cpp's view of it, and llama.cpp's own Q8_0 / Q4_K_M.

Ground truth comes from outside the backend: gguf-py's reader for the file, transformers for the source
logits, llama.cpp (llama-cpp-python, built once into a cached venv) for loading, tokenizing and quantizing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from infer_advisor.errors import ModelConfigError, UnsupportedArchitectureError  # noqa: E402
from infer_advisor.quantize.gguf_backend import run  # noqa: E402
from infer_advisor.quantize.methods import resolve_method  # noqa: E402
from tests.bench.llamacpp_env import llama_env, llama_python  # noqa: E402
from tests.support.tiny_llama import build_tiny_llama  # noqa: E402

TEXT = "The key value cache grows with context length and concurrency."


def _f16(src: Path, work: Path) -> Path:
    run(src, work, resolve_method("gguf-f16"), [], lambda _m: None)
    return work / "model-f16.gguf"


@pytest.fixture(scope="module")
def f16_file(tiny_llama: Path, tmp_path_factory) -> Path:
    return _f16(tiny_llama, tmp_path_factory.mktemp("gguf-f16"))


def _unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Inverse of convert_hf_to_gguf.py's LlamaModel.permute (llama.cpp's interleaved rows -> HF rotate-half)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_f16_file_matches_the_checkpoint(tiny_llama, f16_file):
    from gguf import GGUFReader
    from safetensors.numpy import load_file
    from transformers import AutoTokenizer

    reader = GGUFReader(f16_file)
    field = lambda k: reader.fields[k].contents()  # noqa: E731
    cfg = json.loads((tiny_llama / "config.json").read_text())
    assert field("general.architecture") == "llama"
    assert field("llama.block_count") == cfg["num_hidden_layers"]
    assert field("llama.attention.head_count_kv") == cfg["num_key_value_heads"]
    assert field("tokenizer.ggml.model") == "gpt2" and field("tokenizer.ggml.pre") == "gpt-2"
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    vocab = tok.get_vocab()
    assert field("tokenizer.ggml.tokens") == sorted(vocab, key=vocab.get)
    assert field("tokenizer.ggml.eos_token_id") == tok.eos_token_id

    weights = load_file(tiny_llama / "model.safetensors")
    tensors = {t.name: t for t in reader.tensors}
    assert len(tensors) == len(weights)
    for t in tensors.values():
        assert t.tensor_type.name == ("F16" if len(t.shape) == 2 else "F32")
    emb = np.asarray(tensors["token_embd.weight"].data, dtype=np.float32)
    np.testing.assert_allclose(emb, weights["model.embed_tokens.weight"], atol=1e-3)
    q = np.asarray(tensors["blk.1.attn_q.weight"].data, dtype=np.float32)
    k = np.asarray(tensors["blk.1.attn_k.weight"].data, dtype=np.float32)
    np.testing.assert_allclose(
        _unpermute(q, cfg["num_attention_heads"]), weights["model.layers.1.self_attn.q_proj.weight"], atol=1e-3
    )
    np.testing.assert_allclose(
        _unpermute(k, cfg["num_key_value_heads"]), weights["model.layers.1.self_attn.k_proj.weight"], atol=1e-3
    )


def test_unsupported_inputs_are_refused(tiny_llama, tmp_path):
    import shutil

    src = tmp_path / "src"
    shutil.copytree(tiny_llama, src)
    tok = json.loads((src / "tokenizer.json").read_text())
    tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    (src / "tokenizer.json").write_text(json.dumps(tok))
    with pytest.raises(ModelConfigError, match="GPT-2 pre-tokenizer"):
        _f16(src, tmp_path / "a")
    cfg = json.loads((src / "config.json").read_text())
    cfg["architectures"] = ["GPT2LMHeadModel"]
    (src / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UnsupportedArchitectureError, match="GPT2LMHeadModel"):
        _f16(src, tmp_path / "b")


def _in_llama_venv(script: str, *args: str, timeout: float = 600) -> dict:
    """Run ``script`` with the llama.cpp venv's python (infer_advisor from this checkout); it prints one JSON line."""
    proc = subprocess.run(
        [str(llama_python()), "-c", script, *args], capture_output=True, text=True, env=llama_env(), timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


LOGITS = """
import json, sys, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, logits_all=True, verbose=False)
ids = llm.tokenize(sys.argv[2].encode(), add_bos=True, special=False)
llm.eval(ids)
print(json.dumps({"ids": ids, "logits": [list(map(float, llm.scores[i])) for i in range(len(ids))]}))
"""


@pytest.mark.integration
def test_llama_cpp_reads_the_f16_file_like_transformers(tiny_llama, f16_file):
    """llama.cpp tokenizes as the HF tokenizer does and its logits match transformers' (f16 weights)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    got = _in_llama_venv(LOGITS, str(f16_file), TEXT)
    tok = AutoTokenizer.from_pretrained(tiny_llama)
    assert got["ids"] == tok(TEXT)["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(tiny_llama, dtype=torch.float32).eval()
    with torch.no_grad():
        ref = model(torch.tensor([got["ids"]])).logits[0].numpy()
    ours = np.array(got["logits"], dtype=np.float32)
    assert ours.shape == ref.shape
    np.testing.assert_allclose(ours, ref, atol=2e-2, rtol=0)
    assert (ours.argmax(-1) == ref.argmax(-1)).mean() >= 0.9


QUANTIZE = """
import json, sys
from pathlib import Path
from infer_advisor.quantize.gguf_backend import run, check
from infer_advisor.quantize.methods import resolve_method
spec = resolve_method(sys.argv[3])
notes = run(Path(sys.argv[1]), Path(sys.argv[2]), spec, [], lambda m: None)
result = check(Path(sys.argv[2]), spec, prompt="The quick brown fox", max_new_tokens=8, eval_texts=[sys.argv[4]])
print(json.dumps({"notes": notes, "files": sorted(p.name for p in Path(sys.argv[2]).iterdir()), "check": result.model_dump()}))
"""


@pytest.fixture(scope="module")
def wide_llama(tmp_path_factory) -> Path:
    """Rows of 256: the smallest width whose every matrix holds whole k-quant blocks (QK_K = 256)."""
    return build_tiny_llama(tmp_path_factory.mktemp("wide") / "wide-llama", hidden_size=256, intermediate_size=512)


@pytest.mark.integration
@pytest.mark.parametrize(("method", "expect"), [("gguf-q8_0", {"Q8_0"}), ("gguf-q4_k_m", {"Q4_K", "Q6_K"}), ("gguf-q4_0", {"Q4_0"})])
def test_llama_cpp_quantizes_and_runs(wide_llama, tmp_path, method, expect):
    out = tmp_path / method
    got = _in_llama_venv(QUANTIZE, str(wide_llama), str(out), method, TEXT)
    gguf_type = method.removeprefix("gguf-")
    assert got["files"] == [f"model-{gguf_type}.gguf"]
    from infer_advisor.quantize.gguf_backend import tensor_type_summary

    types = {part.split(" x ")[0] for part in tensor_type_summary(out / got["files"][0]).split(", ")}
    assert expect <= types, types
    assert any("tensor types written by llama.cpp" in n for n in got["notes"])
    check = got["check"]
    assert check["status"] == "passed" and check["tokens_generated"] == 8
    # A random model over a 512-token vocabulary: perplexity near the vocabulary size, finite.
    assert 50 < check["perplexity_after"] < 5000


def test_quantize_api_writes_gguf_f16(tiny_llama, tmp_path):
    """Through the shared quantize() pipeline (staging, sizes, summary) with this backend."""
    from infer_advisor.quantize import quantize

    result = quantize(tiny_llama, "gguf-f16", tmp_path / "out", progress=False)
    assert "model-f16.gguf" in {p.name for p in (tmp_path / "out").iterdir()}
    assert 0.4 < result.ratio < 0.6  # f32 checkpoint -> f16 matrices
