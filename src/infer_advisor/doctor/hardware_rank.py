"""How many GPUs the machine has, and edits that need more than that (retrospective: prompted by batch 7's sf82, TP 4
offered on two RTX 3090s, and sf97, TP 2 on a g4dn.xlarge with one T4).

    >>> gpu_count_from_log("CUDA_VISIBLE_DEVICES=0,1 vllm serve ...")
    (2, None, "the log's CUDA_VISIBLE_DEVICES=0,1 (2 GPUs visible)")

The count comes from ``--gpus`` or the log's own lines: ``CUDA_VISIBLE_DEVICES``, llama.cpp's "found N CUDA devices"
and "Device N:" lines, ``nvidia-smi`` rows, an instance type (``data/instance_gpus.yaml``); a world size says only how
many the run used (at least that many are present). An edit that raises TP or PP needs ``new tp x pp`` GPUs: where the
count is known and smaller, the edit does not start (it says so); where it is not known, the edit is ranked after every
edit that runs on the GPUs in use and says how many it needs. Every pattern is one ``re.search``/``findall`` on bounded
text without nested repetition.
"""

from __future__ import annotations

import re
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .edits import Edit, undecided_edit

TP_FLAGS = ("--tensor-parallel-size", "-tp", "--tp-size", "--tp", "--num-shard")
PP_FLAGS = ("--pipeline-parallel-size", "-pp", "--pp-size")
_VISIBLE = re.compile(r"CUDA_VISIBLE_DEVICES=[\"']?(\d+(?:,\d+){0,63})")
_FOUND = re.compile(r"found (\d{1,3}) (?:CUDA|ROCm|SYCL|Vulkan) devices")
_DEVICE = re.compile(r"\bDevice (\d{1,3}): [^\n]{3,80}?compute capability")
_SMI_ROW = re.compile(r"^\|\s{1,6}(\d{1,2})\s{1,6}(?:NVIDIA|Tesla|Quadro)\b", re.M)
_INSTANCE = re.compile(r"\b((?:g4dn|g5|g6e?|p4de?|p5e?n?)[._-](?:\d{0,2}x?large|metal))\b", re.I)
_DOCKER = re.compile(r"--gpus[= ][\"']?(?:count=)?(\d{1,3})\b|nvidia\.com/gpu[\"']?:\s{0,4}[\"']?(\d{1,3})\b")
_WORLD = re.compile(r"world[_ ]size[=: ]+(\d{1,4})")
# docfix16 (sf267): an integrated GPU sharing the host's memory (an APU) is the machine's one GPU: AMD Strix Halo (gfx1151,
# Ryzen AI Max, the amdgpu.gttsize kernel setting that sizes its share of system memory), NVIDIA GB10 (DGX Spark), Jetson.
_APU = re.compile(r"\b(Strix Halo|gfx1151|Ryzen AI Max|amdgpu\.gttsize|DGX Spark|GB10|Jetson (?:AGX )?Orin|GMK evo X2)\b", re.I)


