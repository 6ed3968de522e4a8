"""The doctor's edits: each candidate setting change run through the memory model, and whether it then starts.

    >>> edits = rank_edits(Scenario(facts, setup, calibration, rule), base)
    >>> edits[0].change, edits[0].starts, edits[0].kv_cache_tokens
    ('--gpu-memory-utilization 0.93', True, 29488)

A setup *starts* when the engine's own start-up checks pass on the memory model's figures: KV room is positive ("No
available memory for the cache blocks" otherwise), one request of ``max_model_len`` fits (vLLM V0's "max seq len ...
larger than ... KV cache", V1's "... GiB KV cache is needed ..."), and what the engine allocates outside its budget
(CUDA graphs captured after the KV cache, the CUDA context) fits in ``1 - gpu_memory_utilization`` of the GPU. When
the log shows the engine ran out of memory capturing CUDA graphs, the failing setup proves that room was short, so an
edit must add at least one CUDA-graph pool (the engine profile's figure) of room over it (:class:`StartRule`).

Costs rank the edits that start (lower first): a utilization change that stays at or under 0.90 costs nothing but
memory that was idle; context lost costs its fraction; FP8 KV 0.15 (precision); fewer sequences 0.2 (throughput);
eager mode 0.3 (decode steps without CUDA graphs); doubling TP 0.6 (GPUs). These are ordering weights, not
measurements: docs/doctor.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

STEP = 0.01  # gpu_memory_utilization step of the search
MAX_UTILIZATION = 0.98
MIN_UTILIZATION = 0.30
ROUND_TOKENS = 256


class LedgerLine(BaseModel):
    """One term of the memory ledger of one GPU."""

    model_config = ConfigDict(extra="forbid")

    term: str
    bytes_per_gpu: int
    in_budget: bool = Field(description="Counted in gpu_memory_utilization x total (False: allocated outside it).")
    source: str = Field(description="calibrated (log), estimated, engine profile (...), logged.")
    logged_bytes: int | None = Field(default=None, description="The figure the log printed for this term, if any.")
    line: str | None = Field(default=None, description="The log line behind it.")


def edit_order(e: Edit) -> tuple[int, float]:
    """Those that start first, then those the figures do not decide, then by cost."""
    return ({True: 0, None: 1, False: 2}[e.starts], e.cost_rank)


class Edit(BaseModel):
    """One change to the launch settings and what the memory model says it gives."""

    model_config = ConfigDict(extra="forbid")

    change: str = Field(description="The edit in the engine's own flags, e.g. '--max-model-len 23552' (vLLM), '--ctx-size 16384' (llama.cpp).")
    argv: list[str] = Field(description="The flags to add or replace.")
    starts: bool | None = Field(description="The engine's start-up checks pass with this edit (by the memory model's figures, or the "
                                "engine's own arithmetic on the log's figures); None: the log's figures do not decide it.")
    kv_cache_tokens: int | None = Field(description="KV-cache capacity in tokens with the edit (None: not known without the model).")
    max_concurrency: int | None = Field(description="Requests of max_model_len tokens that fit at once with the edit.")
    max_model_len: int
    cost: str = Field(description="What the edit gives up.")
    cost_rank: float = Field(description="Ordering weight (lower first); see the module docstring.")
    confidence: Literal["engine_figures", "memory_model", "engine_advice", "first_try", "hardware"] | None = Field(
        default=None, description="How sure (schema 2): engine_figures: the engine's own check on the figures the log printed; "
        "memory_model: the memory model's figures (docs/accuracy.md gives its error); engine_advice: the direction the engine's "
        "message or the failure gives, how far not decided; first_try: what an on-call engineer tries first, nothing decides it; "
        "hardware (schema 3): it needs more GPUs than the machine has (--gpus or the log), so it does not start there.")
    basis: str | None = Field(default=None, description="Why, in one sentence (schema 2).")
    gpus_needed: int | None = Field(default=None, description="GPUs the edit's layout needs where it raises TP or PP (schema 3; "
                                    "None: it needs no more than the run used).")
    keeps_asked_budget: SkipJsonSchema[bool] = Field(
        default=False, exclude=True, description="The action keeps the run's asked budget (freeing the memory other processes "
        "hold: free_memory.free_action), so the budget floor holds it to the same weights. The doctor's passes read it; not "
        "in the JSON or its schema (the cost text says it to a reader).")


NOT_DECIDED = "not decided by the log's figures"


def undecided_edit(change: str, argv: list[str], cost: str, rank: float, why: str | None = None, *, basis: str | None = None,
                   confidence: str | None = "first_try", max_model_len: int | None = 0, gpus_needed: int | None = None) -> Edit:
    """An edit the log's figures do not decide: ``starts``, KV tokens and concurrency unknown (None). ``why`` is the basis
    after "not decided by the log's figures: "; ``basis`` is taken as written."""
    return Edit(change=change, argv=list(argv), starts=None, kv_cache_tokens=None, max_concurrency=None, max_model_len=max_model_len or 0,
                cost=cost, cost_rank=rank, confidence=confidence, basis=f"{NOT_DECIDED}: {why}" if why is not None else basis,
                gpus_needed=gpus_needed)


@dataclass
class StartRule:
    """Extra conditions a logged failure imposes: room outside the budget, a ceiling on the budget (free memory)."""

    min_room_bytes: float = 0.0
    max_budget_bytes: float | None = None
    any_kv: bool = False  # the engine starts with any KV pool (SGLang), not only with one request of the context
    min_slots: int = 1  # llama.cpp allocates every slot's context at load (n_ctx cells): all of them must fit
    graph_pool_bytes: float = 0.0  # the CUDA-graph pool a failed capture proved short of room (0: no such failure)


def graph_pool_bytes(est) -> int:
    """The CUDA-graph pool of this setup as the memory model counts it, in the budget or outside it: by captured sizes
    and layers where the engine profile scales it (engines/cuda_graphs.py), else the profile's fixed figure, or the
    log's own figure where it printed one."""
    return int(est.overhead_bytes_per_gpu.get("cuda_graphs", 0) + est.outside_budget_bytes_per_gpu.get("cuda_graphs", 0))


