"""llama.cpp under llama-cpp-python: its edits in the Python binding's own keywords (docfix18, retrospective: batch 15's
sf303, khoj's offline chat, was offered llama-server's ``--ctx-size``).

For the edits ``edits`` offered for a llama-cpp-python log ``text`` (tests/doctor/test_doctor_docfix18.py runs
sf303's)::

    in_python_knobs(edits, text)[0].change   # where the text is llama-cpp-python's:
    # 'Llama(n_ctx=4096) (llama-cpp-python; llama-server's --ctx-size 4096)'

Read at abetlen/llama-cpp-python (llama_cpp/llama.py ``Llama.__init__``, commit 00c954ec): the context is ``n_ctx`` ("0 =
from model"), the batches ``n_batch`` and ``n_ubatch`` (``n_ubatch = min(n_batch, n_ubatch)``), the GPU layers
``n_gpu_layers``, the KV cache types ``type_k`` / ``type_v`` (ggml type numbers: 8 is GGML_TYPE_Q8_0) with ``flash_attn``;
a context that llama.cpp cannot create raises ``ValueError("Failed to create llama_context")`` (llama_cpp/_internals.py
``LlamaContext.__init__``). The argv stays llama-server's flag (the same llama.cpp parameter); only the words change.
"""

from __future__ import annotations

import re

from .edits import Edit

# the binding's message, also as rich's log handler wraps it beside its "file.py:N" column (khoj's log, sf303)
_PYTHON = re.compile(r"Failed to create\s+(?:[\w.]+\.py:\d+\s+)?llama_context|\bllama_cpp\b|llama-cpp-python")


def _said(e: Edit) -> str:
    flag, value = (e.argv + ["", ""])[:2]
    if flag == "--ctx-size":
        return f"Llama(n_ctx={value}) (llama-cpp-python; llama-server's --ctx-size {value})"
    if flag == "--cache-type-k":
        return f"Llama(type_k=8, type_v=8, flash_attn=True) (GGML_TYPE_Q8_0; llama-server's {e.change})"
    if flag in ("--batch-size", "--ubatch-size"):
        return f"Llama(n_batch={value}, n_ubatch={value}) (llama-server's {e.change})"
    if flag == "--n-gpu-layers":
        return f"Llama(n_gpu_layers={value}) (llama-server's {e.change})"
    if e.change.startswith("fewer layers on the GPU"):
        return "fewer layers on the GPU (Llama(n_gpu_layers=...) below the model's layers)"
    return e.change


def in_python_knobs(diag, text: str) -> None:
    """Where the text is llama-cpp-python's (and not ollama's), each llama-server flag edit in the binding's keywords."""
    from .first_try import ollama_note

    if ollama_note(text, diag.engine) or not _PYTHON.search(text[:2_000_000]):
        return
    diag.edits = [e.model_copy(update={"change": _said(e)}) for e in diag.edits]
