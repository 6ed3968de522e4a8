"""A continuous-batching scheduler (vLLM V1 style) driven by the step-time model: the discrete-event loop.

Each step, in this order (vLLM's V1 scheduler: running requests first, then new ones, one token budget):

1. every decoding request gets one token;
2. requests part-way through their prompt get the next chunk, ``min(left, budget)``;
3. waiting requests are admitted first come, first served while the budget, ``max_num_seqs`` and the KV cache
   allow (a request needs KV room for the tokens it holds; the head of the queue blocks the rest);
4. if the decodes' new tokens do not fit in the KV cache, the most recently admitted running request is
   preempted and recomputed later (its prompt and the tokens it produced are prefilled again).

The step lasts ``step_model.seconds(shape)``; tokens appear at its end. Decoding requests are kept as running
sums (their KV context grows by one per step), so a step costs O(log n) whatever the batch size.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from ..estimate.step_time import StepModel
from .workload import Request


@dataclass
class _Req:
    idx: int
    arrival: float
    prompt: int  # tokens to prefill (grows to prompt + produced on recompute)
    output: int
    produced: int = 0  # tokens produced so far
    done: int = 0  # prompt tokens prefilled so far
    first_token: float | None = None
    finish: float | None = None
    admitted: float | None = None
    state: str = "waiting"  # waiting, prefill, decode, finished
    decode_start: int = 0  # step index of its first decode step
    decode_base: int = 0  # KV context at decode_start
    finish_step: int = 0
    preemptions: int = 0
    kv_reserved: int = 0


@dataclass
class RunLog:
    """What the loop records; :mod:`.result` turns it into percentiles."""

    requests: list[_Req]
    step_durations: list[float] = field(default_factory=list)
    step_decodes: list[int] = field(default_factory=list)
    step_starts: list[float] = field(default_factory=list)
    step_rows: list[int] = field(default_factory=list)
    step_counts: list[int] = field(default_factory=list)  # steps each entry stands for (a decode-only stretch: several)
    preemptions: int = 0
    max_kv_tokens: int = 0
    aborted: str | None = None
    end_time: float = 0.0


def run(
    step: StepModel,
    requests: list[Request],
    *,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    kv_capacity_tokens: int,
    block_size: int = 16,
    closed_loop_clients: int | None = None,
    reserve_full: bool = False,
    max_steps: int = 2_000_000,
) -> RunLog:
    """Simulate ``requests`` (open loop: their arrival times; closed loop: ``closed_loop_clients`` at a time).

    ``reserve_full``: admit a request only when KV room for its whole prompt and output is free, and keep it
    reserved (TensorRT-LLM's GUARANTEED_NO_EVICT, TGI, llama.cpp slots): nothing is ever preempted. Otherwise KV
    is taken as tokens are scheduled and the newest request is preempted when decodes run out of room (vLLM, SGLang).
    """
    reqs = [_Req(i, r.arrival, r.input_tokens, r.output_tokens) for i, r in enumerate(requests)]
    log = RunLog(requests=reqs)
    if not reqs:
        return log
    capacity = kv_capacity_tokens
    budget_max = max(max_num_batched_tokens, 1)
    frag = (block_size - 1) / 2.0  # mean unused tail of a request's last KV block (none with per-token cells, block 1)

    arrivals = deque(sorted(reqs, key=lambda r: r.arrival)) if closed_loop_clients is None else deque(reqs)
    waiting: deque[_Req] = deque()
    prefilling: list[_Req] = []
    running_order: list[_Req] = []  # admission order of running requests (prefill or decode)
    decode_heap: list[tuple[int, int]] = []  # (finish_step, idx)
    n_dec = 0
    dec_sum = 0  # sum of (decode_base - decode_start) over decoding requests: context at step j is dec_sum + n_dec * j
    kv_prefill = 0  # KV tokens held by requests in prefill
    reserved = 0  # reserve_full: KV tokens reserved by running requests (prompt + output each)
    t = 0.0
    j = 0

    if closed_loop_clients is not None:
        for _ in range(min(closed_loop_clients, len(arrivals))):
            r = arrivals.popleft()
            r.arrival = 0.0
            waiting.append(r)

    def release(r: _Req) -> None:
        nonlocal kv_prefill, n_dec, dec_sum, reserved
        reserved -= r.kv_reserved
        r.kv_reserved = 0
        if r.state == "prefill":
            kv_prefill -= r.done
            prefilling.remove(r)
        elif r.state == "decode":
            n_dec -= 1
            dec_sum -= r.decode_base - r.decode_start
        running_order.remove(r)

    while True:
        if closed_loop_clients is None:
            while arrivals and arrivals[0].arrival <= t:
                waiting.append(arrivals.popleft())
        running = len(running_order)
        if not running and not waiting:
            if closed_loop_clients is None and arrivals:
                t = arrivals[0].arrival
                continue
            break
        if j >= max_steps:
            log.aborted = f"stopped after {max_steps} steps"
            break

        budget = budget_max - n_dec
        kv_decode = dec_sum + n_dec * j
        # decodes need one more KV slot each: preempt the newest running request until they fit
        while (not reserve_full and n_dec and kv_decode + n_dec + kv_prefill + frag * len(running_order) > capacity
               and len(running_order) > 1):
            victim = running_order[-1]
            was_decode = victim.state == "decode"
            release(victim)
            victim.prompt = victim.prompt + victim.produced if was_decode else victim.prompt
            victim.output -= victim.produced if was_decode else 0
            victim.produced = 0
            victim.done = 0
            victim.state = "waiting"
            victim.preemptions += 1
            log.preemptions += 1
            waiting.appendleft(victim)
            budget = budget_max - n_dec
            kv_decode = dec_sum + n_dec * j
        chunks: list[tuple[_Req, int]] = []
        for r in prefilling:
            if budget <= 0:
                break
            c = min(r.prompt - r.done, budget)
            chunks.append((r, c))
            budget -= c
        kv_used = kv_decode + n_dec + kv_prefill + sum(c for _, c in chunks)
        while waiting and budget > 0 and len(running_order) < max_num_seqs:
            r = waiting[0]
            c = min(r.prompt, budget)
            need = (reserved + r.prompt + r.output - r.produced) if reserve_full else (kv_used + c)
            if need + frag * (len(running_order) + 1) > capacity:
                if not running_order and r.prompt + 1 > capacity:
                    log.aborted = f"a request of {r.prompt} prompt tokens does not fit in a KV cache of {capacity} tokens"
                break
            waiting.popleft()
            if reserve_full:
                r.kv_reserved = r.prompt + r.output - r.produced
                reserved += r.kv_reserved
            r.state = "prefill"
            r.admitted = t if r.admitted is None else r.admitted
            prefilling.append(r)
            running_order.append(r)
            chunks.append((r, c))
            budget -= c
            kv_used += c
        if log.aborted:
            break
        if not n_dec and not chunks:
            if closed_loop_clients is None and arrivals:
                t = max(t, arrivals[0].arrival)
                continue
            log.aborted = "no request can be scheduled (KV cache too small for the next request)"
            break

        p_tokens = sum(c for _, c in chunks)
        if not chunks:
            # A stretch of decode-only steps: nothing changes the batch until the next finish, the next arrival
            # (admissible or not, it is looked at a step later at most) or the KV cache filling up. The step time is
            # linear in the KV context, which grows by n_dec per step, so k steps take k x the mean of the first and last.
            k = decode_heap[0][0] - j + 1 if decode_heap else 1
            dt0 = step.decode_seconds(n_dec, float(dec_sum + n_dec * j))
            if closed_loop_clients is None and arrivals and (len(running_order) < max_num_seqs):
                k = min(k, max(1, int((arrivals[0].arrival - t) / dt0) + 1))
            if not reserve_full:
                room = capacity - (kv_decode + kv_prefill + frag * len(running_order))
                k = max(1, min(k, int(room // max(n_dec, 1))))
            dt1 = step.decode_seconds(n_dec, float(dec_sum + n_dec * (j + k - 1))) if k > 1 else dt0
            dt = (dt0 + dt1) / 2
            log.step_starts.append(t)
            log.step_durations.append(dt)
            log.step_decodes.append(n_dec * k)
            log.step_rows.append(n_dec)
            log.step_counts.append(k)
            log.max_kv_tokens = max(log.max_kv_tokens, int(kv_used + n_dec * (k - 1)))
            t += dt * k
            j += k - 1
        else:
            pairs = sum(c * (r.done + (c + 1) / 2) for r, c in chunks)
            completes = sum(1 for r, c in chunks if r.done + c >= r.prompt)
            dt = step.step_seconds(n_dec, float(dec_sum + n_dec * j), p_tokens, pairs, len(chunks), completes)
            log.step_starts.append(t)
            log.step_durations.append(dt)
            log.step_decodes.append(n_dec)
            log.step_rows.append(n_dec + p_tokens)
            log.step_counts.append(1)
            log.max_kv_tokens = max(log.max_kv_tokens, int(kv_used))
            t += dt

        # decodes: one token each; those that reach their length finish now
        while decode_heap and decode_heap[0][0] <= j:
            _, idx = heapq.heappop(decode_heap)
            r = reqs[idx]
            if r.state != "decode" or r.finish_step != j:
                continue  # preempted since it was pushed
            release(r)
            r.produced = r.output
            r.state = "finished"
            r.finish = t
            if closed_loop_clients is not None and arrivals:
                nxt = arrivals.popleft()
                nxt.arrival = t
                waiting.append(nxt)
        # prefill chunks
        for r, c in chunks:
            r.done += c
            kv_prefill += c
            if r.done >= r.prompt:
                kv_prefill -= r.done
                prefilling.remove(r)
                r.produced += 1
                if r.first_token is None:
                    r.first_token = t
                if r.produced >= r.output:
                    running_order.remove(r)
                    reserved -= r.kv_reserved
                    r.kv_reserved = 0
                    r.state = "finished"
                    r.finish = t
                    if closed_loop_clients is not None and arrivals:
                        nxt = arrivals.popleft()
                        nxt.arrival = t
                        waiting.append(nxt)
                    continue
                r.state = "decode"
                r.decode_start = j + 1
                r.decode_base = r.prompt + 1
                r.finish_step = j + (r.output - r.produced)
                n_dec += 1
                dec_sum += r.decode_base - r.decode_start
                heapq.heappush(decode_heap, (r.finish_step, r.idx))
        j += 1
    log.end_time = t
    # tokens produced by decodes are implied: a finished request produced its whole output
    return log