@dataclass
class Scenario:
    facts: object
    setup: dict
    calibration: object | None
    rule: StartRule = field(default_factory=StartRule)


def room_outside_budget(est) -> float:
    """GPU memory left after the budget and what the engine allocates outside it."""
    return est.gpu_memory_bytes - est.budget_bytes_per_gpu - sum(est.outside_budget_bytes_per_gpu.values())


def starts(est, rule: StartRule) -> bool:
    """The engine's start-up checks on the memory model's figures (see the module docstring)."""
    if est.kv_cache_bytes_per_gpu <= 0 or est.kv_cache_tokens <= 0 or (est.max_concurrency < 1 and not rule.any_kv):
        return False
    if rule.min_slots > 1 and est.max_concurrency < rule.min_slots:
        return False
    if rule.max_budget_bytes is not None and est.budget_bytes_per_gpu > rule.max_budget_bytes:
        return False
    return room_outside_budget(est) >= rule.min_room_bytes


def _estimate(sc: Scenario, changes: dict, calibration=None):
    from ..estimate.memory import estimate_memory

    setup = {**sc.setup, **changes}
    cal = calibration if calibration is not None else sc.calibration
    if cal is not None:
        cal = cal.for_layout(setup["tp"] * setup["pp"])
    return estimate_memory(sc.facts, **setup, calibration=cal)


def scenario_edit(sc: Scenario, est, change: str, argv: list[str], cost: str, rank: float, length: int | None = None) -> Edit:
    if sc.rule.any_kv and est.max_concurrency < 1 and est.kv_cache_tokens > 0:
        cost += f"; the pool holds {est.kv_cache_tokens:,} tokens, less than one request of {length or sc.setup['context']:,} (longer prompts are refused)"
    return Edit(change=change, argv=argv, starts=starts(est, sc.rule), kv_cache_tokens=est.kv_cache_tokens,
                max_concurrency=est.max_concurrency, max_model_len=length or sc.setup["context"], cost=cost, cost_rank=round(rank, 3))


