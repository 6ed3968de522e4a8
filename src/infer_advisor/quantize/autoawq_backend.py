"""AutoAWQ backend (``--method awq --backend autoawq``): the AutoAWQ GEMM format.

DEPRECATED UPSTREAM: AutoAWQ was archived in 2025-05 (its authors point to llm-compressor). It is kept because its
GEMM format (``quant_method: awq``, ``version: gemm``) is the only 4-bit format CTranslate2's converter and TGI
read. Version 0.2.9 needs transformers 4.x (the ``autoawq`` extra pins it), so it lives in a venv of its own.

AutoAWQ quantizes on CPU, but its GEMM layers run only on CUDA: without CUDA the check says so and verifies the
written files instead (config and the qweight/qzeros/scales tensors of every quantized layer).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..errors import DataFileError
from .methods import MethodSpec
from ._torch_eval import load_tokenizer
from .results import QuickCheck

# AutoAWQ's weight clipping processes output channels in batches of 256 or 64 and asserts that one divides the
# layer's output size (awq/quantize/quantizer.py, _compute_best_clip); smaller layers are quantized without it.
CLIP_OUT_BATCH = 64
# Longest calibration block in tokens: AutoAWQ's default max_calib_seq_len.
MAX_CALIB_SEQ_LEN = 512
# GEMM packs this many 4-bit values into each int32 of qweight/qzeros (AutoAWQ WQLinear_GEMM).
PACK = 8
DEPRECATION_NOTE = (
    "AutoAWQ is deprecated upstream (archived 2025-05); prefer --backend llmcompressor unless you need the GEMM "
    "format for CTranslate2 or TGI."
)


def run(source: Path, work_dir: Path, spec: MethodSpec, calibration: list[str], progress: Callable[[str], None]) -> list[str]:
    """Quantize with AutoAWQ (zero point, GEMM) and save into ``work_dir``."""
    import awq
    import torch
    from awq import AutoAWQForCausalLM

    notes = [DEPRECATION_NOTE, f"AutoAWQ {awq.__version__}: 4-bit GEMM, groups of {spec.group_size}, zero point."]
    tokenizer = load_tokenizer(source)
    lengths = [len(tokenizer.encode(t)) for t in calibration]
    total = sum(n for n in lengths if n <= MAX_CALIB_SEQ_LEN)
    if total < 2:
        raise DataFileError("calibration", "AWQ needs calibration text of at least a few tokens")
    seq_len = min(MAX_CALIB_SEQ_LEN, total)
    progress(f"loading {source.name} with AutoAWQ {awq.__version__}")
    dtype = torch.float16 if torch.cuda.is_available() else torch.float32
    model = AutoAWQForCausalLM.from_pretrained(str(source), torch_dtype=dtype)
    outs = {m.out_features for m in model.model.modules() if isinstance(m, torch.nn.Linear)}
    clip = all(n % CLIP_OUT_BATCH == 0 for n in outs)
    if not clip:
        notes.append(f"Weight clipping skipped: a layer's output size is not a multiple of {CLIP_OUT_BATCH}.")
    config = {"zero_point": True, "q_group_size": spec.group_size, "w_bit": spec.bits, "version": "GEMM"}
    progress(f"running AWQ on {len(calibration)} samples (blocks of {seq_len} tokens; this is the long step)")
    model.quantize(
        tokenizer,
        quant_config=config,
        calib_data=list(calibration),
        max_calib_samples=len(calibration),
        max_calib_seq_len=seq_len,
        apply_clip=clip,
    )
    progress("saving AutoAWQ GEMM checkpoint")
    model.save_quantized(str(work_dir))
    return notes


def _verify_files(model_dir: Path, spec: MethodSpec) -> str:
    """Check config and GEMM tensor shapes from the safetensors headers; return what was verified."""
    from ..errors import ModelConfigError

    qc = json.loads((model_dir / "config.json").read_text()).get("quantization_config") or {}
    want = {"quant_method": "awq", "version": "gemm", "bits": spec.bits, "group_size": spec.group_size}
    wrong = {k: qc.get(k) for k, v in want.items() if qc.get(k) != v}
    if wrong:
        raise ModelConfigError(str(model_dir / "config.json"), f"quantization_config differs from {want}: {wrong}")
    header: dict = {}
    for file in model_dir.glob("*.safetensors"):
        with open(file, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header.update(json.loads(f.read(size)))
    layers = [k[: -len(".qweight")] for k in header if k.endswith(".qweight")]
    if not layers:
        raise ModelConfigError(str(model_dir), "no qweight tensors in the safetensors files")
    for layer in layers:
        rows, cols = header[f"{layer}.qweight"]["shape"]
        expect = {
            "qweight": ("I32", [rows, cols]),
            "qzeros": ("I32", [rows // spec.group_size, cols]),
            "scales": (None, [rows // spec.group_size, cols * PACK]),
        }
        for name, (dtype, shape) in expect.items():
            meta = header.get(f"{layer}.{name}")
            if meta is None or meta["shape"] != shape or (dtype and meta["dtype"] != dtype):
                raise ModelConfigError(str(model_dir), f"{layer}.{name} is {meta} (expected {dtype} {shape})")
    return (
        f"quant_method=awq version=gemm bits={spec.bits} group_size={spec.group_size}; "
        f"{len(layers)} layers with GEMM-shaped qweight/qzeros/scales"
    )


def check(
    model_dir: Path, spec: MethodSpec, *, prompt: str, max_new_tokens: int, eval_texts: list[str] | None
) -> QuickCheck:
    """On CUDA: load with AutoAWQ and generate. Without CUDA: verify the files and report CUDA-only honestly."""
    import awq
    import torch

    verified = _verify_files(model_dir, spec)
    if not torch.cuda.is_available():
        return QuickCheck(
            status="skipped",
            loaded=False,
            runtime=f"autoawq {awq.__version__}",
            detail=f"AutoAWQ GEMM kernels run only on CUDA and this machine has no CUDA device; verified files: {verified}.",
        )
    from awq import AutoAWQForCausalLM

    from ._torch_eval import torch_generate, torch_perplexity

    model = AutoAWQForCausalLM.from_quantized(str(model_dir), fuse_layers=False)
    tokenizer = load_tokenizer(model_dir)
    text, count = torch_generate(model.model, tokenizer, prompt, max_new_tokens)
    result = QuickCheck(
        status="passed",
        loaded=True,
        runtime=f"autoawq {awq.__version__} (cuda: {torch.cuda.get_device_name(0)})",
        prompt=prompt,
        sample_text=text,
        tokens_generated=count,
        detail=f"verified files: {verified}",
    )
    if eval_texts:
        result.perplexity_after, result.eval_tokens = torch_perplexity(model.model, tokenizer, eval_texts)
    return result
