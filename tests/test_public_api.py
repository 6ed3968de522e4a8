"""The top-level names platform tools import: few, typed, lazily loaded, callable."""

import subprocess
import sys

import infer_advisor


def test_public_names_resolve():
    for name in infer_advisor.__all__:
        assert getattr(infer_advisor, name) is not None, name


def test_stage_entry_points_stay_callable_after_their_packages_are_imported():
    import infer_advisor.bench  # noqa: F401  (binds the package to the attribute)
    import infer_advisor.quantize  # noqa: F401
    from infer_advisor import bench, quantize

    assert callable(quantize) and callable(bench)
    assert quantize.quantize.__name__ == "quantize" and bench.bench.__name__ == "bench"


def test_import_is_cheap():
    code = "import sys, infer_advisor; print(sorted(m for m in ('pydantic', 'torch', 'rich', 'yaml') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_errors_inherit_builtins():
    from infer_advisor import ModelNotFoundError, UnknownGPUError

    assert issubclass(UnknownGPUError, ValueError)
    assert issubclass(ModelNotFoundError, LookupError)
    from infer_advisor import CalibrationMismatchError, InferAdvisorError

    assert issubclass(CalibrationMismatchError, ValueError) and issubclass(CalibrationMismatchError, InferAdvisorError)
