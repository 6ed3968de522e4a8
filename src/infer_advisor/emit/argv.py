"""Plan -> argument lists: one function per engine, the only place engine flags are decided.

    >>> ref = model_ref(plan)
    >>> launch_argv(plan, ref, "host")
    ['vllm', 'serve', 'meta-llama/Llama-2-7b-hf', '--tensor-parallel-size', '1', ...]

Templates receive these lists and only loop over them; every value is quoted for its target by a filter.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, Field

from ..errors import EmitError
from ..plan.models import DeploymentPlan
from .facts import emit_facts

Where = Literal["host", "container"]

# Ray's default GCS port, as `ray start --head` uses it (Ray docs: "Starting Ray on the command line").
RAY_PORT = 6379
# Every layer on the GPU: llama.cpp offloads min(n, layers) (llama-server --help: -ngl, --n-gpu-layers).
LLAMA_CPP_ALL_LAYERS = 999
# Folder (relative to the output folder) where `infer-advisor quantize` writes the served model.
QUANTIZED_DIR = "models"
# Where models from the host are mounted inside containers.
CONTAINER_MODELS = "/models"
# The file name quantize/gguf_backend.py writes for a GGUF type.
GGUF_FILE = "model-{type}.gguf"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ModelRef(BaseModel):
    """What the engine is told to load, on the host and in a container, and how it gets there."""

    host: str = Field(description="Hub id, absolute local path, or a path relative to the output folder.")
    container: str = Field(description="The same model as seen inside the container.")
    mount_source: str | None = Field(default=None, description="Host folder bound into the container (None: Hub download).")
    mount_target: str | None = None
    mount_relative: bool = Field(default=False, description="mount_source is relative to the output folder.")
    quantize_steps: list[list[str]] = Field(default_factory=list, description="`infer-advisor quantize` commands to run first.")


def slug(text: str, limit: int = 40) -> str:
    """Lower-case DNS-1123 label piece of ``text`` ('Llama-2-7b-hf' -> 'llama-2-7b-hf')."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return out or "model"


def _quantize_method(plan: DeploymentPlan) -> list[str] | None:
    """`infer-advisor quantize` method arguments the plan needs first, or None."""
    q, engine = plan.quantization, plan.engine.name
    if engine == "ctranslate2":
        if q.method == "ct2-int8":
            return ["--method", "ct2-int8"]
        if q.method == "none":
            return ["--method", f"ct2-{plan.dtype}"]
        raise EmitError(f"CTranslate2 artifacts for '{q.method}' weights are not emitted; use --quantization ct2-int8 or none.")
    if not q.needs_quantize_step:
        return None
    if q.method.startswith("gguf-"):
        return ["--method", q.method]
    if q.method == "awq":
        # TGI reads AutoAWQ's GEMM format; vLLM, SGLang and transformers read llm-compressor's compressed-tensors.
        return ["--method", "awq", "--backend", "autoawq"] if engine == "tgi" else ["--method", "awq"]
    if q.method == "compressed-tensors-w4a16":
        return ["--method", "w4a16"]
    raise EmitError(
        f"The plan needs '{q.method}' weights, which `infer-advisor quantize` cannot write; "
        "use a pre-quantized checkpoint or --quantization awq."
    )


