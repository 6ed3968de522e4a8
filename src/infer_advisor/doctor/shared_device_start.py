"""Engines sharing one device: start them one after the other, or size each utilization to fit them all (docfix17,
retrospective: batch 14's sf272, two V0 LLM classes at 0.4 on one T4, sf273, two V1 0.8.5 containers at 0.3 on one
A100-80GB, sf276, two vllm-ascend instances at 0.4 on one NPU, were each offered one utilization step of 0.05-0.10).

For the doctor's diagnosis ``diag`` of a start-up log ``text`` (tests/doctor/test_doctor_docfix17.py runs sf276's)::

    shared_device_first(diag, text)   # diag.edits with the named edits first; nothing where the text shows one engine

Where the text shows several engines on one device (its words, two or more commands with their shares, or two engine
processes each sizing its cache) and the start failed on memory, the memory another engine holds is counted by how
the release profiles:

* V0 since vLLM PR #2863 (merged 2024-02, "considering the other processes' GPU memory usage at the engine initialization
  time": worker ``init_gpu_memory`` = the free memory when the worker starts; ``determine_num_available_blocks``'s
  peak = that - the free memory after ``profile_run``): memory held before this engine started is not its own, memory
  another engine allocates during its profile is. Started together, each counts the other's load as its own peak
  (sf272's reporter: "if initialized one by one sequentially, there is no problem"): start them one after the other.
* V1 before PR #18974 (gpu_worker's non-torch memory = total - free - torch's, which "incorrectly counts memory used by
  other processes as non_torch_allocations", vLLM PR #14419/#19312): the others' memory is in this engine's peak
  whatever the order, so the engine started later needs a utilization covering the others' shares and its own (their
  sum), or V0 where the release still has it (VLLM_USE_V1=0, sf273's confirmed fix).
* Later V1 (and engines that print "Available memory"/start checks): each utilization is a share of the total that must
  fit the memory free when it starts: start them one after the other, each share at most (1 - what is held) / engines.

None of these is decided by the log's figures (``starts`` None).
"""

from __future__ import annotations

import re

from .edits import undecided_edit

V1_OTHERS_FIXED = "0.9.1"  # the first release with PR #18974 (merged 2025-06; inferred from the merge date, not read from a tag)
# two engines each sizing its cache: the same engine-core process name ("(EngineCore_DP0 pid=N)") with two pids, each
# printing "Available memory" / "GPU KV cache size" (one engine's workers, Worker_TP0..7, are one engine: sf215)
_PROCESS_MEMORY = re.compile(r"\((EngineCore(?:_DP\d+)?) pid=(\d+)\)[^\n]{0,120}?(?:Available memory|"
                             r"GPU KV cache size|Free memory on device|memory profiling)")
_WORDS = re.compile(r"(?i)\b(?:two|three|four|several|multiple|many|[2-9])\s+(?:\S+\s+){0,2}(?:workers?|LLM classes|engines?|"
                    r"containers?|services?|LLM instances)\b[^\n]{0,60}?\b(?:on|in)\s+(?:one|a single|the same|a|an)\s+(?:\S+\s+)?"
                    r"(?:GPUs?|cards?|devices?)\b")
# (V1's free-memory start check is worked on its own printed figures: free_memory.held_memory_first)
_KINDS = ("no_cache_blocks", "kv_cache_check", "max_len_exceeds_kv", "cuda_oom", "cuda_oom_profile")


def shares_device(text: str) -> int:
    """How many engines the text shows on one device (0: it shows one, or does not say)."""
    from .hardware_rank import _PORT, _SHARED, _UTILIZATION

    by_name: dict[str, set[str]] = {}
    for name, pid in _PROCESS_MEMORY.findall(text[:2_000_000]):
        by_name.setdefault(name, set()).add(pid)
    pids = max(by_name.values(), key=len, default=set())
    ports = len(set(_PORT.findall(text)))
    shares = len(_UTILIZATION.findall(text)) if ports >= 2 else 0
    if len(pids) >= 2 or shares >= 2:
        return max(len(pids), shares)
    return 2 if (_SHARED.search(text) or _WORDS.search(text)) else 0


def shared_device_first(diag, text: str) -> None:
    """vLLM only: the named edits for engines sharing one device go first; the rest keep their order after them."""
    from ..engines.versions import version_key
    from .first_try import MAX_FIRST_TRY_UTILIZATION
    from .refusal_edits import V0_REMOVED
    from .version import is_release
    from .startup_errors import V1_FIRST  # V1 the default engine from 0.8.0

    if diag.error is None or diag.error.kind not in _KINDS:  # vLLM only (its passes, engine_passes)
        return
    n = shares_device(text)
    if not n:
        return
    u = diag.gpu_memory_utilization or 0.90
    version = diag.engine_version if is_release(diag.engine_version) else None
    v1 = diag.generation == "V1" if diag.generation else bool(version and version_key(version) >= version_key(V1_FIRST))
    old_v1 = v1 and version is not None and version_key(version) < version_key(V1_OTHERS_FIXED)
    sequential = undecided_edit("start the engines one after the other (each once the previous one has allocated its KV cache)", [],
                       "a slower start; no memory given up", 0.0, confidence="engine_advice",
                       basis="an engine's profile counts what another allocates while it profiles (V0 since PR #2863 counts only that)")
    if old_v1:
        total = round(min(n * u, MAX_FIRST_TRY_UTILIZATION), 2)
        edits = [undecided_edit(f"--gpu-memory-utilization {total:.2f}", ["--gpu-memory-utilization", f"{total:.2f}"],
                       f"for the engine started last: {n} x {u:.2f} (every engine's share; its own KV budget stays {u:.2f} of the GPU)",
                       0.0, confidence="engine_advice", basis=f"V1 before {V1_OTHERS_FIXED} (PR #18974) counts the other engines' memory as its own non-torch memory")]
        if version_key(version) < V0_REMOVED:
            edits.append(undecided_edit("VLLM_USE_V1=0 (the V0 engine)", [], "the V0 engine's scheduler and speed", 0.05, confidence="engine_advice",
                               basis="V0's profile does not count memory held before it started (PR #2863)"))
        edits.append(sequential)
    else:
        edits = [sequential]
        share = round(1 / n - 0.005, 2)  # the shares of n engines sum to at most the whole GPU (less what others hold)
        if v1 and share < u:
            edits.append(undecided_edit(f"--gpu-memory-utilization {share:.2f}", ["--gpu-memory-utilization", f"{share:.2f}"],
                               f"each of the {n} engines: their shares sum to at most 1 minus what other processes hold", 0.05,
                               confidence="engine_advice", basis="V1 refuses a share above the memory free when it starts, and each share is of the total"))
    diag.edits = edits + [e for e in diag.edits if e.change not in {x.change for x in edits}]
    diag.notes.append(f"The text shows {n} engines on one device: the named edits (sequential start, shares that fit them all) go "
                      "first; a utilization step alone does not change what the other engine holds.")
