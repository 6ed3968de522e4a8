"""Properties of every plan over random catalog model x catalog GPU x count x nodes x goal (hypothesis).

Ground truth comes from outside the search: the memory model is re-run with the plan's own choices, the
divisibility rules are checked with plain arithmetic on the model's config, and the hardware gates are
re-stated here from the issue (bf16 >= 8.0, vLLM >= 7.0, AWQ/GPTQ in vLLM >= 7.5, FP8 >= 8.0, ...).
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infer_advisor.engines.profiles import engine_profile
from infer_advisor.errors import DoesNotFitError, RequestError
from infer_advisor.estimate import estimate_memory
from infer_advisor.hardware import gpu_catalog
from infer_advisor.model_facts.catalog import catalog_names
from infer_advisor.plan.advise import defaults
from infer_advisor.rules.loader import load_rules
from tests.plan.planning import catalog_model, hardware, plan_for

MODELS = catalog_names()
GPUS = [g.name for g in gpu_catalog()]
BUILT_IN_DECISIONS = {"memory.fit", "memory.context-lowered", "memory.kv-cache-dtype", "published-checkpoint", "speculative.published-draft", "layout.goal", "request.engine", "request.dtype", "request.kv_cache_dtype", "request.quantization"}


@cache
def shipped_ids() -> frozenset[str]:
    return frozenset(r.id for r in load_rules())


@st.composite
def requests(draw):
    model = draw(st.sampled_from(MODELS))
    if draw(st.integers(0, 9)) == 0:
        gpu = "cpu"
    else:
        name = draw(st.sampled_from(GPUS))
        count = draw(st.sampled_from([1, 2, 4, 8]))
        nodes = draw(st.sampled_from([1, 1, 1, 2]))
        gpu = f"{name}:{count}" + (f"x{nodes}" if nodes > 1 else "")
    options = {"goal": draw(st.sampled_from(["latency", "throughput", "balanced"]))}
    max_ctx = catalog_model(model).max_position_embeddings
    context = draw(st.sampled_from([None, 2048, 8192, 32768]))
    if context is not None:
        options["context"] = min(context, max_ctx)
    if draw(st.booleans()):
        options["concurrency"] = draw(st.sampled_from([1, 4, 16, 64]))
    if draw(st.integers(0, 4)) == 0:  # user choices: honoured, or refused with a reason
        options["engine"] = draw(st.sampled_from(["vllm", "sglang", "tgi", "ctranslate2", "llama.cpp", "transformers"]))
    if draw(st.integers(0, 4)) == 0:
        options["quantization"] = draw(st.sampled_from(["none", "awq", "fp8", "ct2-int8", "gguf-q4_k_m"]))
    if draw(st.integers(0, 4)) == 0:
        options["kv_cache_dtype"] = "fp8"
    if draw(st.integers(0, 6)) == 0:
        options["dtype"] = draw(st.sampled_from(["bfloat16", "float16"]))
    return model, gpu, options


def _memory_bytes(hw) -> int:
    return hw.gpu.memory_bytes if hw.kind == "gpu" else int(hw.cpu.memory_bytes * defaults().cpu_memory_fraction)


def _rerun(plan, model, hw, *, concurrency: int, request_tokens: int):
    """The memory model with the plan's own choices."""
    profile = engine_profile(plan.engine.name)
    return estimate_memory(
        model,
        gpu_memory_bytes=_memory_bytes(hw),
        engine=profile,
        quantization=plan.quantization.method,
        dtype=plan.dtype,
        kv_cache_dtype=plan.engine.kv_cache_dtype,
        tp=plan.parallelism.tensor_parallel_size,
        pp=plan.parallelism.pipeline_parallel_size,
        context=plan.engine.max_model_len,
        concurrency=concurrency,
        request_tokens=request_tokens,
        input_tokens=min(defaults().input_tokens, plan.engine.max_model_len),
        max_num_batched_tokens=plan.engine.max_num_batched_tokens if profile.memory_accounting == "reserve" else None,
        memory_fraction=plan.engine.gpu_memory_utilization,
        on_gpu=hw.kind == "gpu",
    )


