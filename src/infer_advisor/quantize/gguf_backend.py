"""GGUF backend: write a Hugging Face Llama-family checkpoint as GGUF (f16), then k-quantize it with llama.cpp.

    notes = run(Path("tiny"), Path("out"), spec, calibration=[], progress=print)   # out/model-q4_k_m.gguf

How, and why not llama.cpp's ``convert_hf_to_gguf.py``:

- The f16 file is written with the ``gguf`` package's own ``GGUFWriter`` (gguf-py, the library
  ``convert_hf_to_gguf.py`` itself writes with), using its tensor-name map and the same Q/K row permutation
  that script applies to Llama checkpoints. The script is not installed by any wheel (it lives only in
  llama-cpp-python's source distribution) and refuses every BPE tokenizer whose pre-tokenizer hash it does
  not list ("BPE pre-tokenizer was not recognized"), which includes every tokenizer trained locally. Here
  the pre-tokenizer is read from ``tokenizer.json`` instead of guessed from a hash: a byte-level BPE whose
  pre-tokenizer is the GPT-2 regex (``ByteLevel`` with ``use_regex``) is written as ``tokenizer.ggml.model
  = gpt2`` with ``tokenizer.ggml.pre = gpt-2``, vocabulary and merges taken from the tokenizer itself.
  Other pre-tokenizers are refused with a one-line error rather than written wrong.
- Q8_0, Q4_0 and Q4_K_M come from llama.cpp's own quantizer, ``llama_model_quantize`` in the compiled
  bindings of llama-cpp-python (the ``llamacpp`` extra), so the k-quant mixes (which tensors get 6-bit)
  are exactly llama.cpp's. Rows narrower than 256 cannot hold k-quant blocks; llama.cpp then picks
  its own fallback type per tensor, and the notes list the tensor types actually written.
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EngineNotInstalledError, ModelConfigError, RequestError, UnsupportedArchitectureError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

# Architectures whose tensors and hyper-parameters map 1:1 onto llama.cpp's "llama" graph
# (source: llama.cpp convert_hf_to_gguf.py registers LlamaModel for these names).
LLAMA_LIKE = ("LlamaForCausalLM", "MistralForCausalLM")

# llama.cpp's llama_ftype values for the methods here (source: llama.cpp include/llama.h, enum llama_ftype;
# the same numbers as gguf.LlamaFileType; llama-quantize's type names Q4_0 / Q8_0 / Q4_K_M map to them in
# tools/quantize/quantize.cpp QUANT_OPTIONS, e.g. { "Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0, ... }).
FTYPES = {"f16": 1, "q4_0": 2, "q8_0": 7, "q4_k_m": 15}

# safetensors dtype name -> numpy dtype name (bf16 is read as raw uint16 and widened by hand).
_ST_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "uint16"}


def run(
    source: Path,
    work_dir: Path,
    spec: Any,
    calibration: list[str],
    progress: Callable[[str], None],
) -> list[str]:
    """Write ``work_dir/model-<type>.gguf`` from the Hugging Face checkpoint in ``source``; return notes."""
    gguf_type = getattr(spec, "gguf_type", None) or str(getattr(spec, "name", "")).removeprefix("gguf-")
    if gguf_type not in FTYPES:
        raise RequestError(f"GGUF type '{gguf_type}' is not one of {', '.join(FTYPES)}.")
    source, work_dir = Path(source), Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    if calibration:
        notes.append("GGUF k-quants here use no calibration text (no importance matrix); the texts were not used.")
    f16 = work_dir / "model-f16.gguf"
    progress("writing f16 GGUF with gguf-py")
    notes += write_f16(source, f16)
    if gguf_type == "f16":
        return notes
    out = work_dir / f"model-{gguf_type}.gguf"
    progress(f"quantizing to {gguf_type} with llama.cpp's llama_model_quantize")
    quantize_file(f16, out, gguf_type)
    f16.unlink()
    notes.append(f"tensor types written by llama.cpp: {tensor_type_summary(out)}")
    return notes


def quantize_file(src: Path, dst: Path, gguf_type: str) -> None:
    """Quantize GGUF ``src`` into ``dst`` with llama.cpp's own quantizer (``llama_model_quantize``)."""
    try:
        import llama_cpp
    except ImportError:
        raise EngineNotInstalledError(
            "llama.cpp's quantizer (llama-cpp-python)", "llamacpp", f"needed for {gguf_type}; gguf-f16 works without it"
        ) from None
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[gguf_type]
    params.nthread = os.cpu_count() or 1
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
    if rc != 0:
        raise ModelConfigError(str(src), f"llama.cpp's llama_model_quantize failed with code {rc} for {gguf_type}")