def utilization_edit(sc: Scenario, base) -> Edit | None:
    """The nearest gpu_memory_utilization that starts: up when KV is short, down when room outside the budget is."""
    current = sc.setup["memory_fraction"]
    kv_short = base.kv_cache_bytes_per_gpu <= 0 or base.max_concurrency < 1
    direction = 1 if kv_short else -1
    u = round(current + direction * STEP, 2)
    lowest = MIN_UTILIZATION  # docfix16: under a free-memory ceiling (V1's start check) the search goes down to free / total
    if sc.rule.max_budget_bytes is not None and base.gpu_memory_bytes:
        lowest = min(lowest, int(sc.rule.max_budget_bytes / base.gpu_memory_bytes * 100) / 100)
    while max(lowest, STEP) <= u <= MAX_UTILIZATION:
        est = _estimate(sc, {"memory_fraction": u})
        if starts(est, sc.rule):
            if direction > 0:
                cost, rank = f"uses {u - current:.2f} more of the GPU", 0.05 + 2 * max(0.0, u - 0.90)
                if u > 0.90:
                    cost += f"; leaves {1 - u:.2f} of the GPU for CUDA graphs, the CUDA context and other processes"
            else:
                lost = 1 - est.kv_cache_tokens / base.kv_cache_tokens if base.kv_cache_tokens else 0.0
                cost, rank = f"KV cache {max(lost, 0):.0%} smaller", 0.05 + 0.5 * max(lost, 0)
            return scenario_edit(sc, est, f"--gpu-memory-utilization {u:.2f}", ["--gpu-memory-utilization", f"{u:.2f}"], cost, rank)
        u = round(u + direction * STEP, 2)
    return None


def max_model_len_edit(sc: Scenario, base) -> Edit | None:
    """The longest max_model_len that starts (rounded down to 256 tokens), when KV is what is short."""
    current = sc.setup["context"]
    if base.max_concurrency >= max(1, sc.rule.min_slots) and base.kv_cache_bytes_per_gpu > 0:
        return None
    lo, hi = 0, current - 1  # lo: longest known to start (0: none)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts(_estimate(sc, {"context": mid}), sc.rule):
            lo = mid
        else:
            hi = mid - 1
    if lo <= 0:
        return None
    length = lo - lo % ROUND_TOKENS if lo >= 4 * ROUND_TOKENS else lo
    est = _estimate(sc, {"context": length})
    lost = 1 - length / current
    return scenario_edit(sc, est, f"--max-model-len {length}", ["--max-model-len", str(length)],
                 f"context {current:,} -> {length:,} tokens ({lost:.0%} shorter)", lost, length=length)


def kv_fp8_edit(sc: Scenario) -> Edit | None:
    if sc.setup.get("kv_cache_dtype", "auto") != "auto":
        return None
    est = _estimate(sc, {"kv_cache_dtype": "fp8"})
    return scenario_edit(sc, est, "--kv-cache-dtype fp8", ["--kv-cache-dtype", "fp8"], "KV cache in FP8 (per-tensor scales: a small accuracy cost)", 0.15)


def eager_rule(rule: StartRule, memory) -> StartRule:
    """The start rule without CUDA graphs: a failed capture's extra room is no longer needed (the pool is gone)."""
    pool = rule.graph_pool_bytes or memory.cuda_graph_bytes
    return StartRule(min_room_bytes=max(rule.min_room_bytes - pool, 0.0), max_budget_bytes=rule.max_budget_bytes,
                     any_kv=rule.any_kv, min_slots=rule.min_slots)


def eager_edit(sc: Scenario) -> Edit | None:
    """--enforce-eager: no CUDA-graph pool, inside or outside the budget."""
    memory = sc.setup["memory"]
    if not memory.cuda_graph_bytes and not (sc.calibration is not None and sc.calibration.cuda_graph_bytes):
        return None
    cal = sc.calibration.model_copy(update={"cuda_graph_bytes": 0}) if sc.calibration is not None and sc.calibration.cuda_graph_bytes else None
    rule = eager_rule(sc.rule, memory)
    eager = Scenario(sc.facts, {**sc.setup, "memory": memory.model_copy(update={"cuda_graph_bytes": 0})}, sc.calibration, rule)
    est = _estimate(eager, {}, calibration=cal)
    return scenario_edit(eager, est, "--enforce-eager", ["--enforce-eager"], "decode steps without CUDA graphs (slower at small batches)", 0.3)


