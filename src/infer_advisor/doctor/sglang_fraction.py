"""SGLang's static fraction, the right way for the weights it holds (docfix15, retrospective: batch 8's sf138, "60GB
weights on 80GB GPU", where the FAQ's smaller --mem-fraction-static is "the opposite" of the fix).

    >>> fraction_direction(diag, text)   # diag.edits changed in place where a smaller fraction leaves no KV pool

SGLang sizes its KV pool from what is left of the static fraction after the weights (model_runner.py
``profile_max_num_token``: ``rest_memory = available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static)``, the
available memory measured after the weights loaded; ``init_memory_pool`` raises "Not enough memory. Please try to
increase --mem-fraction-static" when it holds no token). So the pool is about total x fraction - weights - the CUDA
context: where the weights the text states (SGLang's "Load weight end. ... mem usage=W GB", or the reporter's "W GB
weights"/"weights of W GB") leave a pool at the smaller fraction the FAQ gives for an out of memory that is smaller than
the memory that fraction leaves outside the pool (activations, CUDA graphs), the pool is the scarce side and the FAQ's
edit shrinks it further: a larger fraction (one step above the run's or the engine's default, at most 0.95) is offered
in its place. Not decided: the activation and CUDA-graph room a larger fraction leaves is not printed.
"""

from __future__ import annotations

import re

from .edits import undecided_edit
from ..units import GB, GIB

STEP, CEILING = 0.05, 0.95  # first_try's one step; the highest first-try fraction (room for graphs and context)
_WEIGHTS = re.compile(r"Load weight end\.[^\n]{0,200}?mem usage=(\d+(?:\.\d+)?) GB|(\d+(?:\.\d+)?)\s*GB (?:of )?weights\b"
                      r"|weights (?:of|take|are|is) (?:about )?(\d+(?:\.\d+)?)\s*GB")
_FLAG = "--mem-fraction-static"


def stated_weights(text: str) -> float | None:
    """The weights per GPU the text states, in bytes: SGLang's "Load weight end. ... mem usage=W GB" (GiB printed as
    "GB") or a reporter's "W GB weights" / "weights of W GB" (decimal GB); None where it states none."""
    m = _WEIGHTS.search(text[:200_000])
    return float(next(g for g in m.groups() if g)) * (GIB if m.group(1) else GB) if m else None


def sglang_profile(version: str | None):
    """(SGLang's memory profile at ``version``, the version it was chosen by): the pinned version's (and None) where the
    version is not known or older than every covered range."""
    from ..engines.memory import memory_profile
    from ..errors import RequestError

    try:
        return memory_profile("sglang", version), version
    except RequestError:  # older than every covered range
        return memory_profile("sglang"), None


def sglang_default_fraction(total: float | None, tp: int, version: str | None) -> float:
    """SGLang's own mem_fraction_static for a GPU of ``total`` bytes at ``tp`` ranks, by the version's rule (0.4.8-0.5.2
    reserve by memory band, 0.5.3+ by chunk, graph batch and ranks: engines/memory.py, the planner's function), the
    pinned version's rule where the version is not known or not covered."""
    from ..engines.memory import default_memory_fraction

    prof, version = sglang_profile(version)
    return default_memory_fraction(prof, driver_memory_bytes=total and int(total), tp=max(tp, 1), version=version)


