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


def fraction_direction(diag, text: str) -> None:
    from ..engines.memory import memory_profile
    from ..engines.profiles import engine_profile
    from .weights_fit import total_bytes

    lower = next((e for e in diag.edits if e.argv[:1] == [_FLAG] and e.starts is None), None)
    m = _WEIGHTS.search(text[:200_000]) if (diag.engine == "sglang" and lower is not None) else None
    total = total_bytes(diag, text) if m else None
    if not (m and total):
        return
    weights = float(next(g for g in m.groups() if g)) * (GIB if m.group(1) else GB)  # SGLang prints GiB as "GB"
    context = float(memory_profile("sglang").cuda_context_bytes)
    frac = float(lower.argv[1])
    default = diag.gpu_memory_utilization or engine_profile("sglang").memory_fraction
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