def tensor_type_summary(path: Path) -> str:
    """'Q4_K x 10, F32 x 5' for a GGUF file, read with gguf-py's reader."""
    from gguf import GGUFReader

    counts = Counter(t.tensor_type.name for t in GGUFReader(path).tensors)
    return ", ".join(f"{name} x {n}" for name, n in counts.most_common())


def write_f16(source: Path, out: Path) -> list[str]:
    """Write a Llama-family checkpoint as GGUF: 2-D weights in f16, norms in f32. Returns notes."""
    import gguf
    import numpy as np

    config = _read_json(source / "config.json")
    arch = (config.get("architectures") or ["?"])[0]
    if arch not in LLAMA_LIKE:
        raise UnsupportedArchitectureError(str(source), arch, LLAMA_LIKE)
    notes: list[str] = []
    n_layers = int(config["num_hidden_layers"])
    n_head = int(config["num_attention_heads"])
    n_kv = int(config.get("num_key_value_heads") or n_head)
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // n_head)
    if config.get("rope_scaling"):
        notes.append("config.json rope_scaling is not written (plain RoPE); long-context outputs may differ.")

    writer = gguf.GGUFWriter(str(out) + ".part", arch=gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_name(source.name)
    writer.add_context_length(int(config.get("max_position_embeddings", 4096)))
    writer.add_embedding_length(hidden)
    writer.add_block_count(n_layers)
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv)
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_rope_freq_base(float(config.get("rope_theta", 10000.0)))
    writer.add_rope_dimension_count(head_dim)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    _add_tokenizer(writer, source, int(config["vocab_size"]))

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, n_layers)
    for name, array in _tensors(source):
        if name.endswith("rotary_emb.inv_freq"):
            continue
        new_name = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new_name is None:
            raise ModelConfigError(str(source), f"tensor '{name}' has no GGUF name for the llama architecture")
        if name.endswith("q_proj.weight"):
            array = _permute(array, n_head)
        elif name.endswith("k_proj.weight"):
            array = _permute(array, n_kv)
        array = array.astype(np.float16 if array.ndim == 2 else np.float32)
        writer.add_tensor(new_name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(str(out) + ".part", out)
    return notes


def _permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """HF's rotate-half Q/K rows -> llama.cpp's interleaved RoPE rows (as convert_hf_to_gguf.py's LlamaModel.permute)."""
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def _add_tokenizer(writer: Any, source: Path, vocab_size: int) -> None:
    """Byte-level BPE with the GPT-2 pre-tokenizer regex -> tokenizer.ggml.model=gpt2, pre=gpt-2."""
    import gguf

    path = source / "tokenizer.json"
    if not path.exists():
        raise ModelConfigError(str(source), "no tokenizer.json; this GGUF writer needs a byte-level BPE tokenizer.json")
    tok = _read_json(path)
    model, pre = tok.get("model") or {}, tok.get("pre_tokenizer") or {}
    gpt2_regex = pre.get("type") == "ByteLevel" and pre.get("use_regex", True)
    if model.get("type") != "BPE" or model.get("byte_fallback") or not gpt2_regex:
        raise ModelConfigError(
            str(path),
            "only byte-level BPE tokenizers with the GPT-2 pre-tokenizer can be written here "
            f"(got model {model.get('type')}, pre-tokenizer {pre.get('type')}); use llama.cpp's convert_hf_to_gguf.py",
        )
    vocab: dict[str, int] = dict(model["vocab"])
    special = {a["content"]: a["id"] for a in tok.get("added_tokens", []) if a.get("special")}
    vocab.update(special)
    by_id = {i: t for t, i in vocab.items()}
    tokens, types = [], []
    for i in range(vocab_size):
        text = by_id.get(i, f"[PAD{i}]")
        tokens.append(text)
        if i not in by_id:
            types.append(gguf.TokenType.UNUSED)
        elif text in special:
            types.append(gguf.TokenType.CONTROL)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    merges = model.get("merges") or []
    writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    special_vocab = gguf.SpecialVocab(source, load_merges=False, n_vocab=vocab_size)
    special_vocab.add_to_gguf(writer, quiet=True)


def _tensors(source: Path) -> Iterator[tuple[str, np.ndarray]]:
    """(name, float32 array) for every tensor in the checkpoint's safetensors files, read without torch."""
    import numpy as np

    index = source / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(_read_json(index)["weight_map"].values()))
    else:
        files = sorted(p.name for p in source.glob("*.safetensors"))
    if not files:
        raise ModelConfigError(str(source), "no *.safetensors files; save the model with safe_serialization=True")
    for file in files:
        raw = np.memmap(source / file, dtype=np.uint8, mode="r")
        (header_len,) = struct.unpack("<Q", raw[:8].tobytes())
        header = json.loads(raw[8 : 8 + header_len].tobytes())
        base = 8 + header_len
        for name, info in header.items():
            if name == "__metadata__":
                continue
            dtype = _ST_DTYPES.get(info["dtype"])
            if dtype is None:
                raise ModelConfigError(
                    f"{source / file}", f"tensor '{name}' has dtype {info['dtype']}; expected F32/F16/BF16"
                )
            start, end = info["data_offsets"]
            array = raw[base + start : base + end].view(dtype).reshape(info["shape"])
            if info["dtype"] == "BF16":  # bfloat16 is the top half of a float32
                array = (array.astype(np.uint32) << 16).view(np.float32)
            yield name, np.asarray(array, dtype=np.float32)


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelConfigError(str(path), "missing") from None
    except json.JSONDecodeError as err:
        raise ModelConfigError(str(path), f"invalid JSON at line {err.lineno}: {err.msg}") from None


