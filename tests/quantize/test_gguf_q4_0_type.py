"""gguf-q4_0: the llama_ftype the quantizer passes is llama.cpp's own LLAMA_FTYPE_MOSTLY_Q4_0, the type llama-quantize
calls Q4_0 (tools/quantize/quantize.cpp QUANT_OPTIONS: { "Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0, ... })."""

from __future__ import annotations

import pytest

from infer_advisor.quantize.gguf_backend import FTYPES
from infer_advisor.quantize.methods import resolve_method


def test_q4_0_is_a_gguf_method_with_llama_cpps_ftype():
    spec = resolve_method("gguf-q4_0")
    assert spec.backend == "gguf" and spec.gguf_type == "q4_0"
    assert FTYPES["q4_0"] == 2  # include/llama.h: LLAMA_FTYPE_MOSTLY_Q4_0 = 2


def test_ftypes_agree_with_gguf_py():
    gguf = pytest.importorskip("gguf")
    assert FTYPES["q4_0"] == gguf.LlamaFileType.MOSTLY_Q4_0
    assert FTYPES["q8_0"] == gguf.LlamaFileType.MOSTLY_Q8_0
    assert FTYPES["q4_k_m"] == gguf.LlamaFileType.MOSTLY_Q4_K_M