class InstanceGpus(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str = Field(min_length=8)
    instances: dict[str, int]


@cache
def _instances() -> dict[str, int]:
    from .._data import load_validated
    from .._paths import shipped

    return load_validated(shipped("data") / "instance_gpus.yaml", InstanceGpus).instances


def gpu_count_from_log(text: str) -> tuple[int | None, int | None, str | None]:
    """(GPUs present, or None; GPUs the run used at least, or None; how it was read)."""
    text = text[:2_000_000]
    m = _VISIBLE.search(text)
    if m:
        n = len(m.group(1).split(","))
        return n, None, f"the log's CUDA_VISIBLE_DEVICES={m.group(1)[:40]} ({n} GPU{'s' if n > 1 else ''} visible)"
    m = _FOUND.search(text)
    if m:
        return int(m.group(1)), None, f"the log's '{m.group(0)}'"
    m = _DOCKER.search(text)
    if m:  # docker run --gpus N, a Kubernetes limit nvidia.com/gpu: N: the GPUs the container sees
        return int(m.group(1) or m.group(2)), None, f"'{m.group(0)[:40]}' (the GPUs the container sees)"
    for pattern, what in ((_DEVICE, "device lines"), (_SMI_ROW, "nvidia-smi rows")):
        found = {int(i) for i in pattern.findall(text)}
        if found:
            return len(found), None, f"the log's {what} ({len(found)} GPU{'s' if len(found) > 1 else ''})"
    m = _INSTANCE.search(text)
    if m:
        name = m.group(1).lower().replace("_", ".").replace("-", ".")
        if name in _instances():
            n = _instances()[name]
            return n, None, f"the instance type {name} in the log ({n} GPU{'s' if n > 1 else ''}, data/instance_gpus.yaml)"
    m = _APU.search(text)
    if m:
        return 1, None, f"the log's '{m.group(0)}' (an integrated GPU sharing the host's memory: one GPU)"
    m = _WORLD.search(text)
    if m:
        return None, int(m.group(1)), f"the log's '{m.group(0)}' (the run used {m.group(1)}; how many are present is not printed)"
    return None, None, None


def gpus_needed(edit: Edit, tp_total: int, pp: int) -> int | None:
    """GPUs the edit's layout needs, where it changes TP or PP (None: it does not)."""
    argv, pp = edit.argv, max(pp, 1)
    tp_only = max(tp_total // pp, 1)
    for i, flag in enumerate(argv[:-1]):
        if not argv[i + 1].isdigit():
            continue
        if flag in TP_FLAGS:
            return int(argv[i + 1]) * (1 if flag == "--num-shard" else pp)
        if flag in PP_FLAGS:
            return tp_only * int(argv[i + 1])
    return None


def place_by_hardware(edits: list[Edit], count: int | None, at_least: int | None, tp_total: int, pp: int,
                      error=None) -> tuple[list[Edit], bool]:
    """Edits that need more GPUs than present do not start; where the count is unknown they go after those that run on
    the GPUs in use. Returns the edits and whether every edit that needs no more GPUs fails (nothing runs as it is)."""
    edits = spare_gpus_first(edits, error, count, tp_total)
    out, demoted = [], False
    for e in edits:
        need = gpus_needed(e, tp_total, pp)
        if need is None or need <= max(tp_total, 1):
            out.append(e)
            continue
        update = {"gpus_needed": need}
        if count is not None and need > count:
            demoted = demoted or e.starts is not False
            update.update(starts=False, confidence="hardware", cost=f"{e.cost}; needs {need} GPUs, {count} present",
                          basis=f"needs {need} GPUs and the machine has {count}: it cannot start there")
        elif count is None:
            shown = f" (the log shows at least {at_least})" if at_least else ""
            update["cost"] = f"{e.cost}; needs {need} GPUs{shown}: how many are present is not known (pass --gpus)"
        out.append(e.model_copy(update=update))
    if count is not None and not demoted:
        return out, False
    def key(e: Edit) -> int:  # a stable sort: the order within each group is the ranking already made
        more = e.gpus_needed is not None and e.gpus_needed > max(tp_total, 1)
        return 2 if e.starts is False else (1 if more and count is None else 0)
    out.sort(key=key)
    return out, demoted and all(e.starts is False for e in out)


# an out of memory whose phase the text does not show, or the weights' load: every per-GPU term (weights, KV, activations)
# shrinks with more GPUs, while utilization, eager mode or a shorter context each free one term only
_ANY_PHASE_OOM = ("cuda_oom", "cuda_oom_load")


def spare_gpus_first(edits: list[Edit], error, count: int | None, tp_total: int) -> list[Edit]:
    """docfix12 (retrospective, batch 10's sf174: InternVL3-78B on 4 of 8 A100-40GB): where nothing decides an edit, the
    machine has at least twice the GPUs the run is stated to use (TP 2 or more), and the out of memory's phase is unknown (or the load), a larger TP
    on the GPUs that are there goes first: it is the one first try that frees room in every phase. Still not decided."""
    from .first_try import after_budget

    if error is None or error.kind not in _ANY_PHASE_OOM or not count or tp_total < 2 or count < 2 * tp_total or any(e.starts for e in edits):
        return edits  # tp_total 1 may be a TP the text does not state (a TGI run shards over every visible GPU: sf90)
    if after_budget(error):  # a small allocation with the GPU full: the phase is after the KV cache (first_try)
        return edits
    tp = [e for e in edits if e.argv[:1] and e.argv[0] in TP_FLAGS and (gpus_needed(e, tp_total, 1) or 0) <= count]
    if not tp:
        return edits
    first = tp[0].model_copy(update={"basis": f"{tp[0].basis}; the machine has {count} GPUs and the run uses {max(tp_total, 1)}: "
                                     "more GPUs shrink every per-GPU term, whichever phase ran out"})
    return [first] + [e for e in edits if e is not tp[0]]


def nothing_runs_edit(edits: list[Edit], count: int | None, tp_total: int) -> Edit:
    """The first line where no flag starts on the GPUs present: what would (fewer bytes per GPU, or more GPUs)."""
    need = min((e.gpus_needed for e in edits if e.gpus_needed), default=2 * max(tp_total, 1))
    have = f"{count} GPU{'s' if count != 1 else ''}" if count else f"the {tp_total} GPU{'s' if tp_total != 1 else ''} in use"
    return undecided_edit(f"no flag starts on {have}: a quantized checkpoint (fewer bytes per GPU) or {need} GPUs", [],
                "another checkpoint or another machine", 1.0, max_model_len=max((e.max_model_len for e in edits), default=0),
                confidence="memory_model",
                basis="every flag edit below fails by the memory model on the GPUs present, or needs GPUs that are not there")


_ENGINE_NAMES = {"vllm": "vLLM", "tgi": "TGI", "sglang": "SGLang"}


def for_each_engine(edits: list[Edit], first_try, error, max_model_len: int | None, tp: int) -> list[Edit]:
    """No line names the engine (a bare torch out-of-memory, sf90): the edits read as vLLM's and TGI's and SGLang's first
    tries, each naming the engine whose flag it is (no flag is common to the three): each engine's first, then the rest."""
    lists = [[e.model_copy(update={"change": f"{e.change} (vLLM)"}) for e in edits]]
    for engine in ("tgi", "sglang"):
        lists.append([e.model_copy(update={"change": f"{e.change} ({_ENGINE_NAMES[engine]})"})
                      for e in first_try(error, engine, max_model_len, None, tp)])
    firsts = [x[0] for x in lists if x]  # each engine's first edit in the first three lines, then the rest in order
    return firsts + [e for x in lists for e in x[1:]]


# the CUDA runtime's own string for cudaErrorMemoryAllocation, printed by ggml-cuda's CUDA_CHECK (llama.cpp: "CUDA error: out of
# memory" then "current device: N, in function ...") as by PyTorch ("RuntimeError: CUDA error: out of memory"); unlike
# torch's allocator message ("CUDA out of memory. Tried to allocate") it names no engine (docfix15: batch 11's sf221)
_RUNTIME_OOM = re.compile(r"CUDA error: out of memory")


def unnamed_engine_first(error) -> Edit | None:
    """Where no line names the engine and the error is the CUDA runtime's bare string, llama.cpp is as likely as a Python
    engine: no engine's flag goes first, but the one remedy every engine has, in each one's words (not decided)."""
    if error is None or error.kind != "cuda_oom" or not _RUNTIME_OOM.search(error.line or ""):  # a phase shown keeps its remedy
        return None
    return undecided_edit("a shorter context in the engine's own flag (vLLM --max-model-len, SGLang --context-length, TGI --max-total-tokens, "
                "llama.cpp -c), or fewer GPU layers for llama.cpp (-ngl)", [], "context (or, with -ngl, speed)", 0.1,
                basis="not decided: no line names the engine, and 'CUDA error: out of memory' is the CUDA runtime's own string, printed "
                "by llama.cpp's CUDA backend as by PyTorch; the KV cache and activations shrink with the context in every engine; "
                "paste the engine's start-up log for its own figures")


# several servers on one device (docfix13, retrospective: batch 10's sf171 "two 7b models on 80B A100", sf184): the words
# that say so, or two or more commands (two ports) with their utilizations in the text
_SHARED = re.compile(r"(?i)\b(?:two|three|four|several|multiple|many|[2-9])\s+(?:\S+\s+){0,2}(?:models?|servers?|instances?|"
                     r"vllm(?: servers?| programs?| processes| instances)?)\b[^\n]{0,40}?\bon\s+(?:one|a single|the same|a|an|\d+\w*)\s+"
                     r"(?:\S+\s+)?(?:GPUs?|cards?|devices?|A100|H100|H200|A10G?|L4|L40S?|NPUs?)\b")
_UTILIZATION = re.compile(r"--gpu[-_]memory[-_]utilization[= ](\d?\.\d{1,3})")
_PORT = re.compile(r"--port[= ](\d{2,5})\b")


def shared_device_note(text: str, engine: str, utilization: float | None) -> str | None:
    """Where the text shows several servers sharing one device: the others' memory counts, and how each share is set.
    vLLM's V0 profile (worker.profile_num_available_blocks, read at 0.2.x) sizes the KV cache as total x utilization -
    peak, with peak = total - free after profiling: memory other servers hold counts as this server's peak, so the one
    started later needs a utilization covering the others' shares and its own; later releases measure from the memory
    free when the server starts, and V1 (0.11+) refuses a share above that free memory."""
    if engine != "vllm" or not text:
        return None
    servers = len(set(_PORT.findall(text)))  # two commands (two ports), not one server's retries (sf119: 0.850, then 0.847)
    shares = sorted(float(u) for u in _UTILIZATION.findall(text)) if servers >= 2 else []
    if not _SHARED.search(text) and len(shares) < 2:
        return None
    own = f"{utilization:.2f}" if utilization else "its own share"
    per_server = (f" The text shows the shares {', '.join(f'{s:.2f}' for s in shares)}: under the V0 profile the server started "
                  f"second needs at least {sum(shares):.2f} (their sum); in later releases their sum must stay within the share of the GPU free at start."
                  if len(shares) >= 2 else "")
    return ("Several servers share this device: the memory the other servers hold counts. Under vLLM's V0 profile (0.2.x: peak = "
            "total - free after profiling) it is counted as this server's own peak, so the server started later needs a utilization of "
            f"at least the others' shares plus {own} (its own); in later releases each utilization is the server's share of the "
            "total, the shares must fit the memory free when each starts (V1 0.11+ refuses one above it), and the others' memory is "
            "not this server's to free." + per_server)



def shards_to_gpus_present(diag, count: int | None) -> None:
    """docfix16 (retrospective, batch 13's sf265: --num-shard 2 offered on 4 MI300X): where the GPUs present are known and
    nothing decides a tensor-parallel edit for an out-of-memory, it uses the GPUs present (the largest power of two of
    them; TGI: all of them), never fewer. TGI's launcher without --num-shard shards over the entries of
    CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES, else 1 (launcher/src/main.rs ``find_num_shards``: ``(None, None) =>
    num_cuda_devices().unwrap_or(1)``), so the run used 1 shard or all the GPUs listed: 2 is below what either needs
    (sf127's confirmed fix on four V100s was --num-shard 4)."""
    kind = diag.error.kind if diag.error is not None else ""
    tp = max(diag.tp or 1, 1)
    if not count or count <= tp or not kind.startswith("cuda_oom") or diag.engine not in ("vllm", "sglang", "tgi"):
        return
    target = present_tp(diag.engine, count)
    out = []
    for e in diag.edits:
        flag = e.argv[0] if e.argv else None
        if flag in TP_FLAGS and e.starts is None and len(e.argv) == 2 and e.argv[1].isdigit() and tp < int(e.argv[1]) < target:
            suffix = e.change[len(f"{flag} {e.argv[1]}"):]  # an engine's name where no line names it, " (TGI)"
            e = e.model_copy(update={"change": f"{flag} {target}{suffix}", "argv": [flag, str(target)], "gpus_needed": target,
                                     "cost": f"{target} GPUs instead of {tp}: every GPU present (fewer weights on each)"})
        out.append(e)
    diag.edits = out


def present_tp(engine: str, count: int) -> int:
    """The tensor-parallel size that uses the GPUs present: all of them for TGI (its own default where they are listed),
    else the largest power of two of them (attention heads divide by a power of two)."""
    return count if engine == "tgi" else 1 << (count.bit_length() - 1)