def fraction_direction(diag, text: str) -> None:
    """The run's fraction, where the log prints none, is SGLang's default for the GPU, TP and the log's version
    (:func:`sglang_default_fraction`, as everywhere in the doctor); the CUDA context is that version's profile's."""
    from .weights_fit import total_bytes

    lower = next((e for e in diag.edits if e.argv[:1] == [_FLAG] and e.starts is None), None)
    weights = stated_weights(text) if lower is not None else None  # SGLang only (its passes, engine_passes)
    total = total_bytes(diag, text) if weights is not None else None
    if weights is None or not total:
        return
    context = float(sglang_profile(diag.engine_version)[0].cuda_context_bytes)
    frac = float(lower.argv[1])
    default = diag.gpu_memory_utilization or sglang_default_fraction(total, diag.tp or 1, diag.engine_version)
    if frac >= default:  # a larger fraction already (the engine's own "increase" advice): nothing to turn
        return
    pool, outside = total * frac - weights - context, total * (1 - frac)
    if pool >= outside:  # the pool stays the larger side: the smaller fraction is the FAQ's remedy, kept
        return
    up = round(min(default + STEP, CEILING), 2)
    up_pool = total * up - weights - context
    raise_edit = undecided_edit(f"{_FLAG} {up:.2f}", [_FLAG, f"{up:.2f}"], "less room outside the static pool (activations, CUDA graphs)",
                                0.05, confidence="engine_advice", basis=f"not decided: the weights ({weights / GIB:.1f} GiB, stated) leave "
                      f"{pool / GIB:.1f} GiB of KV pool at {frac:.2f} of {total / GIB:.1f} GiB (SGLang: total x fraction - weights - context), "
                      f"less than the {outside / GIB:.1f} GiB it leaves outside the pool, and {up_pool / GIB:.1f} GiB at {up:.2f}; SGLang's own "
                      "message for a pool that holds too little says to increase it")
    diag.edits = [raise_edit] + [e for e in diag.edits if e is not lower]
    diag.notes.append(f"A smaller {_FLAG} ({frac:.2f}) would leave the KV pool {pool / GIB:.1f} GiB beside {weights / GIB:.1f} GiB of "
                      f"weights on {total / GIB:.1f} GiB, less than the memory left outside it: the pool is the scarce side, and SGLang's "
                      f"message for it is 'Not enough memory. Please try to increase {_FLAG}'.")


# docfix22 (retrospective, batch 7's sf112: "fails at pool sizing or OOMs during CUDA graph capture", the FAQ's 0.80 offered):
# the text says the KV pool's sizing failed (not an allocation that ran out while the pools were made: a pool sized too
# large, sf181). rest = available after load - total x (1 - fraction) rises with the fraction
# (model_runner.profile_max_num_token), so where the pool could not be sized at the run's fraction, every fraction at or
# under it fails the same way. SGLang's own message for it is read by sglang_tgi.py (its default or 0.05 above).
_POOL_FAILED = re.compile(r"\bfail(?:s|ed|ing)? (?:at|during|in) (?:the )?(?:automatic )?(?:KV[- ](?:cache )?)?pool[- ]sizing\b", re.I)


def pool_failed_up(diag, text: str) -> None:
    """Where the text says SGLang's KV pool could not be sized, a --mem-fraction-static at or under the run's (SGLang's
    default for the GPU and TP where none is stated) is replaced by one step above it (at most 0.95), SGLang's own
    'increase' advice."""
    from .weights_fit import total_bytes

    if diag.error is None or diag.error.kind == "sglang_not_enough_memory" or not _POOL_FAILED.search(text[:200_000]):
        return
    total = total_bytes(diag, text)
    run = diag.gpu_memory_utilization or sglang_default_fraction(total, diag.tp or 1, diag.engine_version)
    lower = [e for e in diag.edits if e.argv[:1] == [_FLAG] and len(e.argv) > 1 and e.starts is not True and float(e.argv[1]) <= run]
    if not lower:
        return
    up = round(min(run + STEP, CEILING), 2)
    label = lower[0].change.removeprefix(" ".join(lower[0].argv))  # " (SGLang)" where no line names the engine
    raise_edit = undecided_edit(f"{_FLAG} {up:.2f}{label}", [_FLAG, f"{up:.2f}"], "less room outside the static pool (activations, "
                                "CUDA graphs)", 0.05, confidence="engine_advice", basis=f"not decided: the text says the KV pool could "
                                f"not be sized at the run's fraction ({run:.2f}{'' if diag.gpu_memory_utilization else ', SGLang default'}); "
                                "SGLang's pool is available after load - total x (1 - fraction) (profile_max_num_token), which only a "
                                "larger fraction raises; its message for it says to increase it")
    diag.edits = [raise_edit] + [e for e in diag.edits if e not in lower]
    diag.notes.append(f"{', '.join(e.change for e in lower)} left out: the KV pool could not be sized at {run:.2f}, and a smaller "
                      f"{_FLAG} leaves it less (SGLang: 'Not enough memory. Please try to increase {_FLAG}').")
