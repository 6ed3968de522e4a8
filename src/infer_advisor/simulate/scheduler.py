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

:func:`run` is the loop; :class:`_Scheduler` holds its state and one method per part of a step: admission
(``take_arrivals``, ``_admit``), preemption (``preempt_for_decodes``), chunked-prefill packing (``pack``) and
accounting (``account_step``, ``account_decode_stretch``, ``finish_decodes``, ``advance_prefills``).
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from ..estimate.step_time import StepModel
from .workload import Request


@dataclass(eq=False)  # identity: ``list.remove`` of a running request compared every field of every other (half the fit's time)
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
    cached: int = 0  # keep_cache: tokens computed before its preemption, still in the prefix cache unless evicted


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
    request_overhead: float = 0.0  # host seconds per request before it was queued: in TTFT and end-to-end


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
    keep_cache: bool = False,
    max_steps: int = 2_000_000,
    request_overhead: float = 0.0,
) -> RunLog:
    """Simulate ``requests`` (open loop: their arrival times; closed loop: ``closed_loop_clients`` at a time).

    ``reserve_full``: admit a request only when KV room for its whole prompt and output is free, and keep it
    reserved (TensorRT-LLM's GUARANTEED_NO_EVICT, TGI, llama.cpp slots): nothing is ever preempted. Otherwise KV
    is taken as tokens are scheduled and the newest request is preempted when decodes run out of room (vLLM, SGLang).

    ``keep_cache``: a preempted request's computed tokens stay in the prefix cache (vLLM V1 with prefix caching, its
    default: ``kv_cache_manager.free`` returns the blocks to the free queue with their hashes, tail blocks first, and
    the re-admitted request finds them with ``get_computed_blocks``); other requests' allocations evict them least
    recently freed first, so at re-admission the request recomputes only what the free room no longer holds.

    ``request_overhead``: seconds of host work per request before the scheduler sees it (HTTP, tokenisation): an
    request is queued that long after it is sent (open loop: its arrival; closed loop: its client's previous request
    finishing); a request's ``arrival`` is when it was queued, and the log keeps the overhead for
    :func:`.result.summarise` to add to TTFT and end-to-end. (Closed-loop clients of equal requests stay in step on
    a real server because of it: the one that finished first is still in HTTP when the next step starts.)
    """
    reqs = [_Req(i, r.arrival + request_overhead, r.input_tokens, r.output_tokens) for i, r in enumerate(requests)]  # open loop
    log = RunLog(requests=reqs, request_overhead=request_overhead)
    if not reqs:
        return log
    s = _Scheduler(step, reqs, log, max_num_seqs=max_num_seqs, budget_max=max(max_num_batched_tokens, 1),
                   capacity=kv_capacity_tokens, frag=(block_size - 1) / 2.0, closed_loop=closed_loop_clients,
                   reserve_full=reserve_full, overhead=request_overhead, keep_cache=keep_cache)
    s.start(closed_loop_clients)
    # the loop runs millions of times per sizing search: its methods are looked up once
    take_arrivals, preempt, pack, account_step = s.take_arrivals, s.preempt_for_decodes, s.pack, s.account_step
    finish_decodes, advance_prefills = s.finish_decodes, s.advance_prefills
    while True:
        take_arrivals()
        if not s.running_order and not s.waiting:
            if s.next_arrival() is not None:
                s.t = max(s.t, s.next_arrival())
                continue
            break
        if s.j >= max_steps:
            log.aborted = f"stopped after {max_steps} steps"
            break
        if s.prefilling and s.prefill_stretch(max_steps):
            continue
        chunks, kv_used = pack(preempt())
        if log.aborted:
            break
        if not s.n_dec and not chunks:
            if s.next_arrival() is not None:
                s.t = max(s.t, s.next_arrival())
                continue
            log.aborted = "no request can be scheduled (KV cache too small for the next request)"
            break
        if chunks:
            account_step(chunks, kv_used)
        else:
            s.account_decode_stretch(kv_used)
        finish_decodes()
        advance_prefills(chunks)
        s.j += 1
    log.end_time = s.t
    # tokens produced by decodes are implied: a finished request produced its whole output
    return log