def model_ref(plan: DeploymentPlan) -> ModelRef:
    """Decide what the engine loads: the Hub id, the local folder, or the output of a quantize step."""
    source = plan.model.name
    local = None
    if plan.model.source == "local":
        local = os.path.abspath(plan.model.path or plan.model.name)
        if _CONTROL.search(local):
            raise EmitError(f"Model path {local!r} contains control characters (newline, tab); rename the folder.")
        source = local
    method = _quantize_method(plan)
    if method is not None:
        name = f"{slug(plan.model.name.rstrip('/').split('/')[-1])}-{method[1]}"
        folder = f"{QUANTIZED_DIR}/{name}"
        step = ["infer-advisor", "quantize", "--model", source, *method, "--out", folder]
        served = folder
        if plan.quantization.method.startswith("gguf-"):
            served = f"{folder}/{GGUF_FILE.format(type=plan.quantization.method.removeprefix('gguf-'))}"
        return ModelRef(
            host=served, container=f"{CONTAINER_MODELS}/{served.removeprefix(QUANTIZED_DIR + '/')}",
            mount_source=folder, mount_target=f"{CONTAINER_MODELS}/{name}", mount_relative=True, quantize_steps=[step],
        )
    if local is not None:
        target = f"{CONTAINER_MODELS}/{slug(os.path.basename(local))}"
        return ModelRef(host=local, container=target, mount_source=local, mount_target=target)
    if plan.engine.name == "llama.cpp":
        if plan.quantization.pre_quantized:
            raise EmitError(
                f"llama.cpp serves GGUF files converted from an unquantized checkpoint, and {plan.model.name} is "
                f"pre-quantized ({plan.model.pre_quantized}); plan with --engine vllm."
            )
        raise EmitError("llama.cpp serves GGUF files: plan with --quantization gguf-q4_k_m (or gguf-q8_0, gguf-f16).")
    return ModelRef(host=source, container=source)


def _kv(plan: DeploymentPlan) -> str | None:
    kv = plan.engine.kv_cache_dtype
    if kv == "auto":
        return None
    table = emit_facts().engines[plan.engine.name].kv_cache_dtype
    if kv not in table:
        raise EmitError(f"{plan.engine.name} has no '{kv}' KV cache here; plan with --kv-cache-dtype auto.")
    return table[kv]


def _differs(plan: DeploymentPlan, setting: str, value) -> bool:
    """True when the plan's value is not what the engine version picks by itself on this GPU (plan.engine.defaults)."""
    defaults = plan.engine.defaults
    return setting not in defaults or defaults[setting] is None or defaults[setting] != value


def vllm_flags(plan: DeploymentPlan, model: str) -> list[str]:
    e, p = plan.engine, plan.parallelism
    argv = [model, "--tensor-parallel-size", str(p.tensor_parallel_size)]
    if p.pipeline_parallel_size > 1:
        argv += ["--pipeline-parallel-size", str(p.pipeline_parallel_size)]
    argv += ["--dtype", plan.dtype]
    if plan.quantization.engine_flag:
        argv += ["--quantization", plan.quantization.engine_flag]
    argv += ["--max-model-len", str(e.max_model_len)]
    # Only settings that differ from the engine version's own defaults on this GPU (engine/arg_utils.py get_batch_defaults)
    if _differs(plan, "gpu_memory_utilization", e.gpu_memory_utilization):
        argv += ["--gpu-memory-utilization", str(e.gpu_memory_utilization)]
    if _differs(plan, "max_num_seqs", e.max_num_seqs):
        argv += ["--max-num-seqs", str(e.max_num_seqs)]
    if e.max_num_batched_tokens and _differs(plan, "max_num_batched_tokens", e.max_num_batched_tokens):
        argv += ["--max-num-batched-tokens", str(e.max_num_batched_tokens)]
    if _kv(plan):
        argv += ["--kv-cache-dtype", _kv(plan)]
    argv += ["--served-model-name", e.served_model_name]
    if p.nodes > 1:
        argv += ["--distributed-executor-backend", "ray"]
    return [*argv, "--host", "0.0.0.0", "--port", str(e.port)]


def sglang_flags(plan: DeploymentPlan, model: str) -> list[str]:
    e, p = plan.engine, plan.parallelism
    argv = ["--model-path", model, "--tp-size", str(p.tensor_parallel_size)]
    if p.pipeline_parallel_size > 1:
        argv += ["--pp-size", str(p.pipeline_parallel_size)]
    argv += ["--dtype", plan.dtype]
    if plan.quantization.engine_flag:
        argv += ["--quantization", plan.quantization.engine_flag]
    argv += ["--context-length", str(e.max_model_len)]
    if _differs(plan, "gpu_memory_utilization", e.gpu_memory_utilization):
        argv += ["--mem-fraction-static", str(e.gpu_memory_utilization)]
    if _differs(plan, "max_num_seqs", e.max_num_seqs):
        argv += ["--max-running-requests", str(e.max_num_seqs)]
    if e.max_num_batched_tokens and _differs(plan, "max_num_batched_tokens", e.max_num_batched_tokens):
        argv += ["--chunked-prefill-size", str(e.max_num_batched_tokens)]
    if _kv(plan):
        argv += ["--kv-cache-dtype", _kv(plan)]
    return [*argv, "--served-model-name", e.served_model_name, "--host", "0.0.0.0", "--port", str(e.port)]


