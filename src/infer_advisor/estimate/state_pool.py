"""The full-attention pool an engine keeps next to a separate recurrent-state pool (SGLang's hybrid GDN / Mamba models).

    >>> from infer_advisor.engines.kv_report import kv_report
    >>> state_pool(kv_report("sglang", "0.5.9"), free_bytes=11.85e9, state_bytes=16.1e6)  # about 11.85 / 1.9 GB of tokens
    StatePool(attention_bytes=6247200000.0, states=348)

vLLM pages the Mamba / gated-DeltaNet state in the same pool as the attention KV (estimate/engine_kv.py). SGLang does
not: ``profile_max_num_token`` takes the memory left for the cache, hands the Mamba pool its share
(``handle_max_mamba_cache``) and sizes the token pool ``max_total_num_tokens`` from what remains, at the full-attention
layers' bytes per token alone. From 0.5.4 the share is ``rest x r / (1 + r)`` in whole request states, ``r =
--mamba-full-memory-ratio`` (0.9); 0.5.2-0.5.3 reserve a fixed ``--max-mamba-cache-size`` (512 states unless
``--max-running-requests`` is given). The rule per version, with the source lines read, is
``data/engine_kv_report.yaml`` (``mamba_full_memory_ratio`` / ``mamba_pool_states``).
"""

from __future__ import annotations

from typing import NamedTuple

from ..engines.kv_report import KVReport


class StatePool(NamedTuple):
    attention_bytes: float  # what the token pool gets on one GPU
    states: int  # request states the recurrent-state pool holds (max_mamba_cache_size)


def state_pool(report: KVReport, *, free_bytes: float, state_bytes: float) -> StatePool | None:
    """The split of ``free_bytes`` (the memory left for the cache on one GPU) when the engine keeps whole request states of
    ``state_bytes`` (one sequence, one GPU) in a pool of their own; None where it pages them with the attention KV."""
    if state_bytes <= 0:
        return None
    ratio = report.mamba_full_memory_ratio
    if ratio is not None:  # max_mamba_cache_size = int(rest x r / (1 + r) // mamba_cache_per_req)
        states = int(max(free_bytes, 0.0) * ratio / (1 + ratio) // state_bytes)
    elif report.mamba_pool_states:
        states = report.mamba_pool_states
    else:
        return None
    return StatePool(max(free_bytes - states * state_bytes, 0.0), states)


def apart_from_states(report: KVReport, kv_space: float, state_bytes: float, per_seq_bytes: float) -> tuple[float, float, int | None]:
    """(token-pool bytes, bytes one max-length request takes in it, states held) for the plan's fit: unchanged (None
    states) where the engine pages the states with the attention KV."""
    pool = state_pool(report, free_bytes=kv_space, state_bytes=state_bytes)
    if pool is None:
        return kv_space, per_seq_bytes, None
    return pool.attention_bytes, per_seq_bytes - state_bytes, pool.states