class _Scheduler:
    """The loop's state: queues, running sums of the decoding requests, the clock (``t``) and the step index (``j``).

    Decoding requests are kept as running sums: the KV context of all of them at step ``j`` is
    ``dec_sum + n_dec * j``, so a step costs O(log n) whatever the batch size.
    """

    def __init__(self, step: StepModel, reqs: list[_Req], log: RunLog, *, max_num_seqs: int, budget_max: int,
                 capacity: int, frag: float, closed_loop: int | None, reserve_full: bool, overhead: float = 0.0,
                 keep_cache: bool = False) -> None:
        self.step, self.reqs, self.log = step, reqs, log
        self.max_num_seqs, self.budget_max, self.capacity = max_num_seqs, budget_max, capacity
        self.frag = frag  # mean unused tail of a request's last KV block (none with per-token cells, block 1)
        self.closed_loop, self.reserve_full, self.keep_cache = closed_loop, reserve_full, keep_cache
        self.arrivals = deque(sorted(reqs, key=lambda r: r.arrival)) if closed_loop is None else deque(reqs)
        self.overhead = overhead
        self.sent: deque[_Req] = deque()  # closed loop: sent by a client, queued after the overhead (in send order)
        self.waiting: deque[_Req] = deque()
        self.prefilling: list[_Req] = []
        self.running_order: list[_Req] = []  # admission order of running requests (prefill or decode)
        self.decode_heap: list[tuple[int, int]] = []  # (finish_step, idx)
        self.n_dec = 0
        self.dec_sum = 0  # sum of (decode_base - decode_start) over decoding requests
        self.kv_prefill = 0  # KV tokens held by requests in prefill
        self.reserved = 0  # reserve_full: KV tokens reserved by running requests (prompt + output each)
        self.t = 0.0
        self.j = 0

    # ---------------------------------------------------------------- admission
    def start(self, clients: int | None) -> None:
        if clients is not None:
            for _ in range(min(clients, len(self.arrivals))):
                r = self.arrivals.popleft()
                r.arrival = self.overhead
                self.sent.append(r)

    def take_arrivals(self) -> None:
        src = self.arrivals if self.closed_loop is None else self.sent
        while src and src[0].arrival <= self.t:
            self.waiting.append(src.popleft())

    def next_arrival(self) -> float | None:
        """When the next request not yet queued will be (open loop: its arrival; closed loop: sent + overhead)."""
        src = self.arrivals if self.closed_loop is None else self.sent
        return src[0].arrival if src else None

    def _next_client(self) -> None:
        """Closed loop: a finished request's client sends its next one now."""
        if self.closed_loop is not None and self.arrivals:
            nxt = self.arrivals.popleft()
            nxt.arrival = self.t + self.overhead
            self.sent.append(nxt)

    def _admit(self, chunks: list[tuple[_Req, int]], budget: int, kv_used: float) -> tuple[int, float]:
        """Waiting requests, first come first served, while the budget, ``max_num_seqs`` and the KV cache allow
        (the head of the queue blocks the rest)."""
        while self.waiting and budget > 0 and len(self.running_order) < self.max_num_seqs:
            r = self.waiting[0]
            hit = self._cache_hit(r, kv_used)
            c = min(r.prompt - hit, budget)
            need = (self.reserved + r.prompt + r.output - r.produced) if self.reserve_full else (kv_used + hit + c)
            if need + self.frag * (len(self.running_order) + 1) > self.capacity:
                if not self.running_order and r.prompt + 1 > self.capacity:
                    self.log.aborted = f"a request of {r.prompt} prompt tokens does not fit in a KV cache of {self.capacity} tokens"
                break
            self.waiting.popleft()
            if self.reserve_full:
                r.kv_reserved = r.prompt + r.output - r.produced
                self.reserved += r.kv_reserved
            r.state = "prefill"
            r.done, r.cached = hit, 0
            self.kv_prefill += hit
            kv_used += hit
            r.admitted = self.t if r.admitted is None else r.admitted
            self.prefilling.append(r)
            self.running_order.append(r)
            chunks.append((r, c))
            budget -= c
            kv_used += c
        return budget, kv_used

    def _cache_hit(self, r: _Req, kv_used: float) -> int:
        """keep_cache: the tokens of a re-admitted request still cached, at most the free room (the rest of its freed
        blocks were taken by other requests' allocations since it was preempted)."""
        if not r.cached:
            return 0
        free = self.capacity - kv_used - self.frag * (len(self.running_order) + 1)
        return max(0, min(r.cached, r.prompt - 1, int(free) - 1))

    # ---------------------------------------------------------------- preemption
    def _release(self, r: _Req) -> None:
        self.reserved -= r.kv_reserved
        r.kv_reserved = 0
        if r.state == "prefill":
            self.kv_prefill -= r.done
            self.prefilling.remove(r)
        elif r.state == "decode":
            self.n_dec -= 1
            self.dec_sum -= r.decode_base - r.decode_start
        self.running_order.remove(r)

    def preempt_for_decodes(self) -> int:
        """Decodes need one more KV slot each: preempt the newest running request (recomputed later: its prompt and
        the tokens it produced are prefilled again) until they fit. Returns the token budget left for prefill."""
        if self.reserve_full or not self.n_dec:
            return self.budget_max - self.n_dec
        kv_decode = self.dec_sum + self.n_dec * self.j
        while (not self.reserve_full and self.n_dec
               and kv_decode + self.n_dec + self.kv_prefill + self.frag * len(self.running_order) > self.capacity
               and len(self.running_order) > 1):
            victim = self.running_order[-1]
            was_decode = victim.state == "decode"
            computed = victim.prompt + victim.produced if was_decode else victim.done
            self._release(victim)
            if self.keep_cache:
                victim.cached = computed
            victim.prompt = victim.prompt + victim.produced if was_decode else victim.prompt
            victim.output -= victim.produced if was_decode else 0
            victim.produced = 0
            victim.done = 0
            victim.state = "waiting"
            victim.preemptions += 1
            self.log.preemptions += 1
            self.waiting.appendleft(victim)
            kv_decode = self.dec_sum + self.n_dec * self.j
        return self.budget_max - self.n_dec

    # ---------------------------------------------------------------- chunked-prefill packing
    def pack(self, budget: int) -> tuple[list[tuple[_Req, int]], float]:
        """This step's prefill chunks: requests part-way through their prompt first, ``min(left, budget)``, then newly
        admitted ones; and the KV tokens in use once they are scheduled."""
        chunks: list[tuple[_Req, int]] = []
        scheduled = 0
        for r in self.prefilling:
            if budget <= 0:
                break
            c = min(r.prompt - r.done, budget)
            chunks.append((r, c))
            budget -= c
            scheduled += c
        kv_used = self.dec_sum + self.n_dec * self.j + self.n_dec + self.kv_prefill + scheduled
        if self.waiting and budget > 0:
            budget, kv_used = self._admit(chunks, budget, kv_used)
        return chunks, kv_used

    # ---------------------------------------------------------------- accounting
    def _record(self, dt: float, decodes: int, rows: int, count: int, kv: int) -> None:
        log = self.log
        log.step_starts.append(self.t)
        log.step_durations.append(dt)
        log.step_decodes.append(decodes)
        log.step_rows.append(rows)
        log.step_counts.append(count)
        if kv > log.max_kv_tokens:
            log.max_kv_tokens = kv

    def account_decode_stretch(self, kv_used: float) -> None:
        """A stretch of decode-only steps: nothing changes the batch until the next finish, the next arrival
        (admissible or not, it is looked at a step later at most) or the KV cache filling up. The step time is
        linear in the KV context, which grows by n_dec per step, so k steps take k x the mean of the first and last."""
        n_dec, j = self.n_dec, self.j
        k = self.decode_heap[0][0] - j + 1 if self.decode_heap else 1
        dt0 = self.step.decode_seconds(n_dec, float(self.dec_sum + n_dec * j))
        nxt = self.next_arrival()
        if nxt is not None and len(self.running_order) < self.max_num_seqs:
            k = min(k, max(1, int((nxt - self.t) / dt0) + 1))
        if not self.reserve_full:
            room = self.capacity - (self.dec_sum + n_dec * j + self.kv_prefill + self.frag * len(self.running_order))
            k = max(1, min(k, int(room // max(n_dec, 1))))
        dt1 = self.step.decode_seconds(n_dec, float(self.dec_sum + n_dec * (j + k - 1))) if k > 1 else dt0
        dt = (dt0 + dt1) / 2
        self._record(dt, n_dec * k, n_dec, k, int(kv_used + n_dec * (k - 1)))
        self.t += dt * k
        self.j += k - 1

    def prefill_stretch(self, max_steps: int) -> int:
        """Steps in which the first prompt in prefill takes the whole budget left by the decodes (the others wait):
        no admission (no budget left), no preemption, no decode finishing, the prompt not completing. Each is the step the loop would run
        (the same step-time call, record and clock in the same order) without its admission, packing and finishing
        passes; arrivals are queued when the stretch ends (nothing in it looks at the queue). Returns the steps run."""
        r = self.prefilling[0]
        n_dec, heap, step, done = self.n_dec, self.decode_heap, self.step, 0
        budget = self.budget_max - n_dec
        frag = self.frag * len(self.running_order)
        while self.j < max_steps and budget > 0 and r.prompt - r.done > budget and not (heap and heap[0][0] <= self.j):
            kv_decode = self.dec_sum + n_dec * self.j
            if (not self.reserve_full and n_dec and kv_decode + n_dec + self.kv_prefill + frag > self.capacity
                    and len(self.running_order) > 1):
                break  # preempt_for_decodes would act
            kv_used = kv_decode + n_dec + self.kv_prefill + budget
            pairs = 0
            pairs += budget * (r.done + (budget + 1) / 2)  # as account_step sums it
            dt = step.step_seconds(n_dec, float(kv_decode), budget, pairs, 1, 0)
            self._record(dt, n_dec, n_dec + budget, 1, int(kv_used))
            self.t += dt
            r.done += budget
            self.kv_prefill += budget
            self.j += 1
            done += 1
        return done

    def account_step(self, chunks: list[tuple[_Req, int]], kv_used: float) -> None:
        """One step with prefill chunks (and the decodes): its time from the step model."""
        p_tokens = completes = 0
        pairs = 0  # summed in chunk order, as sum() would
        for r, c in chunks:
            p_tokens += c
            pairs += c * (r.done + (c + 1) / 2)
            completes += r.done + c >= r.prompt
        n_dec = self.n_dec
        dt = self.step.step_seconds(n_dec, float(self.dec_sum + n_dec * self.j), p_tokens, pairs, len(chunks), completes)
        self._record(dt, n_dec, n_dec + p_tokens, 1, int(kv_used))
        self.t += dt

    def finish_decodes(self) -> None:
        """Decodes: one token each; those that reach their length finish now."""
        heap = self.decode_heap
        if not heap or heap[0][0] > self.j:
            return
        while self.decode_heap and self.decode_heap[0][0] <= self.j:
            _, idx = heapq.heappop(self.decode_heap)
            r = self.reqs[idx]
            if r.state != "decode" or r.finish_step != self.j:
                continue  # preempted since it was pushed
            self._release(r)
            r.produced = r.output
            r.state = "finished"
            r.finish = self.t
            self._next_client()

    def advance_prefills(self, chunks: list[tuple[_Req, int]]) -> None:
        """Prefill chunks: a prompt done gives its first token; then it decodes, or finishes if that was its last."""
        for r, c in chunks:
            r.done += c
            self.kv_prefill += c
            if r.done < r.prompt:
                continue
            self.kv_prefill -= r.done
            self.prefilling.remove(r)
            r.produced += 1
            if r.first_token is None:
                r.first_token = self.t
            if r.produced >= r.output:
                self.running_order.remove(r)
                self.reserved -= r.kv_reserved
                r.kv_reserved = 0
                r.state = "finished"
                r.finish = self.t
                self._next_client()
                continue
            r.state = "decode"
            r.decode_start = self.j + 1
            r.decode_base = r.prompt + 1
            r.finish_step = self.j + (r.output - r.produced)
            self.n_dec += 1
            self.dec_sum += r.decode_base - r.decode_start
            heapq.heappush(self.decode_heap, (r.finish_step, r.idx))
