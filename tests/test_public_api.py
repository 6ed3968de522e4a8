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


def test_lazy_names_are_listed_by_dir():
    """Issue 25 item 5: `advise` and `size` were missing from dir(infer_advisor) (lazy names)."""
    names = dir(infer_advisor)
    assert {"advise", "size", "DeploymentPlan", "bench", "quantize"} <= set(names)
    assert set(infer_advisor.__all__) <= set(names)


def test_advise_signature_has_every_request_field_typed():
    import inspect
    import typing

    from infer_advisor import PlanRequest, advise

    params = inspect.signature(advise).parameters
    hints = typing.get_type_hints(PlanRequest)
    for name, field in PlanRequest.model_fields.items():
        assert name in params, name
        if name == "model":  # the one positional: None means "the request's default"
            continue
        p = params[name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert p.annotation == hints[name], name
        assert p.default == field.get_default(call_default_factory=True), name
    extra = set(params) - set(PlanRequest.model_fields) - {"request", "explain", "model_facts", "hardware", "progress"}
    assert not extra, extra


def test_plan_repr_is_short_and_model_dump_is_whole():
    from infer_advisor import advise

    plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    assert repr(plan) == ("DeploymentPlan(model='meta-llama/Llama-2-7b-hf', hardware='1x A100-80GB', engine='vllm 0.33.0', "
                          "layout='TP1 x PP1, 1 replica', verdict='feasible')")
    assert len(repr(plan)) < 200 and str(plan) == repr(plan)
    assert plan.model_dump()["memory"]["kv_cache_tokens"] == plan.memory.kv_cache_tokens


def test_size_signature_has_the_request_fields_too():
    import inspect

    from infer_advisor import PlanRequest, size

    params = inspect.signature(size).parameters
    assert set(PlanRequest.model_fields) <= set(params)
    assert params["rate"].kind is inspect.Parameter.KEYWORD_ONLY and params["ttft_p90"].default is None
