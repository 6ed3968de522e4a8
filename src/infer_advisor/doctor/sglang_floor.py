"""No SGLang static fraction under the weights (docfix21, retrospective: the defect docfix19 left, "SGLang's
--mem-fraction-static gets no such floor" as vLLM's utilization got in :mod:`.budget_floor`).

SGLang sizes its KV pool after the weights have loaded (model_runner.py ``profile_max_num_token``: ``rest_memory =
available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static)``, the available memory measured after loading;
``init_memory_pool`` raises "Not enough memory. Please try to increase --mem-fraction-static" when the pool holds no
token). So a fraction whose share of the total is under the weights per GPU plus the CUDA context leaves no pool at all:
such a ``--mem-fraction-static`` edit is never proposed (it would fail at start). The weights are those the text states
(SGLang's "Load weight end. ... mem usage=W GB", the reporter's "W GB weights", :mod:`.sglang_fraction`), else the
catalog's shapes at the stated format per TP GPU (:mod:`.budget_floor`); the context is the engine profile's. A lower
bound: the pool must also hold one request, which is not added.
"""

from __future__ import annotations

from ..units import GIB

_FLAG = "--mem-fraction-static"


def _weights_per_gpu(diag, text: str) -> tuple[float | None, str]:
    from .budget_floor import _weights_per_gpu as catalog_weights
    from .sglang_fraction import stated_weights

    stated = stated_weights(text)
    if stated is not None:
        return stated, "stated"
    weights, _, fmt = catalog_weights(diag, text)
    return weights, f"{fmt}, from the catalog's shapes"


def fraction_floor(diag, text: str) -> None:
    """Leave out the --mem-fraction-static edits whose share of the total is under the weights and the CUDA context."""
    from ..engines.memory import memory_profile
    from .weights_fit import total_bytes

    lower = [e for e in diag.edits if e.argv[:1] == [_FLAG] and len(e.argv) > 1 and e.starts is not True]
    total = total_bytes(diag, text) if lower else None
    weights, how = _weights_per_gpu(diag, text) if total else (None, "")
    if not weights:
        return
    need = weights + float(memory_profile("sglang").cuda_context_bytes)
    out = [e for e in lower if float(e.argv[1]) * total < need]
    if not out:
        return
    diag.edits = [e for e in diag.edits if e not in out]
    diag.notes.append(f"{', '.join(' '.join(e.argv) for e in out)} left out: {float(out[0].argv[1]):.2f} x {total / GIB:,.1f} GiB is under "
                      f"the weights ({weights / GIB:,.1f} GiB per GPU, {how}) and the CUDA context, which SGLang's static pool holds "
                      f"(profile_max_num_token: no KV pool, 'Not enough memory. Please try to increase {_FLAG}').")