def check_fits(plan, model, hw, options) -> None:
    """A feasible plan starts: the memory model, re-run with the plan's choices, fits."""
    profile = engine_profile(plan.engine.name)
    ctx = plan.engine.max_model_len
    assert ctx <= model.max_position_embeddings
    assert plan.memory.kv_cache_tokens >= ctx, "the KV cache must hold one request of max_model_len"
    # At start-up: one request of max_model_len; llama.cpp allocates every slot's full context at load.
    slots = plan.engine.max_num_seqs if profile.kv_preallocated else 1
    start = _rerun(plan, model, hw, concurrency=slots, request_tokens=ctx)
    assert start.fits and start.needed_bytes_per_gpu <= start.budget_bytes_per_gpu, (
        f"{plan.engine.name} {plan.quantization.method} tp={plan.parallelism.tensor_parallel_size} ctx={ctx} slots={slots}: "
        f"needs {start.needed_bytes_per_gpu / 2**30:.2f} GiB of {start.budget_bytes_per_gpu / 2**30:.2f}"
    )
    # Without a concurrency warning, the requested concurrency of typical requests fits as well.
    concurrency = options.get("concurrency") or (
        defaults().cpu_concurrency if hw.kind == "cpu" else defaults().concurrency[options["goal"]]
    )
    typical = options.get("context") or (defaults().input_tokens + defaults().output_tokens)
    if not any("concurrent requests" in w for w in plan.warnings):
        full = _rerun(plan, model, hw, concurrency=concurrency, request_tokens=min(typical, ctx))
        assert full.fits, f"no concurrency warning, but {concurrency} requests of {min(typical, ctx)} tokens do not fit"
    if ctx < (options.get("context") or model.max_position_embeddings):
        assert any("max_model_len lowered" in w for w in plan.warnings)
        assert "memory.context-lowered" in {d.rule_id for d in plan.decisions}


def check_layout(plan, model, hw) -> None:
    """Divisibility and placement, by plain arithmetic on the model's config."""
    par = plan.parallelism
    tp, pp = par.tensor_parallel_size, par.pipeline_parallel_size
    assert model.num_attention_heads % tp == 0
    assert model.num_kv_heads % tp == 0 or tp % model.num_kv_heads == 0
    if plan.quantization.group_size and (plan.quantization.bits or 16) <= 4:  # 4-bit group quantization (the rule's scope)
        assert model.intermediate_size % (plan.quantization.group_size * tp) == 0
    if hw.kind == "cpu":
        assert (tp, pp, par.nodes, par.executor) == (1, 1, 1, "none")
        return
    assert tp <= hw.gpus_per_node and par.nodes <= hw.nodes
    # pipeline stages: one per node across nodes, or several within one node (when TP alone cannot split the model:
    # e.g. phi-4's 10 KV heads forbid TP4 on four GPUs, so 4 GPUs are TP2 x PP2)
    assert pp == par.nodes or (par.nodes == 1 and tp * pp <= hw.gpus_per_node)
    assert tp * pp * par.replicas <= hw.total_gpus
    assert (par.executor == "ray") == (par.nodes > 1)
    if par.nodes > 1:
        assert plan.engine.name == "vllm" and tp == hw.gpus_per_node


def check_choices(plan, options) -> None:
    """--engine / --quantization / --dtype / --kv-cache-dtype are honoured (or refused), never silently replaced."""
    for key, got in (
        ("engine", plan.engine.name), ("quantization", plan.quantization.method),
        ("dtype", plan.dtype), ("kv_cache_dtype", plan.engine.kv_cache_dtype),
    ):
        asked = options.get(key, "auto")
        loadable = key != "quantization" or asked in engine_profile(plan.engine.name).quantizations
        if asked != "auto" and loadable and not (key == "quantization" and plan.model.pre_quantized):
            assert got == asked, f"--{key} {asked} became {got}"


