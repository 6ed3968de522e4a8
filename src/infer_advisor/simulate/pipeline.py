"""A pipeline-parallel replica's step: ``pp`` stages, the batch split into micro-batches, the slowest stage and the bubble.

The scheduler (``scheduler.run``) sees one batch per step, as vLLM V1's scheduler does with ``pp`` batches in flight;
:class:`PipelineStep` turns that batch into the time until every sequence in it has its next token:

- the batch is cut into ``m = min(pp, sequences)`` micro-batches: decodes spread evenly, prompt chunks whole (the
  micro-batch that holds them is the heavy one: at least one mean chunk, at least an even share of prompt tokens);
- each stage holds ``layers / pp`` and does 1/pp of every micro-batch's work: ``stage(x) = (gpu seconds of x) / pp``
  from the one step-time model (its ``pp_transfer`` term is the hand-off to the next stage);
- a micro-batch needs its previous token before its next pass, so a cycle lasts at least one pass of the heaviest
  micro-batch through all stages (``pp x stage(heavy)``), and at least the work each stage must do for all of them
  (``sum of stage(micro-batch)``): with fewer sequences than stages, stages idle (the bubble); with one heavy prompt
  chunk, the stage that holds it bounds the cycle (the slowest stage);
- the engine's host work (step overhead, per-sequence cost) is paid once per cycle for every sequence.

With ``pp = 1`` it is the step-time model itself. Each micro-batch may carry its own token budget (vLLM V1 schedules
each in-flight batch with the full ``max_num_batched_tokens``), so the simulator gives a pipelined replica
``pp x`` the budget per cycle: see ``simulate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..estimate.step_time import StepModel


@dataclass
class PipelineStep:
    """The scheduler-facing step of a replica of ``step.pp`` pipeline stages (see the module docstring)."""

    step: StepModel

    @property
    def pp(self) -> int:
        return self.step.pp

    @property
    def profile(self):
        return self.step.profile

    def _host(self, sequences: float) -> float:
        return self.step.step_overhead_s + self.step.per_sequence_s * sequences

    def _stage(self, decode: float, context: float, tokens: float, pairs: float, chunks: int, completes: int,
               window: float | None) -> float:
        """Seconds one stage spends on one micro-batch (the GPU part of a pass, divided over the stages)."""
        d = int(math.ceil(decode)) if decode else 0
        t = int(math.ceil(tokens)) if tokens else 0
        if not d and not t:
            return 0.0
        full = self.step.step_seconds(d, context, t, pairs, chunks, completes, window)
        return max(full - self._host(d + chunks), 0.0) / self.pp

    def step_seconds(self, decode: int, decode_context: float, prefill_tokens: int = 0, prefill_pairs: float = 0.0,
                     chunks: int = 0, completes: int = 0, window_context: float | None = None) -> float:
        """Seconds until every sequence of this batch has passed every stage once (one token each)."""
        if self.pp <= 1:
            return self.step.step_seconds(decode, decode_context, prefill_tokens, prefill_pairs, chunks, completes,
                                          window_context)
        pp = self.pp
        m = max(1, min(pp, decode + chunks))
        share = 1.0 / m
        win = None if window_context is None else window_context * share
        if not prefill_tokens:
            light = self._stage(decode * share, decode_context * share, 0, 0.0, 0, 0, win)
            heavy, others = light, (m - 1) * light
        else:
            heavy_share = min(1.0, max(share, 1.0 / max(chunks, 1)))  # whole chunks: at least one mean chunk
            light_decode = decode * share
            heavy = self._stage(light_decode, decode_context * share, prefill_tokens * heavy_share, prefill_pairs * heavy_share,
                                max(1, math.ceil(chunks * heavy_share)), min(completes, math.ceil(completes * heavy_share)), win)
            rest = 1.0 - heavy_share
            others = 0.0
            if m > 1:
                each = rest / (m - 1)
                others = (m - 1) * self._stage(light_decode, decode_context * share, prefill_tokens * each, prefill_pairs * each,
                                               round(chunks * each), round(completes * each), win)
        cycle = max(pp * heavy, heavy + others)
        return cycle + self._host(decode + chunks)

    def decode_seconds(self, batch: int, context_sum: float) -> float:
        return self.step_seconds(batch, context_sum)
