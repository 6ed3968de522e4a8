"""SGLang out of memory while loading the weights: fewer weights per GPU, never a smaller KV pool (docfix16, retrospective:
batch 13's sf244, Qwen3-32B-FP8 at --tp-size 2 on two 15.77 GiB GPUs, and sf252, llava-next-72b, whose traceback stops
in ``load_model -> get_model``).

For the doctor's diagnosis ``diag`` of a start-up log ``text`` (tests/doctor/test_doctor_docfix16.py runs sf244's and
sf252's)::

    sglang_weights_first(diag, text)   # diag.edits replaced in place; nothing where it does not apply

Read at SGLang main (python/sglang/srt/model_executor/model_runner.py ``ModelRunner.initialize``: ``self.load_model()``
runs first and logs "Load weight begin. avail mem=..." / "Load weight end. ..."; only then ``self.init_memory_pool(...)``
sizes the KV pool from ``mem_fraction_static``; SGLang 0.1's router/model_runner.py has the same order: ``load_model``
then ``init_memory_pool``). A lower ``--mem-fraction-static`` or a shorter chunked prefill frees nothing while the weights
load; like vLLM's load-phase OOM (:mod:`.load_oom`), only fewer bytes of weights per GPU do: ``--tp-size`` up to
the GPUs present, or a smaller (quantized) checkpoint. The phase is read from the traceback (a ``load_model`` /
``get_model`` frame, or "Load weight begin" without its "Load weight end") or from the catalog's weights per GPU over
the GPU's total at the run's TP (:mod:`.weights_fit`). Nothing here is decided (``starts`` None).
"""

from __future__ import annotations

import re

from .edits import NOT_DECIDED, Edit, undecided_edit

_LOAD_FRAME = re.compile(r"\bin (?:load_model|get_model|load_weights)\b|\bself\.load_model\(\)|model = get_model\(")
_FLAG = "--tp-size"


def load_phase(text: str) -> bool:
    """The text shows the OOM inside SGLang's weight load (and not after it)."""
    text = text[:2_000_000]
    if "Load weight begin" in text and "Load weight end" not in text:
        return True
    return bool(_LOAD_FRAME.search(text)) and "init_memory_pool" not in text and "Load weight end" not in text


def checkpoint_edit(why: str, decided: str = NOT_DECIDED) -> Edit:
    """A smaller (quantized) checkpoint: the remedy every weights-bound failure shares (SGLang's and vLLM's load phase,
    weights over every GPU present); ``decided`` opens its basis."""
    return undecided_edit("a smaller checkpoint (a quantized one: fewer bytes of weights per GPU)", [],
                          "another checkpoint; a small accuracy cost", 0.5, basis=f"{decided}: {why}")


def sglang_weights_first(diag, text: str, over_gpu: bool = False) -> None:
    """SGLang only: a load-phase OOM (or weights over the GPU at the run's TP, ``over_gpu``) gets the weight edits alone."""
    from .hardware_rank import present_tp

    error = diag.error
    if error is None or not error.kind.startswith("cuda_oom") or any(e.starts for e in diag.edits):
        return
    if not (over_gpu or error.kind == "cuda_oom_load" or load_phase(text)):
        return
    tp, count = max(diag.tp or 1, 1), diag.gpu_count
    why = "the weights ran out while loading, before SGLang sizes its KV pool (mem_fraction_static frees nothing there)"
    edits = []
    if count and present_tp("sglang", count) > tp:
        n = present_tp("sglang", count)
        edits.append(undecided_edit(f"{_FLAG} {n}", [_FLAG, str(n)], f"{n} of the {count} GPUs present instead of {tp}", 0.1,
                           f"{why}; each GPU then holds 1/{n} of the weights", gpus_needed=n))
    elif count is None:
        edits.append(undecided_edit(f"{_FLAG} {2 * tp}", [_FLAG, str(2 * tp)], f"{2 * tp} GPUs instead of {tp}; whether the machine has them "
                           "is not known (pass --gpus)", 0.6, f"{why}; each GPU then holds half the weights", gpus_needed=2 * tp))
    checkpoint = checkpoint_edit(f"{why}; a quantized checkpoint has fewer bytes per GPU")
    diag.edits = sorted(edits + [checkpoint], key=lambda e: e.cost_rank)
    diag.notes = [n for n in diag.notes if not n.startswith("The log does not print SGLang's 'Load weight")]
    diag.notes.append("The out of memory is in SGLang's weight load (before its KV pool is sized): --mem-fraction-static and "
                      "--chunked-prefill-size free nothing there; only fewer bytes of weights per GPU do.")
