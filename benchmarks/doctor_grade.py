"""Grade `infer-advisor doctor` on the published failing start-ups (benchmarks/published/startup_failures.yaml).

    python benchmarks/doctor_grade.py                     # the table; batch 1 held out / tuning and batch 2 apart
    python benchmarks/doctor_grade.py --json benchmarks/results/doctor_grade.json

Batch 1 (sf01-sf33) was gathered before the doctor existed, a third held out by id; batch 2 (sf34-) was gathered after the
SGLang/TGI/llama.cpp doctor was written and is graded prospectively as a whole (its first answers are committed in
benchmarks/results/doctor_grade_batch2_first.json before any change they prompted).

Each entry runs through exactly what a user runs (:func:`infer_advisor.doctor.diagnosis.diagnose`, the function behind
`infer-advisor doctor`), with the log lines the thread quotes (plus the thread's error line when the quoted lines lack
it) and what the thread states of the setup as options (--gpu, --model as the catalog entry with the same shapes,
--engine-version, --tp, --max-model-len, --gpu-memory-utilization). Graded:

- **error**: the doctor names the same kind of error as the thread (logged or predicted);
- **first edit starts**: checked by the engine's own arithmetic on the log's own figures where they suffice (V0: a
  max_model_len at or under the printed KV capacity, a utilization whose extra ``(u - u0) x total`` bytes cover the
  missing tokens at the printed bytes per token, FP8 doubling a 16-bit capacity; V1: a max_model_len at or under the
  engine's "estimated maximum model length", a utilization or FP8 that covers "X GiB needed" with "Y GiB available";
  the GPU's catalog total where the log does not print one, marked), else by matching the kind of the fix that worked
  in the thread (confirmed fixes only); otherwise *unverifiable*;
- **starts by the memory model** (grade schema 2, retrospective on batches 1-6; rule frozen in docs/doctor.md before
  batch 7): where the log's figures do not decide the first edit, the model and GPU resolved and the edit's verdict is
  the memory model's on a KV check (vLLM: no cache blocks, one request of max_model_len), the verdict counts only when
  its margin is wider than the memory model's measured error: KV tokens x (1 - KV_BAND) >= max_model_len (starts),
  KV tokens x (1 + KV_BAND) < max_model_len (fails); inside the band it is not decided;
- **matches the thread's fix** (tightened in grade schema 2): a confirmed fix, the same knob, the same direction, and a
  value at least as conservative as the thread's working one where the thread gives a number (a context at or under
  it, a utilization at or past it in the fix's direction, a TP at or above it); where the thread states no number, the
  knob and direction alone (marked ``direction only``);
- **needs GPUs that are not there** (grade schema 3, docfix7, retrospective: prompted by batch 7's sf82 and sf97): the
  entry's ``gpus_present`` (the GPUs the thread says the machine has, with its words) is passed as ``--gpus``, and a
  first edit that needs more GPUs than that fails (``decided_by: hardware``), before any other rule;
- **vLLM's Mamba-cache check** (grade schema 4, docfix8, retrospective: prompted by batch 8's sf113-sf115): where the
  log printed "max_num_seqs (N) exceeds available Mamba cache blocks (B)", a ``--max-num-seqs`` at or under B passes
  that check (the start check only, like V1's free-memory check);
- **V0's capacity from its printed blocks** (grade schema 5, docfix12, retrospective: prompted by batch 10's sf175):
  where a V0 log prints "# GPU blocks: N" and no token count, its max-length check's capacity is N x 16 (vLLM's default
  block size; the log prints no other), and a context at or under it passes that check;
- **the stated command** (grade schema 6, docfix14, retrospective: batch 11's sf223): where no line of the log names the
  engine and the entry's command names an engine's launcher, the command is pasted after the log, as a user gives
  `doctor` both; a stated command may be the one that worked (sf134's), so where the log names the engine it is not;
- **V1's printed pairs, rounding and the weights floor** (grade schema 8, gradefix, retrospective: an audit of every
  undecided held-aside row; benchmarks/doctor_grade_logfig.py): V1's own messages read from the log's lines; figures
  printed to 0.01 GiB decide nothing inside that rounding; a fraction under the weights (printed, else the catalog's
  16-bit shapes) fails; V1's "Available KV cache memory" decides the cache-blocks check (fails at <= 0); a shorter
  context whose least need is over V1's printed available memory fails. benchmarks/doctor_grade_audit.py says why each
  remaining row is not decided;
- **ledger**: every ledger line the log printed a figure for, and the in-budget sum against utilization x total,
  within 3%;
- **KV after the fix**: where the thread prints the KV capacity of the setup that worked, the doctor's figure for that
  edit (``--try-flags``) within 5%.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from benchmarks.doctor_grade_logfig import (log_figures, v1_cache_blocks_check, v1_context_check, v1_free_memory_check,  # noqa: E402
                                            weights_floor, catalog_total)
GIB = 2**30
GRADE_SCHEMA = 8  # 2: decided_by, model_check_why, fix_match_why per row; starts_by_* columns; held_aside and all totals
# 3 (docfix7, retrospective): the entry's gpus_present is passed as --gpus; a first edit needing more GPUs than it fails
# 4 (docfix8, retrospective: batch 8's sf113-sf115): vLLM's Mamba-cache check on its printed figure, max_num_seqs <= blocks
# (decided_by "hardware", first in order); per row gpus_present and first_gpus_needed; per summary fails_by_hardware
# 5 (docfix12, retrospective: batch 10's sf175): V0's capacity from "# GPU blocks: N" where the log prints no token count,
# N x vLLM's default block size (16; the check is llm_engine._init_cache's max_seq_len = block_size x num_gpu_blocks)
# 6 (docfix14, retrospective: batch 11's sf223): the entry's stated command is passed with the log where no line of the log
# names the engine and the command names an engine's launcher (doctor_input); never the thread's fix
# 7 (docfix20, retrospective: batch 16's sf316, batch 9's sf166): TGI's --max-input-length is the same knob as
# --max-input-tokens (launcher/src/main.rs from 2.0: "Legacy version of [`Args::max_input_tokens`]"; the only spelling before)
# 8 (gradefix, session 9, retrospective: an audit of every not-decided held-aside row): V1's printed pairs read from the log's
# own lines where the entry's keys lack them; V1's cache-blocks check on "Available KV cache memory" (a fraction edit that
# leaves it <= 0 fails); a shorter context over V1's printed need even at its least fails; a fraction that passes V1's
# free-memory start check with a budget under the weights (printed, or the catalog model's 16-bit shapes) fails (doctor_grade_logfig.py)
V0_BLOCK_SIZE = 16  # vLLM EngineArgs.block_size default, every V0 release (0.2-0.7); engines/startup_log.py reads it so too
# The memory model's error band on KV tokens: the 90th percentile of |error| of its prospective KV-token predictions over
# the 113 new start-up logs that print a token count (benchmarks/published/startup_logs_results.json, new_rows, each
# predicted by the profile frozen before it; median 2.0%, 90th percentile 35.4%; computed at main da2e3ef, frozen here).
KV_BAND = 0.354
_KV_KINDS = ("no_cache_blocks", "max_len_exceeds_kv", "kv_needed_exceeds_available", "kv_cache_check")
# KV capacity the thread printed for the setup that worked: (entry, the edit, tokens, the quote's figure)
KV_AFTER_FIX = [("sf01", ["--max-model-len", "20000"], 1952 * 16, "GPU blocks: 1952 (x 16 tokens)")]
_FIX_KIND = {"--max-model-len": "max_model_len", "--kv-cache-dtype": "kv_cache_dtype", "--enforce-eager": "enforce_eager",
             "--max-num-seqs": "max_num_seqs", "--tensor-parallel-size": "tensor_parallel",
             # the same knobs in SGLang's, TGI's and llama.cpp's flags (src/infer_advisor/data/doctor_flags.yaml)
             "--context-length": "max_model_len", "--max-total-tokens": "max_model_len", "--max-input-tokens": "max_model_len",
             "--max-input-length": "max_model_len", "--ctx-size": "max_model_len", "--cache-type-k": "kv_cache_dtype", "--disable-cuda-graph": "enforce_eager",
             "--cuda-graphs": "enforce_eager", "--tp-size": "tensor_parallel", "--num-shard": "tensor_parallel"}
_FRACTION_FLAGS = ("--gpu-memory-utilization", "--mem-fraction-static", "--cuda-memory-fraction")
# the doctor's finer kind -> the dataset's kind (startup_failures.py: cuda_oom_warmup is "TGI warmup / profile-run OOM")
_SAME_KIND = {"cuda_oom_profile": "cuda_oom_warmup"}


def doctor_input(f) -> str:
    """The log, the thread's error line where the log lacks it, and (grade schema 6) the stated command where no line of
    the log names the engine and the command names an engine's launcher: what a user pastes into `doctor` beside a log
    that does not say which engine printed it. Only then: a stated command may be the one that worked after the fix
    (sf134's), which must never be an input."""
    from infer_advisor.engines.command_line import find_engine
    from infer_advisor.engines.startup_log import detect_engine

    text = f.log
    if re.sub(r"\s+", " ", f.error_line)[:30] not in re.sub(r"\s+", " ", text):
        text += "\n" + f.error_line
    if f.command and detect_engine(text) is None and find_engine(f.command) and re.sub(r"\s+", " ", f.command)[:40] not in re.sub(r"\s+", " ", text):
        text += "\n" + f.command
    return text


def run_doctor(f, try_flags=None):
    from infer_advisor.doctor.diagnosis import diagnose

    s = f.settings
    return diagnose(doctor_input(f), gpu=f.gpu, model=f.catalog_model, engine_version=f.engine_version, tp=f.tp,
                    max_model_len=s.max_model_len, gpu_memory_utilization=s.gpu_memory_utilization, try_flags=try_flags,
                    gpus=f.gpus_present.count if f.gpus_present else None)


def hardware_check(f, edit) -> tuple[bool | None, str]:
    """False where the edit needs more GPUs than the thread says the machine has (None: it does not say, or enough)."""
    if edit.gpus_needed is None or f.gpus_present is None:
        return None, "no stated GPU count, or the edit needs no more GPUs"
    if edit.gpus_needed > f.gpus_present.count:
        return False, f"needs {edit.gpus_needed} GPUs; the thread states {f.gpus_present.count} ('{f.gpus_present.quote}')"
    return None, f"needs {edit.gpus_needed} GPUs of the {f.gpus_present.count} stated"


def _total_bytes(fig, diag, f) -> tuple[float | None, bool]:
    """(GPU total, inferred?): the log's figure, else the catalog's for the stated GPU."""
    if "total_gpu_memory_gib" in fig:
        return fig["total_gpu_memory_gib"] * GIB, False
    if diag.gpu_memory_bytes and f.gpu:
        return diag.gpu_memory_bytes, True
    return None, True


def engine_check(f, diag, edit) -> tuple[bool | None, str]:
    """Whether ``edit`` starts by the engine's own arithmetic on the figures the log printed (None: they do not suffice)."""
    if not edit.argv:  # an action, not a flag (schema 2's "free the GPU"): no arithmetic decides it
        return None, "an action, not a flag: the log's figures do not decide it"
    flag, value = edit.argv[0], (edit.argv[1] if len(edit.argv) > 1 else None)
    fig = log_figures(f)  # grade schema 8: V1's printed pairs read from the log's own lines too
    u0 = f.settings.gpu_memory_utilization or 0.90
    total, inferred = _total_bytes(fig, diag, f)
    card = total or catalog_total(f)  # grade schema 8's checks: the stated GPU's catalog total where nothing gives one
    note = " (GPU total from the catalog)" if inferred and total else ""
    if f.error == "max_len_exceeds_kv" and ("kv_cache_tokens" in fig or fig.get("kv_blocks", 0) > 0):
        capacity, length = fig.get("kv_cache_tokens") or fig["kv_blocks"] * V0_BLOCK_SIZE, f.settings.max_model_len or diag.max_model_len
        note = note if "kv_cache_tokens" in fig else f"{note} (capacity {fig['kv_blocks']:,.0f} printed blocks x {V0_BLOCK_SIZE}, vLLM's default block size)"
        if flag == "--max-model-len":
            if int(value) <= capacity:
                return True, f"{value} <= printed capacity {capacity:,.0f}{note}"
            return _two_logs(f, int(value), capacity, length)
        if flag == "--kv-cache-dtype":
            return 2 * capacity >= length, f"FP8 doubles the 16-bit capacity {capacity:,.0f} -> {2 * capacity:,.0f} vs {length:,}"
        if flag == "--gpu-memory-utilization" and total and "kv_cache_gib" in fig:
            per_token = fig["kv_cache_gib"] * GIB / capacity
            got = capacity + (float(value) - u0) * total / per_token
            return got >= length, f"{capacity:,.0f} + ({value} - {u0}) x total / {per_token:,.0f} B = {got:,.0f} vs {length:,}{note}"
    if f.error == "kv_needed_exceeds_available" and "kv_needed_gib" in fig:
        need, avail = fig["kv_needed_gib"] * GIB, fig["kv_available_gib"] * GIB
        if flag == "--max-model-len" and "estimated_max_model_len" in fig:
            return int(value) <= fig["estimated_max_model_len"], f"{value} <= the engine's estimated maximum {fig['estimated_max_model_len']:,.0f}"
        if flag == "--kv-cache-dtype":
            return need / 2 <= avail, f"{need / 2 / GIB:.2f} GiB (FP8) <= {avail / GIB:.2f} GiB available"
        if flag == "--gpu-memory-utilization" and total:
            got = avail + (float(value) - u0) * total
            return got >= need, f"{avail / GIB:.2f} + ({value} - {u0}) x {total / GIB:.2f} = {got / GIB:.2f} GiB vs {need / GIB:.2f} needed{note}"
        if flag == "--max-model-len":  # grade schema 8: no printed estimate; the least need of a shorter context
            return v1_context_check(fig, value, f.settings.max_model_len or diag.max_model_len) or (None, "the log's figures do not decide it")
    if f.error == "free_memory_below_utilization" and flag == "--gpu-memory-utilization" and {"free_memory_gib", "total_gpu_memory_gib"} <= fig.keys():
        return v1_free_memory_check(f, fig, value)
    if (f.error == "no_cache_blocks" and flag == "--gpu-memory-utilization"
            and {"total_gpu_memory_gib", "weights_gib", "non_torch_gib", "activation_gib"} <= fig.keys()):
        rest = float(value) * fig["total_gpu_memory_gib"] - fig["weights_gib"] - fig["non_torch_gib"] - fig["activation_gib"]
        if rest <= 0:
            return False, f"{value} x total - weights - non-torch - activation = {rest:.2f} GiB: still no KV room"
        return None, (f"{value} x total - weights - non-torch - activation = {rest:.2f} GiB of KV room: the cache-blocks check passes; "
                      "whether one request of max_model_len then fits needs the bytes per token (not decided)")
    if flag == "--gpu-memory-utilization" and (blocks := v1_cache_blocks_check(fig, value, u0, card, GIB)) is not None:
        return blocks[0], blocks[1] + (note or " (GPU total from the catalog)" * (not total))  # grade schema 8: linear in the fraction
    if flag == "--max-num-seqs" and "mamba_cache_blocks" in fig:  # grade schema 4: the engine's own bound, the check only
        return int(value) <= fig["mamba_cache_blocks"], f"{value} <= printed Mamba cache blocks {fig['mamba_cache_blocks']:,.0f} (the check only)"
    if flag in _FRACTION_FLAGS[:2] and card and (floor := weights_floor(f, fig)) and float(value) * card / GIB <= floor[0]:
        return False, (f"{value} x {card / GIB:.2f} GiB <= the weights ({floor[0]:.2f} GiB, {floor[1]}): no KV room (vLLM: utilization x "
                       f"total - weights - ... <= 0; SGLang: free after load - total x (1 - fraction) < 0){note or ' (GPU total from the catalog)' * (not total)}")
    if f.error == "sglang_not_enough_memory":
        return _sglang_check(f, flag, value)
    if f.error == "llamacpp_alloc_failed" and {"weights_cuda0_mib", "kv_cuda0_mib", "compute_alloc_mib", "n_ctx"} <= fig.keys() and total:
        return _llamacpp_check(f, diag, flag, value, total)
    return None, "the log's figures do not decide it"


def _sglang_check(f, flag, value) -> tuple[bool | None, str]:
    """SGLang: rest = after - before x (1 - fraction) must be above zero; the minimum fraction is the engine's printed one,
    or 1 - after / before with before = after + the weights' load (GB as SGLang prints them, bytes / 2**30)."""
    fig = f.figures
    minimum = fig.get("minimum_mem_fraction_static")
    before = fig["free_after_load_gb"] + fig["weights_gb"] if {"free_after_load_gb", "weights_gb"} <= fig.keys() else None
    if minimum is None and before:
        minimum = 1 - fig["free_after_load_gb"] / before
    if flag == "--mem-fraction-static" and minimum is not None and fig.get("profiled_max_total_tokens", 1) <= 0 \
            and "minimum_mem_fraction_static" not in fig:  # grade schema 3: after-load figures vs a negative printed profile (sf111)
        return None, (f"{value} > {minimum:.4f} by the after-load lines, but the engine printed a negative profile "
                      f"({fig['profiled_max_total_tokens']:,.0f}) at a fraction the log does not show: not decided")
    if flag == "--mem-fraction-static" and minimum is not None:
        return float(value) > minimum, f"{value} > the engine's minimum {minimum:.4f} (rest > 0)"
    if flag == "--tp-size" and before and f.settings.gpu_memory_utilization:
        half = fig["weights_gb"] / 2 / before
        return f.settings.gpu_memory_utilization > half, f"weights per GPU halve: minimum {half:.4f} < {f.settings.gpu_memory_utilization}"
    return None, "the log's figures do not decide it"


def _llamacpp_check(f, diag, flag, value, total) -> tuple[bool | None, str]:
    """llama.cpp: weights + KV (n_ctx cells, scaled) + the compute buffer that failed must fit device 0; free memory is the
    catalog total less the engine profile's CUDA context where the log prints no free line (marked)."""
    from infer_advisor.engines.memory import memory_profile

    fig, mib = f.figures, 2**20
    free = total - memory_profile("llama.cpp").cuda_context_bytes
    weights, kv, compute = fig["weights_cuda0_mib"] * mib, fig["kv_cuda0_mib"] * mib, fig["compute_alloc_mib"] * mib
    if flag == "--ctx-size":
        need = weights + kv * int(value) / fig["n_ctx"] + compute
    elif flag == "--n-gpu-layers":
        layers = int(re.search(r"offloaded (\d+)/", f.log).group(1))
        need = (weights + kv) * int(value) / layers + compute
    else:
        return None, "the log's figures do not decide it"
    return need <= free, (f"{need / mib:,.0f} MiB needed <= {free / mib:,.0f} MiB (catalog total less the CUDA context)" if need <= free
                          else f"{need / mib:,.0f} MiB needed > {free / mib:,.0f} MiB")


def _two_logs(f, length: int, capacity: float, logged_length: int) -> tuple[bool | None, str]:
    """V0 profiles a batch of max_model_len tokens, so the capacity grows as max_model_len shrinks: where the thread
    prints a second start of the same setup at another length, interpolate the capacity between the two logs."""
    other = next(((argv, tokens) for fid, argv, tokens, _ in KV_AFTER_FIX if fid == f.id and argv[0] == "--max-model-len"), None)
    if other is None:
        return None, f"{length} > printed capacity {capacity:,.0f} (V0's capacity grows as max_model_len shrinks: not decided)"
    l2, t2 = int(other[0][1]), other[1]
    got = capacity + (t2 - capacity) * (logged_length - length) / (logged_length - l2)
    return got >= length, f"capacity interpolated between the thread's two logs ({logged_length:,}: {capacity:,.0f}; {l2:,}: {t2:,}) = {got:,.0f} vs {length:,}"


_NUMBER = re.compile(r"\s*(?:--[\w-]+[ =])?(\d[\d,]*(?:\.\d+)?)\s*([kK])?(?![\w.-])")
_FIX_FLAG = {"max_model_len": ("--max-model-len", "--context-length", "--max-total-tokens", "--max-input-tokens", "--max-input-length", "--ctx-size"),
             "max_num_seqs": ("--max-num-seqs",),
             "tensor_parallel": ("--tensor-parallel-size", "--tp-size", "--num-shard")}


def thread_value(value: str) -> float | None:
    """The number the thread's fix states, where its text starts with one ("0.8 (from 0.75)", "20000", "65k": vLLM's
    own reading of a lower-case k is x1000); None where it states none ("lower --max-model-len")."""
    m = _NUMBER.match(value)
    if not m:
        return None
    n = float(m.group(1).replace(",", ""))
    return n * (1024 if m.group(2) == "K" else 1000 if m.group(2) else 1)


def fix_match(f, edit) -> tuple[bool | None, str]:
    """Same knob, same direction, a value at least as conservative as the thread's working one (None: no confirmed fix)."""
    if f.fix is None or not f.fix.confirmed:
        return None, "no confirmed fix in the thread"
    u0 = f.settings.gpu_memory_utilization or 0.90
    want = thread_value(f.fix.value)
    for i, flag in enumerate(edit.argv):
        value = float(edit.argv[i + 1]) if i + 1 < len(edit.argv) and re.fullmatch(r"\d+(?:\.\d+)?", edit.argv[i + 1]) else None
        if flag in _FRACTION_FLAGS and value is not None:
            kind = "gpu_memory_utilization_up" if value > u0 else "gpu_memory_utilization_down"
            if kind != f.fix.kind:
                continue
            if want is None or not 0 < want <= 1:
                return True, f"{flag} {value:g}: the thread's knob and direction (direction only: it states no value)"
            ok = value >= want if kind.endswith("_up") else value <= want
            return ok, f"{flag} {value:g} vs the thread's working {want:g} ({'as far or further' if ok else 'not as far'} in its direction)"
        if _FIX_KIND.get(flag) != f.fix.kind:
            continue
        if want is None or value is None or f.fix.kind not in _FIX_FLAG:
            return True, f"{flag}: the thread's knob (direction only: {'it states no value' if want is None else 'a flag without a number'})"
        ok = value <= want if f.fix.kind in ("max_model_len", "max_num_seqs") else value >= want
        return ok, f"{flag} {value:g} vs the thread's working {want:g} ({'at least as conservative' if ok else 'less conservative'})"
    return False, f"another knob than the thread's fix ({f.fix.kind})"


def model_check(f, diag, edit) -> tuple[bool | None, str]:
    """The memory model's verdict on a KV check, counted only outside its error band (KV_BAND)."""
    if not (diag.memory_model and f.engine == "vllm" and edit.confidence == "memory_model" and f.error in _KV_KINDS):
        return None, "the memory model did not decide it (model or GPU unresolved, or not a KV check)"
    if edit.starts is None or not edit.kv_cache_tokens or not edit.max_model_len:
        return None, "no KV figure for the edit"
    kv, need = edit.kv_cache_tokens, edit.max_model_len
    if edit.starts and kv * (1 - KV_BAND) >= need:
        return True, f"{kv:,} KV tokens x (1 - {KV_BAND}) = {kv * (1 - KV_BAND):,.0f} >= {need:,}"
    if not edit.starts and kv * (1 + KV_BAND) < need:
        return False, f"{kv:,} KV tokens x (1 + {KV_BAND}) = {kv * (1 + KV_BAND):,.0f} < {need:,}"
    return None, f"{kv:,} KV tokens vs {need:,}: inside the memory model's error band ({KV_BAND:.1%}), not decided"


def ledger_checks(diag) -> list[dict]:
    out = []
    for line in diag.ledger:
        if line.logged_bytes and line.source != "logged":
            diff = (line.bytes_per_gpu - line.logged_bytes) / abs(line.logged_bytes) * 100
            out.append({"term": line.term, "ledger_gib": line.bytes_per_gpu / GIB, "logged_gib": line.logged_bytes / GIB, "diff_pct": diff})
    remainder = any(line.source.startswith("engine arithmetic") for line in diag.ledger)  # KV defined as what is left: no check
    if diag.budget_bytes and diag.ledger and any(line.logged_bytes for line in diag.ledger) and not remainder:
        in_budget = sum(line.bytes_per_gpu for line in diag.ledger if line.in_budget)
        out.append({"term": "in-budget sum vs utilization x total", "ledger_gib": in_budget / GIB, "logged_gib": diag.budget_bytes / GIB,
                    "diff_pct": (in_budget - diag.budget_bytes) / diag.budget_bytes * 100})
    return out


def grade(f) -> dict:
    try:
        diag = run_doctor(f)
    except Exception as err:  # noqa: BLE001 - a crash is a result of the grade, reported per entry
        from infer_advisor.errors import InferAdvisorError

        verdict = "not read" if isinstance(err, InferAdvisorError) else "crash"  # one line and exit 2 for a user
        return {"id": f.id, "held_out": f.held_out, "batch": f.batch, "engine": f.engine, "thread_error": f.error, "verdict": verdict, "crash": f"{type(err).__name__}: {err}"}
    first = diag.edits[0] if diag.edits else None
    row = {"id": f.id, "held_out": f.held_out, "batch": f.batch, "engine": f.engine, "url": f.url, "thread_error": f.error,
           "doctor_error": diag.error.kind if diag.error else None, "error_logged": diag.error_logged,
           "error_match": (_SAME_KIND.get(diag.error.kind, diag.error.kind) == f.error) if diag.error else False, "model_run": diag.memory_model, "gpu_source": diag.gpu_source,
           "gpus_present": f.gpus_present.count if f.gpus_present else None, "first_edit": first.change if first else None, "thread_fix": f"{f.fix.kind} ({'confirmed' if f.fix.confirmed else 'suggested'})" if f.fix else None}
    if first is not None:
        hw, hw_why = hardware_check(f, first)
        ok, why = engine_check(f, diag, first)
        model, model_why = model_check(f, diag, first)
        match, match_why = fix_match(f, first)
        decided = ("hardware", hw) if hw is not None else ("log_figures", ok) if ok is not None else \
            ("memory_model", model) if model is not None else ("thread_fix", True) if match else (None, None)
        row.update(hardware=hw, hardware_why=hw_why, first_gpus_needed=first.gpus_needed, engine_arithmetic=ok, engine_arithmetic_why=why, model_check=model, model_check_why=model_why, fix_match=match,
                   fix_match_why=match_why, first_confidence=first.confidence, decided_by=decided[0],
                   verdict="starts" if decided[1] else ("fails" if decided[1] is False else "unverifiable"))
    else:
        row["verdict"] = "no edit"
    row["ledger"] = ledger_checks(diag)
    return row


def kv_after_fix(by_id: dict) -> list[dict]:
    out = []
    for fid, argv, tokens, quote in KV_AFTER_FIX:
        diag = run_doctor(by_id[fid], try_flags=argv)
        got = diag.tried.kv_cache_tokens
        out.append({"id": fid, "edit": " ".join(argv), "thread_tokens": tokens, "quote": quote, "doctor_tokens": got,
                    "diff_pct": (got - tokens) / tokens * 100})
    return out


def held_aside(r: dict) -> bool:
    """Batch 1's held-out third and every later batch (each gathered after the doctor it was first graded on)."""
    return r["batch"] > 1 or r["held_out"]


def summary(rows: list[dict], held: bool | None, batch: int | None = 1) -> dict:
    """Batch 1's held-out (held=True) or tuning (False) part, a whole batch (held=None), or with batch=None every held-aside
    entry (held=True) or every entry (held=None)."""
    part = [r for r in rows if (r["batch"] == batch and (held is None or r["held_out"] == held))
            or (batch is None and (held is None or held_aside(r)))]
    verdicts = [r.get("verdict") for r in part]
    ledger = [c for r in part for c in r.get("ledger", [])]
    graded = [v for v in verdicts if v in ("starts", "fails")]
    return {
        "entries": len(part), "error_named": sum(1 for r in part if r.get("error_match")),
        "memory_model_run": sum(1 for r in part if r.get("model_run")),
        "gpu_inferred": sum(1 for r in part if r.get("gpu_source") not in (None, "given")),
        "first_edit_starts": verdicts.count("starts"), "first_edit_fails": verdicts.count("fails"),
        "unverifiable": verdicts.count("unverifiable"), "no_edit": verdicts.count("no edit"),
        "not_read": verdicts.count("not read"), "crash": verdicts.count("crash"),
        "starts_of_graded_pct": round(100 * verdicts.count("starts") / len(graded), 1) if graded else None,
        "ledger_lines_checked": len(ledger), "ledger_within_3pct": sum(1 for c in ledger if abs(c["diff_pct"]) <= 3),
        **{f"starts_by_{by}": sum(1 for r in part if r.get("verdict") == "starts" and r.get("decided_by") == by)
           for by in ("log_figures", "memory_model", "thread_fix")},
        "fails_by_memory_model": sum(1 for r in part if r.get("verdict") == "fails" and r.get("decided_by") == "memory_model"),
        "fails_by_hardware": sum(1 for r in part if r.get("verdict") == "fails" and r.get("decided_by") == "hardware"),
        "fails_by_log_figures": sum(1 for r in part if r.get("verdict") == "fails" and r.get("decided_by") == "log_figures"),  # schema 8
        "starts_of_all_pct": round(100 * verdicts.count("starts") / len(part), 1) if part else None,
    }


def main() -> int:
    from benchmarks.published.startup_failures import load_failures

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="Write the rows and summaries as JSON.")
    args = parser.parse_args()
    data = load_failures()
    rows = [grade(f) for f in data.failures]
    batches = sorted({r["batch"] for r in rows if r["batch"] > 1})
    result = {"grade_schema": GRADE_SCHEMA, "kv_band": KV_BAND, "rows": rows, "held_out": summary(rows, True), "tuning": summary(rows, False),
              **{f"batch{b}": summary(rows, None, batch=b) for b in batches},
              "held_aside": summary(rows, True, batch=None), "all": summary(rows, None, batch=None),
              "kv_after_fix": kv_after_fix({f.id: f for f in data.failures})}
    for r in rows:
        mark = str(r["batch"]) if r["batch"] > 1 else ("H" if r["held_out"] else " ")
        why = r.get("hardware_why") if r.get("decided_by") == "hardware" else \
            r.get("engine_arithmetic_why", r.get("crash", "")) if r.get("decided_by") in (None, "log_figures") else \
            r.get("model_check_why") if r.get("decided_by") == "memory_model" else r.get("fix_match_why")
        print(f"{mark} {r['id']} {r['engine']:9} {r['thread_error']:28} doctor={str(r.get('doctor_error')):28} "
              f"first={str(r.get('first_edit')):32} {r.get('verdict', 'crash'):12} {str(r.get('decided_by') or ''):12} {why}")
    for key in ("held_out", "tuning", *(f"batch{b}" for b in batches), "held_aside", "all"):
        print(f"{key + ':':12}", json.dumps(result[key]))
    print("KV after the thread's fix:", json.dumps(result["kv_after_fix"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
