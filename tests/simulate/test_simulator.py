"""The continuous-batching simulator against cases whose timeline can be written out by hand."""

from __future__ import annotations

import heapq
import json
import random
from dataclasses import dataclass

import pytest

from infer_advisor.errors import RequestError
from infer_advisor.estimate.step_time import build_step_model
from infer_advisor.hardware import lookup_gpu
from infer_advisor.model_facts import resolve_model
from infer_advisor.simulate import LengthSpec, SchedulerConfig, Workload, simulate
from infer_advisor.simulate.scheduler import run
from infer_advisor.simulate.workload import Request

H100 = lookup_gpu("H100-80GB")
MODEL = resolve_model("meta-llama/Llama-3.1-8B", source="catalog")
SM = build_step_model(MODEL, gpu=H100, engine="vllm")
BIG = SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=8192, kv_capacity_tokens=500_000)


def _fixed(i, o, **kw):
    return Workload(input_tokens=LengthSpec(mean=i), output_tokens=LengthSpec(mean=o), **kw)


def test_static_batch_timeline_by_hand():
    b, i, o = 8, 32, 128
    res = simulate(SM, _fixed(i, o, arrival="burst"), BIG, requests=b, warmup_fraction=0)
    prefill = SM.step_seconds(0, 0.0, b * i, b * i * (i + 1) / 2, b, b)
    decode = sum(SM.decode_seconds(b, b * (i + 1 + s)) for s in range(o - 1))
    host = SM.request_overhead_s  # per request before it is queued: the client waits for it too
    assert host > 0
    assert res.ttft_s.mean == pytest.approx(host + prefill, rel=1e-9)
    assert res.e2e_s.mean == pytest.approx(host + prefill + decode, rel=1e-6)
    assert res.tpot_s.mean == pytest.approx(decode / (o - 1), rel=1e-6)
    assert res.preemptions == 0 and res.completed == b


def test_long_prompt_is_prefilled_in_chunks_of_the_budget():
    cfg = BIG.model_copy(update={"max_num_batched_tokens": 4096})
    res = simulate(SM, _fixed(10_000, 2, arrival="burst"), cfg, requests=1, warmup_fraction=0)
    chunks = [(0, 4096), (4096, 4096), (8192, 1808)]
    expected = sum(SM.step_seconds(0, 0.0, c, c * (done + (c + 1) / 2), 1, 1 if done + c == 10_000 else 0) for done, c in chunks)
    assert res.ttft_s.mean == pytest.approx(SM.request_overhead_s + expected, rel=1e-9)


def test_kv_shortage_preempts_on_demand_but_never_when_reserved():
    small = BIG.model_copy(update={"kv_capacity_tokens": 6000})
    w = _fixed(500, 400, arrival="burst")
    on_demand = simulate(SM, w, small, requests=20, warmup_fraction=0)
    reserved = simulate(SM, w, small.model_copy(update={"kv_admission": "reserve"}), requests=20, warmup_fraction=0)
    assert on_demand.preemptions > 0 and on_demand.completed == 20
    assert reserved.preemptions == 0 and reserved.completed == 20
    assert reserved.peak_kv_tokens <= 6000


def test_closed_loop_keeps_the_batch_at_the_concurrency():
    res = simulate(SM, _fixed(100, 400, arrival="closed", concurrency=16), BIG, requests=160, warmup_fraction=0.2)
    assert 14 <= res.mean_batch <= 16
    # Little's law: requests in flight = throughput x time in system
    assert res.requests_per_s * res.e2e_s.mean == pytest.approx(16, rel=0.1)


def test_light_poisson_load_waits_for_nothing_and_overload_saturates():
    light = simulate(SM, _fixed(500, 100, rate=0.5), BIG, requests=200)
    alone = SM.request_overhead_s + SM.step_seconds(0, 0.0, 500, 500 * 501 / 2, 1, 1)
    assert light.ttft_s.p50 == pytest.approx(alone, rel=0.5)
    assert not light.saturated and light.queue_s.p90 < 0.01
    heavy = simulate(SM, _fixed(4000, 300, rate=200), BIG, requests=400)
    assert heavy.saturated and heavy.ttft_s.p90 > 10 * light.ttft_s.p90


SM2 = build_step_model(MODEL, gpu=H100, engine="vllm", pp=2)


