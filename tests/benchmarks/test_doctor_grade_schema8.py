"""Grade schema 8 (gradefix, session 9): V1's printed pairs read from the log, V1's cache-blocks and context checks, the
printed figures' rounding and the weights floor, each on real entries; and the audit of the undecided rows."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.doctor_grade import GRADE_SCHEMA, engine_check, grade, run_doctor
from benchmarks.doctor_grade_logfig import log_figures, v1_cache_blocks_check, v1_context_check
from benchmarks.published.startup_failures import load_failures

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "doctor_grade.json"
GIB = 2**30


def _entry(fid: str):
    return next(f for f in load_failures().failures if f.id == fid)


class _Edit:
    def __init__(self, *argv: str):
        self.argv = list(argv)


def test_free_memory_pair_is_read_from_the_logs_own_line():
    """sf286's collector named the figure free_gib; the log's "Free memory on device (6.44/11.63 GiB)" is read the same as
    every other row's."""
    fig = log_figures(_entry("sf286"))
    assert (fig["free_memory_gib"], fig["total_gpu_memory_gib"]) == (6.44, 11.63)


def test_a_budget_under_the_weights_fails_though_it_passes_the_start_check():
    """sf286: 0.55 x 11.63 = 6.40 GiB passes V1's free-memory start check (6.44 free) and is under Qwen2.5-7B's 16-bit
    weights (14.19 GiB): no KV room, so it fails."""
    f = _entry("sf286")
    ok, why = engine_check(f, run_doctor(f), _Edit("--gpu-memory-utilization", "0.55"))  # the first edit before docfix22
    assert GRADE_SCHEMA == 8 and ok is False and "14.19 GiB" in why
    assert grade(f)["verdict"] != "fails"  # docfix22: the doctor no longer offers it (tests/doctor/test_doctor_docfix22.py)


def test_start_check_inside_the_printed_rounding_is_not_decided():
    """sf261: 16.56 of 22.05 GiB free. 0.75 passes with room past the rounding; 0.751 sits inside it (either side of 16.56)."""
    f = _entry("sf261")
    assert engine_check(f, run_doctor(f), _Edit("--gpu-memory-utilization", "0.75"))[0] is True
    ok, why = engine_check(f, run_doctor(f), _Edit("--gpu-memory-utilization", "0.751"))
    assert ok is None and "rounding" in why


def test_v1_available_kv_memory_fraction_edit_says_fails_and_not_decided():
    """sf50 (H100-80GB, 0.3, "Available KV cache memory: -2.77 GiB"): 0.35 leaves 1.23 GiB (the cache-blocks check passes,
    one request not decided); 0.32 leaves it under zero, so V1 raises "No available memory for the cache blocks"."""
    f = _entry("sf50")
    ok, why = engine_check(f, run_doctor(f), _Edit("--gpu-memory-utilization", "0.35"))
    assert ok is None and "cache-blocks check passes" in why
    ok, why = engine_check(f, run_doctor(f), _Edit("--gpu-memory-utilization", "0.32"))
    assert ok is False and "No available memory for the cache blocks" in why
    assert v1_cache_blocks_check({"kv_available_gib": -2.77}, "0.35", 0.3, None, GIB) is None  # no total: not applied


def test_v1_shorter_context_over_the_printed_need_fails_and_inside_rounding_is_not_decided():
    """sf201: 1,048,576 tokens need 24.00 GiB, 9.97 available, no estimate printed. The doctor's 435,456 is inside the
    rounding (1,048,576 x 9.975 / 23.995 = 435,905 at the bounds): not decided; 500,000 needs at least 11.44 GiB: fails
    whatever the layers' kinds. sf68 (4.26 needed, 4.25 available) cannot be shown to fail by any shorter context."""
    f = _entry("sf201")
    row = grade(f)
    assert row["first_edit"] == "--max-model-len 435456" and row["verdict"] == "unverifiable" and "rounding" in row["engine_arithmetic_why"]
    fig = log_figures(f)
    assert v1_context_check(fig, "500000", None)[0] is False
    assert v1_context_check(log_figures(_entry("sf68")), "99999", None)[0] is None


def test_a_fraction_under_the_weights_fails_for_sglang_too():
    """sf112 (SGLang on H200, the thread's table: "Weights are 119.83 GB of the ~141 GB per card; 0.8 does not hold them"):
    the doctor's --mem-fraction-static 0.80 is under the weights, so SGLang's rest is below zero: fails. A checkpoint
    shipped in 8 bits is never floored by 16-bit shapes: sf40 (DeepSeek-V4-Pro, fp8) still starts by SGLang's minimum."""
    f = _entry("sf112")
    ok, why = engine_check(f, run_doctor(f), _Edit("--mem-fraction-static", "0.80"))  # the first edit before docfix22
    assert ok is False and "119.83 GiB, printed" in why
    assert grade(f)["verdict"] != "fails"  # docfix22: the doctor no longer offers it
    assert grade(_entry("sf40"))["verdict"] == "starts"


def test_vllm_printed_weights_floor_on_a_fraction_edit():
    """sf279 (RTX-3090, "Model loading took 14.2487 GB"): 0.55 x 24 GiB is under the weights, so V1's available KV memory
    is below zero whatever the rest (fails); the doctor's own 0.95 is above them and stays not decided."""
    f = _entry("sf279")
    ok, why = engine_check(f, run_doctor(f), _Edit("--gpu-memory-utilization", "0.55"))
    assert ok is False and "14.25 GiB, printed" in why
    assert grade(f)["verdict"] == "unverifiable"


def test_audit_accounts_for_every_undecided_held_aside_row():
    from benchmarks.doctor_grade_audit import audit

    committed = json.loads(RESULTS.read_text())
    table, ids_a, ids_f = audit(committed["rows"], {f.id: f for f in load_failures().failures})
    held = committed["held_aside"]
    # 230 undecided held-aside rows at gradefix (batches 1-18), 238 with batch 19's 8 (6 not decided, 2 no edit), 240 after
    # docfix22 (sf112, sf286 no longer fail), 241 with batch 20's sf348 (not read), 240 after docfix23 (sf343 starts by
    # the thread's fix)
    undecided = held["unverifiable"] + held["no_edit"] + held["not_read"] + held["crash"]
    assert sum(table.values()) == undecided == 240
    assert sum(map(len, ids_a.values())) == sum(map(len, ids_f.values())) == undecided