def check_gates(plan, model, hw, options) -> None:
    """The issue's hardware gates, re-stated from the facts (not from the rule files)."""
    engine, quant, dtype = plan.engine.name, plan.quantization.method, plan.dtype
    gpu = hw.gpu
    nvidia_cc = gpu.compute_capability if (gpu and gpu.vendor == "nvidia") else None
    if engine in {"tgi", "transformers"}:
        assert options.get("engine") == engine, "TGI and transformers only on request"
    if plan.engine.kv_cache_dtype == "fp8" and engine != "llama.cpp":  # llama.cpp's 8-bit KV cache is q8_0: no FP8 hardware needed
        assert nvidia_cc is not None and nvidia_cc >= 8.9 or (gpu and gpu.vendor == "amd" and gpu.tflops.get("fp8"))
    if model.family == "moe" or model.pre_quantized in {"compressed-tensors", "gptq", "fp8"}:
        assert engine != "ctranslate2"
    if hw.kind == "cpu":
        assert engine in {"llama.cpp", "ctranslate2", "mistralrs", options.get("engine")}  # docs/rules.md: CPU -> llama.cpp, then mistral.rs
        assert quant in {"gguf-q4_k_m", "gguf-q8_0", "gguf-f16", "ct2-int8", "isq-q4k", "isq-q8_0", "none"}
        return
    if dtype == "bfloat16" and nvidia_cc is not None:
        assert nvidia_cc >= 8.0
    if engine == "vllm" and nvidia_cc is not None:
        assert nvidia_cc >= 7.0
    if engine in {"vllm", "sglang"} and quant in {"awq", "gptq"}:
        assert nvidia_cc is not None and nvidia_cc >= 7.5
    if engine in {"vllm", "sglang"} and quant == "compressed-tensors-w4a16":
        assert nvidia_cc is not None and nvidia_cc >= 8.0
    if quant == "fp8" and nvidia_cc is not None:
        assert nvidia_cc >= 8.0
    if quant == "ct2-int8" and nvidia_cc is not None:
        assert nvidia_cc >= 6.1
    if model.pre_quantized:
        assert plan.quantization.pre_quantized and not plan.quantization.needs_quantize_step
    # Never force --quantization awq/gptq: vLLM detects checkpoints (and picks the Marlin kernels) itself.
    assert plan.quantization.engine_flag in {None, "fp8"}


def check_decisions(plan) -> None:
    assert plan.decisions
    for d in plan.decisions:
        assert d.rule_id in shipped_ids() or d.rule_id in BUILT_IN_DECISIONS, d.rule_id
        assert d.reason.strip() and d.value.strip()
    decided = {d.decides for d in plan.decisions}
    assert {"engine", "quantization", "dtype", "layout"} <= decided, decided


# derandomize: the same draws on every run, so CI is reproducible (raise max_examples locally to explore).
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
# Cases random draws rarely reach: llama.cpp slots (each holds max_model_len from start-up), a lowered context.
@example(("meta-llama/Llama-3.1-8B", "cpu", {"goal": "throughput"}))
@example(("meta-llama/Llama-3.1-8B", "V100-16GB", {"goal": "throughput"}))
@example(("Qwen/Qwen2.5-32B", "V100-32GB:1", {"goal": "throughput", "context": 8192}))
@example(("meta-llama/Llama-3.1-8B", "L4", {"goal": "throughput"}))
@example(("meta-llama/Llama-3.1-405B", "H100-80GB:8x2", {"goal": "throughput", "context": 8192}))
def test_every_plan_is_sound(req):
    model_name, gpu, options = req
    model, hw = catalog_model(model_name), hardware(gpu)
    if options.get("engine") and hw.kind not in engine_profile(options["engine"]).runs_on:
        with pytest.raises(RequestError, match="does not run on"):  # e.g. --engine vllm on a CPU: bad input
            plan_for(model_name, gpu, **options)
        return
    try:
        plan = plan_for(model_name, gpu, **options)
    except DoesNotFitError as err:  # an explicit --context is kept or refused in one line naming a change, never cut
        assert options.get("context") and "\n" not in str(err) and "--" in str(err), str(err)
        return
    if options.get("context"):
        assert plan.engine.max_model_len == options["context"]  # kept as asked
    if not plan.feasible:
        assert plan.infeasible_reason and plan.infeasible_reason.strip() and "\n" not in plan.infeasible_reason
        check_choices(plan, options)  # a refused choice is still the one shown
        return
    assert plan.infeasible_reason is None
    check_fits(plan, model, hw, options)
    check_layout(plan, model, hw)
    check_choices(plan, options)
    check_gates(plan, model, hw, options)
    check_decisions(plan)