def test_a_pipeline_cycle_by_hand_bubble_and_slowest_stage():
    """simulate/pipeline.py: one sequence passes both stages in turn (the bubble: each stage idles half the cycle);
    a full batch is cut into two micro-batches that each stage runs once per cycle; a prompt chunk stays whole, so the
    stage holding it bounds the cycle."""
    from infer_advisor.simulate.pipeline import PipelineStep

    pipe = PipelineStep(SM2)
    host = SM2.step_overhead_s

    def stage(decode, ctx, tokens=0):  # one stage's GPU seconds for one micro-batch
        seqs = decode + (1 if tokens else 0)
        full = SM2.step_seconds(decode, decode * ctx, tokens, tokens * (tokens + 1) / 2, 1 if tokens else 0, 1 if tokens else 0)
        return (full - host - SM2.per_sequence_s * seqs) / 2

    per_seq = SM2.per_sequence_s
    assert pipe.decode_seconds(1, 1000) == pytest.approx(2 * stage(1, 1000) + host + per_seq, rel=1e-9)
    assert pipe.decode_seconds(64, 64 * 1000) == pytest.approx(2 * stage(32, 1000) + host + 64 * per_seq, rel=1e-9)
    mixed = pipe.step_seconds(64, 64 * 1000, 2048, 2048 * 2049 / 2, 1, 1)
    heavy, light = stage(32, 1000, 2048), stage(32, 1000)
    assert mixed == pytest.approx(max(2 * heavy, heavy + light) + host + 65 * per_seq, rel=1e-6)
    assert mixed > pipe.decode_seconds(64, 64 * 1000) + stage(0, 0, 2048)  # the chunk's stage is the slowest


def test_two_pipeline_stages_never_pass_more_than_two_gpus_of_work():
    """Two stages on two GPUs: more than one GPU's decode throughput (each stage holds half the layers), never more
    than two (each stage runs every micro-batch once per cycle)."""
    w = _fixed(200, 200, arrival="closed", concurrency=64)
    one = simulate(SM, w, BIG, requests=256)
    two = simulate(SM2, w, BIG.model_copy(update={"lanes": 2}), requests=256)
    assert one.output_tokens_per_s < two.output_tokens_per_s <= 2 * one.output_tokens_per_s
    with pytest.raises(ValueError, match="pipeline stage"):
        simulate(SM, w, BIG.model_copy(update={"lanes": 2}), requests=8)


def test_trace_file_lengths_and_errors(tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("\n".join(json.dumps({"input_tokens": 100 + k, "output_tokens": 10, "arrival_s": k * 0.5}) for k in range(10)))
    res = simulate(SM, Workload(trace=trace, arrival="trace"), BIG, requests=10, warmup_fraction=0)
    assert res.completed == 10
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input_tokens": "x"}\n')
    with pytest.raises(RequestError, match="line 1"):
        simulate(SM, Workload(trace=bad, arrival="trace"), BIG, requests=1)


def test_named_distribution_keeps_its_mean():
    w = Workload(input_tokens=LengthSpec(mean=2000, distribution="lognormal"), output_tokens=LengthSpec(mean=300, distribution="exponential"),
                 rate=1)
    pairs = w.lengths(4000, seed=3)
    assert sum(i for i, _ in pairs) / len(pairs) == pytest.approx(2000, rel=0.05)
    assert sum(o for _, o in pairs) / len(pairs) == pytest.approx(300, rel=0.05)


def test_reserved_slots_of_exactly_the_request_size_all_run_at_once():
    """llama.cpp: 4 slots of n_ctx/4 cells each, KV = 4 x (prompt + output) exactly, cells of one token (block 1).

    The unused tail of a request's last block is (block - 1) / 2 tokens on average: none with per-token cells.
    Counting block / 2 (0.5 token here) left the 4th request waiting for a slot that was free.
    """
    i, o, seqs = 147, 64, 4
    cfg = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=2048, kv_capacity_tokens=seqs * (i + o), block_size=1,
                          kv_admission="reserve")
    res = simulate(SM, _fixed(i, o, arrival="closed", concurrency=seqs), cfg, requests=40, warmup_fraction=0.25)
    assert res.mean_batch == pytest.approx(seqs, rel=0.05)
    assert res.peak_kv_tokens <= seqs * (i + o)


def test_more_clients_than_slots_wait_for_a_free_slot():
    # llama-server's --parallel 4: six clients, four slots; the other two wait for one to finish
    slots = BIG.model_copy(update={"max_num_seqs": 4, "kv_admission": "reserve"})
    six = simulate(SM, _fixed(100, 200, arrival="closed", concurrency=6), slots, requests=120, warmup_fraction=0.2)
    four = simulate(SM, _fixed(100, 200, arrival="closed", concurrency=4), slots, requests=120, warmup_fraction=0.2)
    assert six.mean_batch <= 4 and six.queue_s.p50 > 0.2 * six.e2e_s.p50
    assert six.requests_per_s == pytest.approx(four.requests_per_s, rel=0.05)  # the slots, not the clients, set the pace
    assert six.ttft_s.mean > four.ttft_s.mean + 0.3 * (six.e2e_s.mean - six.ttft_s.mean) / 2


