"""The simulate stage: a discrete-event simulation of one replica's continuous batching.

    >>> from infer_advisor.simulate import simulate, SchedulerConfig, Workload, LengthSpec
    >>> res = simulate(step_model, Workload(input_tokens=LengthSpec(mean=2000), output_tokens=LengthSpec(mean=300),
    ...                rate=4.0), SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=400_000))
    >>> res.ttft_s.p90, res.itl_s.p99, res.output_tokens_per_s

Kept apart, as in Vidur: the step-time model (``estimate.step_time``) says how long a step takes; the scheduler
(``simulate.scheduler``) decides what each step holds; the capacity search (``capacity``) drives both from the
outside. A pipeline-parallel replica (a step model with ``pp > 1``) is one scheduler whose step is a pipeline cycle:
the batch cut into micro-batches, each stage doing 1/pp of the work, bounded by the slowest stage (``pipeline.py``).
"""


from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..estimate.step_time import StepModel
from .result import Percentiles, SimulationResult, queue_growing, summarise
from .pipeline import PipelineStep
from .scheduler import run
from .workload import LengthSpec, Request, Workload

__all__ = ["LengthSpec", "Percentiles", "Request", "SchedulerConfig", "SimulationResult", "Workload", "queue_growing", "simulate"]


class SchedulerConfig(BaseModel):
    """The engine's batching limits for one replica."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    max_num_seqs: int = Field(gt=0, le=65536, description="Sequences scheduled at once.")
    max_num_batched_tokens: int = Field(gt=0, le=1_048_576, description="Token budget of one step (prefill chunk + decodes).")
    kv_capacity_tokens: int = Field(gt=0, description="KV-cache capacity in tokens (from the memory model).")
    block_size: int = Field(default=16, gt=0, le=4096)
    lanes: int = Field(default=1, gt=0, le=64, description="Pipeline stages: 1, or the step model's own pp (which is what is used).")
    kv_admission: Literal["on_demand", "on_demand_cached", "reserve"] = Field(
        default="on_demand",
        description="on_demand: KV taken as tokens are scheduled, newest request preempted when it runs out (vLLM, SGLang); "
        "on_demand_cached: the same, but a preempted request's computed KV stays in the prefix cache until evicted (vLLM V1); "
        "reserve: a request is admitted only with room for its whole prompt and output (TensorRT-LLM, TGI, llama.cpp slots).",
    )


def simulate(
    step: StepModel,
    workload: Workload,
    config: SchedulerConfig,
    *,
    requests: int = 400,
    warmup_fraction: float = 0.1,
    seed: int = 0,
) -> SimulationResult:
    """Simulate ``requests`` requests of ``workload`` on one replica; statistics leave out the first ``warmup_fraction``.

    TTFT and end-to-end times include the step model's per-request host time (``request_overhead_s``), spent before
    the request is queued."""
    stages = step.pp
    if config.lanes not in (1, stages):
        raise ValueError(f"lanes={config.lanes} but the step model has {stages} pipeline stage(s): the stages come from the step model")
    timed = PipelineStep(step) if stages > 1 else step
    # vLLM V1 keeps `pp` batches in flight, each scheduled with the whole token budget: a cycle carries pp x the budget
    budget = config.max_num_batched_tokens * stages
    closed = workload.arrival == "closed"
    reqs = workload.requests(requests, seed)
    log = run(timed, reqs, max_num_seqs=config.max_num_seqs, max_num_batched_tokens=budget,
              kv_capacity_tokens=config.kv_capacity_tokens, block_size=config.block_size,
              closed_loop_clients=max(1, workload.concurrency or 1) if closed else None,
              reserve_full=config.kv_admission == "reserve",
              keep_cache=config.kv_admission == "on_demand_cached", request_overhead=step.request_overhead_s)
    offered = workload.rate if workload.arrival == "poisson" else None
    res = summarise(log, warmup=int(len(reqs) * warmup_fraction), offered_rate=offered)
    if stages > 1:
        res = res.model_copy(update={"notes": [*res.notes, f"pipeline parallel: {stages} stages, the batch cut into up to "
                                               f"{stages} micro-batches per cycle (simulate/pipeline.py)"]})
    return res