def max_num_seqs_edit(sc: Scenario) -> Edit | None:
    current = sc.setup.get("max_num_seqs") or 256
    for seqs in (128, 64, 32, 16):
        if seqs >= current:
            continue
        est = _estimate(sc, {"max_num_seqs": seqs})
        if starts(est, sc.rule):
            return scenario_edit(sc, est, f"--max-num-seqs {seqs}", ["--max-num-seqs", str(seqs)], f"at most {seqs} requests in a batch (throughput)", 0.2)
    return None


def lora_edit(sc: Scenario) -> Edit | None:
    """Fewer LoRA slots on the GPU (adapters beyond them wait in host memory: --max-cpu-loras)."""
    slots = sc.setup.get("lora_slots", 0)
    if slots <= 1:
        return None
    est = _estimate(sc, {"lora_slots": 1})
    return scenario_edit(sc, est, "--max-loras 1", ["--max-loras", "1"], f"1 adapter per batch instead of {slots} (others are swapped in)", 0.25)


def tp_edit(sc: Scenario) -> Edit | None:
    tp = sc.setup["tp"]
    heads = getattr(sc.facts, "num_attention_heads", 0) or 0
    if tp >= 8 or not heads or heads % (2 * tp):
        return None
    est = _estimate(sc, {"tp": 2 * tp})
    return scenario_edit(sc, est, f"--tensor-parallel-size {2 * tp}", ["--tensor-parallel-size", str(2 * tp)], f"{2 * tp} GPUs per replica instead of {tp}", 0.6)


_SETUP_KEYS = {"--max-model-len": ("context", int), "--gpu-memory-utilization": ("memory_fraction", float),
               "--kv-cache-dtype": ("kv_cache_dtype", str), "--max-num-seqs": ("max_num_seqs", int), "--tensor-parallel-size": ("tp", int),
               "--max-loras": ("lora_slots", int), "--max-lora-rank": ("lora_rank", int)}


def tried_edit(sc: Scenario, argv: list[str]) -> Edit:
    """The user's own edit (vLLM flags, e.g. ``['--max-model-len', '20000']``) run through the memory model."""
    from ..errors import RequestError

    changes, eager, i = {}, False, 0
    while i < len(argv):
        flag = argv[i].split("=", 1)[0].replace("_", "-")
        if flag == "--enforce-eager":
            eager, i = True, i + 1
            continue
        if flag not in _SETUP_KEYS:
            raise RequestError(f"--try-flags: {flag[:40]!r} is not one of {', '.join(sorted(_SETUP_KEYS))}, --enforce-eager.")
        value = argv[i].split("=", 1)[1] if "=" in argv[i] else (argv[i + 1] if i + 1 < len(argv) else "")
        i += 1 if "=" in argv[i] else 2
        key, convert = _SETUP_KEYS[flag]
        try:
            changes[key] = convert(value) if key != "kv_cache_dtype" else ("fp8" if value.startswith("fp8") else "auto")
        except ValueError:
            raise RequestError(f"--try-flags: {flag} {value[:40]!r} is not a {convert.__name__}.") from None
    base_sc = Scenario(sc.facts, {**sc.setup, **changes}, sc.calibration, sc.rule)
    if eager:
        eager_sc = Scenario(sc.facts, {**base_sc.setup, "memory": base_sc.setup["memory"].model_copy(update={"cuda_graph_bytes": 0})},
                            sc.calibration, eager_rule(sc.rule, sc.setup["memory"]))
        cal = sc.calibration.model_copy(update={"cuda_graph_bytes": 0}) if sc.calibration is not None and sc.calibration.cuda_graph_bytes else None
        est, base_sc = _estimate(eager_sc, {}, calibration=cal), eager_sc
    else:
        est = _estimate(base_sc, {})
    return scenario_edit(base_sc, est, " ".join(argv), list(argv), "the edit asked for (--try-flags)", 0.0, length=base_sc.setup["context"])


def rank_edits(sc: Scenario, base) -> list[Edit]:
    """Every candidate edit, those that start first, then by cost."""
    found = [
        utilization_edit(sc, base), max_model_len_edit(sc, base), kv_fp8_edit(sc), max_num_seqs_edit(sc), eager_edit(sc), lora_edit(sc),
        tp_edit(sc),
    ]
    edits = [e for e in found if e is not None]
    return sorted(edits, key=edit_order)
