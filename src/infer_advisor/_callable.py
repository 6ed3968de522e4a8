"""Stage packages whose entry function has the package's own name (``quantize``, ``bench``).

Once ``infer_advisor.quantize`` (the package) is imported, Python binds it to the attribute
``infer_advisor.quantize``, so ``from infer_advisor import quantize`` returns the package, not the
function. Making the package callable keeps both spellings working:
``infer_advisor.quantize(...)`` and ``infer_advisor.quantize.quantize(...)``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any


def make_package_callable(module_name: str, func: Callable[..., Any]) -> None:
    """Calling the package ``module_name`` calls ``func``."""

    class _CallablePackage(types.ModuleType):
        __doc__ = sys.modules[module_name].__doc__

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

    sys.modules[module_name].__class__ = _CallablePackage
