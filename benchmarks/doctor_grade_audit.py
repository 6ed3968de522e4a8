"""Why the held-aside rows the grade leaves undecided cannot be decided (gradefix, session 9): an account, not a grade.

    PYTHONPATH=src:. python benchmarks/doctor_grade_audit.py        # the table docs/doctor.md quotes, and each class's ids

Reads benchmarks/results/doctor_grade.json (the grade as committed) and the entries (benchmarks/published/
startup_failures.yaml). Every held-aside row that is not "starts" or "fails" gets two reasons, each the first rule below
that matches, applied the same way to every row (by the row's fields and the log's own words, never by id):

- **by the engine's arithmetic**: no edit / not read; the grade's own "not decided" note where a rule of grade schema 8
  reached the row (within the printed figures' rounding; the check at the edit needs a figure not printed); the edit states
  no value (an action or a direction: nothing to compute); a switch (eager mode, no CUDA graphs) on a failure whose log
  prints no graph-memory figure; Metal's recommended working set (ggml-metal only warns past it; the failure is the
  driver's "status 5", not an engine check); a runtime allocation that failed (CUDA/HIP/Vulkan/SYCL/Metal out of memory in
  loading, the profile run, warm-up, graph capture or a llama.cpp buffer: the engine checks nothing before it, and the
  device's free memory at that moment is not printed); an engine check whose figures the text does not print (prose, a
  cut log, or the message without its numbers); otherwise another failure (NCCL, host memory, a multimodal profile...).
- **by the thread's fix**: no fix; suggested, not shown to start; confirmed, another version, engine (V0) or build (by the fix's own words); confirmed, another
  setting or action (kind "other"); confirmed, another knob than the first edit; confirmed, the same knob, less
  conservative than the thread's working value.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
RESULTS = HERE / "results" / "doctor_grade.json"
_VALUE_EDIT = re.compile(r"^(?:--[\w-]+ [\d.]+)(?: --[\w-]+ [\d.]+)*(?: \(.*\))?$")
_SWITCH = re.compile(r"^--(?:enforce-eager|disable-cuda-graph)\b")
_ALLOC = re.compile(r"out of memory|Tried to allocate|cudaMalloc failed|failed to allocate|can't malloc|OutOfDeviceMemory|"
                    r"ErrorOutOfDeviceMemory|hipMalloc|unable to allocate", re.I)
_VERSION = re.compile(r"version|upgrad|downgrad|release|nightly|==\d|\bv?\d+\.\d+\.\d+|build|driver|rocm \d|V0 engine|VLLM_USE_V1=0", re.I)
_CHECKS = ("no_cache_blocks", "max_len_exceeds_kv", "kv_needed_exceeds_available", "free_memory_below_utilization",
           "sglang_not_enough_memory")


def by_arithmetic(r: dict, f) -> str:
    why, edit = r.get("engine_arithmetic_why") or "", r.get("first_edit") or ""
    if r["verdict"] in ("no edit", "not read", "crash"):
        return r["verdict"]
    if "rounding" in why:
        return "figures printed: inside their rounding"
    if "not decided" in why:
        return "figures printed: the check at the edit needs one not printed (bytes per token, the profile at the new setting)"
    if _SWITCH.match(edit):
        return "a switch (eager / no CUDA graphs): no graph-memory figure printed"
    if not _VALUE_EDIT.match(edit):
        return "the edit states no value (an action or a direction)"
    if "recommendedMaxWorkingSetSize" in f.log:
        return "Metal's working set: a warning, not an engine check"
    if f.error not in _CHECKS and (f.error.startswith(("cuda_oom", "tgi_", "llamacpp")) or _ALLOC.search(f.log + f.error_line)):
        return "a runtime allocation failed: no engine check; free memory at that moment not printed"
    if f.error in _CHECKS:
        return "an engine check whose figures the text does not print"
    return "another failure (NCCL, host memory, multimodal profile, offload, ...)"


def by_fix(r: dict, f) -> str:
    if f.fix is None:
        return "no fix in the thread"
    if not f.fix.confirmed:
        return "fix suggested, not shown to start"
    if f.fix.kind == "other":
        return "confirmed: another version, engine (V0) or build" if _VERSION.search(f.fix.value) else "confirmed: another setting or action"
    if r.get("fix_match") is False and "another knob" in (r.get("fix_match_why") or ""):
        return "confirmed: another knob than the first edit"
    if r.get("fix_match") is False:
        return "confirmed: same knob, less conservative"
    return "confirmed: not compared (no edit)"


def audit(rows: list[dict], entries: dict) -> tuple[Counter, dict[str, list[str]], dict[str, list[str]]]:
    """(arithmetic reason x fix reason counts, arithmetic reason -> ids, fix reason -> ids) over held-aside undecided rows."""
    table: Counter = Counter()
    ids_a: dict[str, list[str]] = {}
    ids_f: dict[str, list[str]] = {}
    for r in rows:
        if not (r["batch"] > 1 or r["held_out"]) or r["verdict"] in ("starts", "fails"):
            continue
        a, x = by_arithmetic(r, entries[r["id"]]), by_fix(r, entries[r["id"]])
        table[a, x] += 1
        ids_a.setdefault(a, []).append(r["id"])
        ids_f.setdefault(x, []).append(r["id"])
    return table, ids_a, ids_f


# figures of an engine's own start-up check (the keys grade schema 8's rules read; log_figures adds V1's from the log's lines)
_CHECK_FIGURES = {"kv_cache_tokens", "kv_blocks", "kv_needed_gib", "estimated_max_model_len", "free_memory_gib", "kv_available_gib",
                  "mamba_cache_blocks", "minimum_mem_fraction_static", "free_after_load_gb", "activation_gib"}


def out_of_reach(rows: list[dict], entries: dict) -> list[str]:
    """Undecided held-aside rows that no first edit could be shown to start by the grade's rules, whatever the doctor says:
    the text prints no figure of an engine check (``_CHECK_FIGURES``, vLLM's V1 pairs read from the log included), the
    thread has no confirmed fix on a knob the grade compares (kind "other": versions, compound or other settings), and the
    memory-model rule cannot reach it (not vLLM, not a KV check, or the model or GPU unresolved)."""
    from benchmarks.doctor_grade import _KV_KINDS
    from benchmarks.doctor_grade_logfig import log_figures

    out = []
    for r in rows:
        f = entries[r["id"]]
        if not (r["batch"] > 1 or r["held_out"]) or r["verdict"] in ("starts", "fails"):
            continue
        model_rule = r["engine"] == "vllm" and r.get("model_run") and f.error in _KV_KINDS  # the memory-model rule may decide it
        if not _CHECK_FIGURES & log_figures(f).keys() and not (f.fix and f.fix.confirmed and f.fix.kind != "other") and not model_rule:
            out.append(r["id"])
    return out


def main() -> int:
    from benchmarks.published.startup_failures import load_failures

    entries = {f.id: f for f in load_failures().failures}
    table, ids_a, ids_f = audit(json.loads(RESULTS.read_text())["rows"], entries)
    fixes = sorted(ids_f, key=lambda k: -len(ids_f[k]))
    print("| by the engine's arithmetic | rows | " + " | ".join(fixes) + " |")
    print("|---|---|" + "---|" * len(fixes))
    for a in sorted(ids_a, key=lambda k: -len(ids_a[k])):
        print(f"| {a} | {len(ids_a[a])} | " + " | ".join(str(table[a, x]) for x in fixes) + " |")
    print(f"| all | {sum(table.values())} | " + " | ".join(str(len(ids_f[x])) for x in fixes) + " |")
    for name, ids in (*ids_a.items(), *ids_f.items()):
        print(f"\n{name} ({len(ids)}): {', '.join(ids)}")
    rows = json.loads(RESULTS.read_text())["rows"]
    far, held = out_of_reach(rows, entries), sum(1 for r in rows if r["batch"] > 1 or r["held_out"])
    print(f"\nout of reach of every rule whatever the first edit ({len(far)} of {held} held aside; at most "
          f"{100 * (held - len(far)) / held:.1f}% could be shown to start): {', '.join(far)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