def _load_without_repacking(llama_cpp: Any, path: Path, *, logits_all: bool):
    """``llama_cpp.Llama`` with llama.cpp's extra CPU buffer types (weight repacking, AMX) turned off.

    llama.cpp as vendored in llama-cpp-python 0.3.36 (commit 0c1e570) segfaults in ``llama_decode`` when it repacks
    quantized weights on a CPU with AVX-512 and AMX (seen on this project's 2-core Xeon VM, amx_tile + avx512f:
    Q8_0 and Q4_K_M crash, f16 runs; ``llama-server --no-repack`` runs the same file). The quick check is about the
    file, not CPU kernels, so it loads with ``use_extra_bufts = False``, the setting ``--no-repack`` makes.
    ``Llama`` takes no such argument: its model parameters come from ``llama_model_default_params()``, wrapped here.
    """
    lib = llama_cpp.llama_cpp
    defaults = lib.llama_model_default_params

    def without_repacking():
        params = defaults()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = without_repacking
    try:
        return llama_cpp.Llama(model_path=str(path), n_ctx=512, logits_all=logits_all, verbose=False, seed=0)
    finally:
        lib.llama_model_default_params = defaults


def check(model_dir: Path, spec: Any, *, prompt: str, max_new_tokens: int, eval_texts: list[str] | None):
    """Load the GGUF with llama.cpp (llama-cpp-python), generate greedily; perplexity over ``eval_texts``."""
    import math

    from .results import QuickCheck

    try:
        import llama_cpp
    except ImportError:
        return QuickCheck(status="skipped", loaded=False, detail="llama-cpp-python is not installed (extra 'llamacpp')")
    path = next(Path(model_dir).glob("*.gguf"))
    llm = _load_without_repacking(llama_cpp, path, logits_all=bool(eval_texts))
    ids = llm.tokenize(prompt.encode(), add_bos=True)
    out: list[int] = []
    for token in llm.generate(ids, top_k=1, temp=0.0, reset=True):
        out.append(token)
        if len(out) >= max_new_tokens:
            break
    result = QuickCheck(
        status="passed",
        loaded=True,
        runtime=f"llama.cpp via llama-cpp-python {llama_cpp.__version__} (cpu)",
        prompt=prompt,
        sample_text=llm.detokenize(out).decode("utf-8", errors="replace"),
        tokens_generated=len(out),
        detail=f"tensor types: {tensor_type_summary(path)}",
    )
    if eval_texts:
        nll, count = 0.0, 0
        for text in eval_texts:
            toks = llm.tokenize(text.encode(), add_bos=True)[:512]
            llm.reset()
            llm.eval(toks)
            for pos in range(len(toks) - 1):
                row = llm.scores[pos]
                top = float(row.max())
                log_z = top + math.log(float(sum(math.exp(float(v) - top) for v in row)))
                nll -= float(row[toks[pos + 1]]) - log_z
                count += 1
        result.perplexity_after = math.exp(nll / count) if count else None
        result.eval_tokens = count
    return result