def tgi_flags(plan: DeploymentPlan, model: str) -> list[str]:
    e, p = plan.engine, plan.parallelism
    if p.pipeline_parallel_size > 1:
        raise EmitError("TGI has no pipeline parallelism; plan with --engine vllm for this layout.")
    # TGI needs max_input_tokens < max_total_tokens <= max_model_len and a prefill batch that holds one prompt.
    max_input = max(e.max_model_len - 1, 1)
    argv = ["--model-id", model, "--num-shard", str(p.tensor_parallel_size)]
    method = plan.quantization.method
    if method != "none":
        argv += ["--quantize", plan.quantization.engine_flag or method]
    else:
        argv += ["--dtype", plan.dtype]
    argv += ["--max-input-tokens", str(max_input), "--max-total-tokens", str(e.max_model_len)]
    argv += ["--max-batch-prefill-tokens", str(max(e.max_num_batched_tokens or 0, max_input))]
    argv += ["--max-concurrent-requests", str(e.max_num_seqs)]
    if e.gpu_memory_utilization is not None and e.gpu_memory_utilization < 1:
        argv += ["--cuda-memory-fraction", str(e.gpu_memory_utilization)]
    if _kv(plan):
        argv += ["--kv-cache-dtype", _kv(plan)]
    return [*argv, "--hostname", "0.0.0.0", "--port", str(e.port)]


def llamacpp_flags(plan: DeploymentPlan, model: str) -> list[str]:
    e = plan.engine
    # llama-server splits n_ctx over its slots: each of --parallel slots gets ctx-size / parallel tokens.
    argv = ["-m", model, "-c", str(e.max_model_len * e.max_num_seqs), "--parallel", str(e.max_num_seqs)]
    if plan.hardware.kind == "gpu":
        argv += ["-ngl", str(LLAMA_CPP_ALL_LAYERS)]
    if _kv(plan):  # a quantized V cache needs flash attention in llama.cpp
        argv += ["--cache-type-k", _kv(plan), "--cache-type-v", _kv(plan), "--flash-attn", "on"]
    if e.max_num_batched_tokens and _differs(plan, "max_num_batched_tokens", e.max_num_batched_tokens):
        argv += ["--batch-size", str(e.max_num_batched_tokens)]
    return [*argv, "--alias", e.served_model_name, "--host", "0.0.0.0", "--port", str(e.port)]


def script_flags(plan: DeploymentPlan, model: str) -> list[str]:
    """CTranslate2 and transformers: arguments of the generated generate.py."""
    return ["--model", model]


_FLAGS = {
    "vllm": vllm_flags,
    "sglang": sglang_flags,
    "tgi": tgi_flags,
    "llama.cpp": llamacpp_flags,
    "ctranslate2": script_flags,
    "transformers": script_flags,
}


def launch_argv(plan: DeploymentPlan, ref: ModelRef, where: Where) -> list[str]:
    """The full command (executable + flags) that starts the plan's engine on the host or in its container."""
    name = plan.engine.name
    if name not in _FLAGS:
        raise EmitError(f"No argument builder for engine '{name}'.")
    if plan.parallelism.nodes > 1 and name != "vllm":
        raise EmitError(f"Multi-node artifacts are emitted for vLLM (Ray) only, not {name}; plan with --engine vllm.")
    facts = emit_facts().engines[name]
    command = facts.host_command if where == "host" else facts.container_command
    return [*command, *_FLAGS[name](plan, ref.host if where == "host" else ref.container)]


def ray_head_argv() -> list[str]:
    return ["ray", "start", "--head", f"--port={RAY_PORT}"]


def ray_worker_argv(head_address: str) -> list[str]:
    return ["ray", "start", "--block", f"--address={head_address}:{RAY_PORT}"]