@dataclass
class _ConstantStep:
    """Every step takes ``seconds`` whatever it holds: the scheduler alone, as a queue."""

    seconds: float
    request_overhead_s: float = 0.02
    pp: int = 1

    def step_seconds(self, decode, decode_context, prefill_tokens=0, prefill_pairs=0.0, chunks=0, completes=0,
                     window_context=None):
        return self.seconds

    def decode_seconds(self, batch, context_sum):
        return self.seconds


def test_reserved_slots_are_an_fcfs_queue_of_c_servers():
    """llama-server's slots (issue 21's H200 knee): a request holds a slot from its prompt step to the step of its last
    token and no longer (llama.cpp releases the slot when the last token is sampled and its deferred task is launched
    in the next update_slots), the per-request host time is spent before it queues, not in a slot, and waiting
    requests take freed slots first come, first served. With constant steps that is exactly an M/D/c queue (Kiefer-
    Wolfowitz recursion, computed here apart), except that a request arriving mid-step starts at the step's end."""
    dt, out, slots, overhead = 0.01, 50, 4, 0.02
    rng = random.Random(3)
    t, reqs = 0.0, []
    for _ in range(3000):  # rho = 6 x 0.5 s / 4 = 0.75: about half the requests wait
        t += rng.expovariate(6.0)
        reqs.append(Request(t, 100, out))
    log = run(_ConstantStep(dt, overhead), reqs, max_num_seqs=slots, max_num_batched_tokens=2048, kv_capacity_tokens=10**7,
              reserve_full=True, request_overhead=overhead)
    free, waited = [0.0] * slots, 0
    for sim, req in zip(log.requests, reqs):
        queued = req.arrival + overhead
        start = max(queued, heapq.heappop(free))
        heapq.heappush(free, start + out * dt)  # service: the prompt step (first token) and out - 1 decode steps
        waited += start > queued
        assert -1e-9 < sim.admitted - start < dt + 1e-9
        assert sim.first_token - sim.admitted == pytest.approx(dt)
        assert sim.finish - sim.admitted == pytest.approx(out * dt)
    assert 0.4 < waited / len(reqs) < 0.6


def test_a_preempted_request_keeps_its_cached_blocks_when_the_engine_keeps_them():
    """vLLM V1 (prefix caching on by default) frees a preempted request's blocks with their hashes: re-admitted, it
    recomputes only what other requests' allocations evicted. Long prompts on a small cache (GPUStack's 8K prompts on
    one RTX 4090, batch 6) then finish far sooner than with V0's recompute from scratch (after batch 6, retrospective)."""
    small = BIG.model_copy(update={"kv_capacity_tokens": 41_000, "max_num_batched_tokens": 2048})
    w = _fixed(8192, 128, arrival="burst")
    recompute = simulate(SM, w, small, requests=30, warmup_fraction=0)
    cached = simulate(SM, w, small.model_copy(update={"kv_admission": "on_demand_cached"}), requests=30, warmup_fraction=0)
    assert recompute.completed == cached.completed == 30
    assert recompute.preemptions > 0
    assert cached.e2e_s.mean < 0.7 * recompute.e2e_s.mean


def test_a_free_fraction_kv_pool_bounds_the_batch():
    """TensorRT-LLM's KV cache is a pool of the memory free after the weights (``reserve-free``), not memory that grows
    with the batch: a 70B FP8 model on one H100 runs the few requests its ~7.5 GB pool holds (batch 6's TensorRT-LLM
    0.15 rows were predicted 2.4-6.1x too fast when the simulator gave it batch x context tokens; retrospective)."""
    from infer_advisor import advise

    kw = dict(model="meta-llama/Meta-Llama-3-70B", model_source="catalog", gpu="H100-80GB", engine="trtllm",
              quantization="fp8", kv_cache_dtype="fp8", tensor_parallel_size=1, input_tokens=128, output_tokens=2048,
              context=2176, engine_version="0.15.0", concurrency=3000, max_num_seqs=2048)
    plan = advise(**kw)
    assert plan.memory.accounting == "reserve-free"
    held = plan.memory.kv_cache_tokens // 2176  # GUARANTEED_NO_EVICT: each request holds its whole prompt + output
    decode_ceiling = held / (plan.memory.weights_bytes_per_gpu / plan.performance.bandwidth_bytes_per_s)
    assert plan.performance.output_tokens_per_s_aggregate < decode_ceiling
