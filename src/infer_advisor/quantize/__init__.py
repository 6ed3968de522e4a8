"""The quantize stage: turn a model into a smaller one for a given runtime, then prove the result loads.

    >>> from infer_advisor.quantize import quantize
    >>> result = quantize("./tiny-llama", "ct2-int8", "./tiny-llama-ct2")   # doctest: +SKIP
    >>> print(result.summary())                                             # doctest: +SKIP

Methods and backends are listed in ``data/quantize/methods.yaml`` (``method_names()``); each backend is a
module with ``run(source, work_dir, spec, calibration, progress) -> notes`` (see :mod:`.methods`).
Heavy libraries (torch, transformers, ctranslate2, llmcompressor, awq) are imported only inside backends.
"""

from __future__ import annotations

from .api import quantize, run_request
from .methods import DEFAULT_GROUP_SIZE, MethodSpec, backend_names, method_names, resolve_method
from .results import QuantizeRequest, QuantizeResult, QuickCheck

__all__ = [
    "quantize",
    "run_request",
    "QuantizeRequest",
    "QuantizeResult",
    "QuickCheck",
    "MethodSpec",
    "resolve_method",
    "method_names",
    "backend_names",
    "DEFAULT_GROUP_SIZE",
]

from .._callable import make_package_callable  # noqa: E402

make_package_callable(__name__, quantize)
