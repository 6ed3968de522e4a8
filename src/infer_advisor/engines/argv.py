"""Plan -> argument lists: one function per engine, the only place engine flags are decided.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    >>> ref = model_ref(plan)
    >>> vllm_flags(plan, ref.host)
    ['meta-llama/Llama-2-7b-hf', '--tensor-parallel-size', '1', ...]

``launch.py`` puts the engine's command in front of these flags (``launch_argv``).

Templates receive these lists and only loop over them; every value is quoted for its target by a filter.
"""

from __future__ import annotations

import json
import os
import re
from typing import Literal, TYPE_CHECKING

from pydantic import BaseModel, Field

from ..errors import EmitError
from ..untrusted import refuse_unsafe
from .launch_facts import engine_facts

if TYPE_CHECKING:  # the plan is read, never built here (engines sit below plan; see tests/test_import_graph.py)
    from ..plan.models import DeploymentPlan

Where = Literal["host", "container", "k8s"]

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
        refuse_unsafe(local, "Model path", EmitError)
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
    published = plan.quantization.published_checkpoint
    if published is not None:  # the engine loads the published repository (llama.cpp: REPO:TAG for -hf)
        ref = f"{published.repo}:{published.file}" if plan.engine.name == "llama.cpp" and published.file else published.repo
        return ModelRef(host=ref, container=ref)
    if plan.engine.name == "llama.cpp":
        if plan.quantization.pre_quantized:
            raise EmitError(
                f"llama.cpp serves GGUF files converted from an unquantized checkpoint, and {plan.model.name} is "
                f"pre-quantized ({plan.model.pre_quantized}); plan with --engine vllm."
            )
        raise EmitError("llama.cpp serves GGUF files: plan with --quantization gguf-q4_k_m (or gguf-q8_0, gguf-q4_0, gguf-f16).")
    return ModelRef(host=source, container=source)


def _kv(plan: DeploymentPlan) -> str | None:
    kv = plan.engine.kv_cache_dtype
    if kv == "auto" or (kv == plan.dtype and kv not in engine_facts(plan).kv_cache_dtype):
        return None  # the engine's auto already stores the model dtype
    table = engine_facts(plan).kv_cache_dtype
    if kv not in table:
        raise EmitError(f"{plan.engine.name} has no '{kv}' KV cache here; plan with --kv-cache-dtype auto.")
    return table[kv]


def user_value(plan: DeploymentPlan, flag: str, value: str) -> list[str]:
    """A flag whose value came from the user (a path, a served name): ``--flag=value`` where the engine's parser takes it,
    so a folder named ``-x`` is never read as a flag."""
    if engine_facts(plan).equals_form:
        return [f"{flag}={value}"]
    return [flag, value]


# TensorRT-LLM reads settings that have no flag (KV-cache dtype, block reuse, speculative decoding) from this YAML file.
TRTLLM_OPTIONS = "trtllm-options.yaml"
CONTAINER_CONFIG_DIR = "/opt/infer-advisor"


def trtllm_options(plan: DeploymentPlan) -> dict:
    """The --extra_llm_api_options file of a TensorRT-LLM plan (LLM API fields, TensorRT-LLM 1.2 docs)."""
    kv: dict = {"enable_block_reuse": True}  # prefix (KV block) reuse, TensorRT-LLM's default, stated
    if _kv(plan):
        kv["dtype"] = _kv(plan)
    options: dict = {"kv_cache_config": kv}
    if plan.speculative is not None:
        options["speculative_config"] = {
            "decoding_type": "Eagle3",
            "max_draft_len": plan.speculative.num_speculative_tokens,
            "speculative_model_dir": plan.speculative.draft_model,
        }
    return options


def _speculative_vllm(plan: DeploymentPlan) -> list[str]:
    s = plan.speculative
    if s is None:
        return []
    if s.config:  # the user's --speculative-config, as given (one argv word, quoted by the emitters)
        return user_value(plan, "--speculative-config", s.config)
    config = {"method": s.method, "model": s.draft_model, "num_speculative_tokens": s.num_speculative_tokens}
    return user_value(plan, "--speculative-config", json.dumps(config, separators=(",", ":")))


def _speculative_sglang(plan: DeploymentPlan) -> list[str]:
    s = plan.speculative
    if s is None:
        return []
    # SGLang docs, EAGLE-3: steps = draft tokens per step, top-k 1 makes a chain, draft tokens = steps + 1.
    n = s.num_speculative_tokens
    return [
        "--speculative-algorithm", "EAGLE3", *user_value(plan, "--speculative-draft-model-path", s.draft_model),
        "--speculative-num-steps", str(n), "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(n + 1),
    ]


def _differs(plan: DeploymentPlan, setting: str, value) -> bool:
    """True when the plan's value is not what the engine version picks by itself on this GPU (plan.engine.defaults)."""
    defaults = plan.engine.defaults
    return setting not in defaults or defaults[setting] is None or defaults[setting] != value


def vllm_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
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
    if e.enforce_eager:
        argv += ["--enforce-eager"]
    if e.lora is not None:  # adapters are added at run time (--lora-modules or the /v1/load_lora_adapter endpoint)
        argv += ["--enable-lora", "--max-loras", str(e.lora.max_loras), "--max-lora-rank", str(e.lora.max_lora_rank),
                 "--max-cpu-loras", str(e.lora.max_cpu_loras)]
    argv += user_value(plan, "--served-model-name", e.served_model_name)
    if p.nodes > 1:
        argv += ["--distributed-executor-backend", "ray"]
    if local_replicas(plan) > 1 and where != "k8s":  # every replica in one server: vLLM's data parallelism
        argv += ["--data-parallel-size", str(local_replicas(plan))]
    if p.expert_parallel:
        argv += ["--enable-expert-parallel"]
    argv += _speculative_vllm(plan)
    return [*argv, "--host", "0.0.0.0", "--port", str(e.port)]


def sglang_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    e, p = plan.engine, plan.parallelism
    argv = [*user_value(plan, "--model-path", model), "--tp-size", str(p.tensor_parallel_size)]
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
    if e.enforce_eager:
        argv += ["--disable-cuda-graph"]
    if local_replicas(plan) > 1 and where != "k8s":  # every replica in one server: SGLang's data parallelism
        argv += ["--dp-size", str(local_replicas(plan))]
    if p.expert_parallel:
        argv += ["--ep-size", str(p.tensor_parallel_size)]  # experts spread over the TP ranks
    if e.lora is not None:  # adapters are added at run time (/load_lora_adapter); 'all': every linear module, as vLLM
        argv += ["--enable-lora", "--max-loras-per-batch", str(e.lora.max_loras), "--max-lora-rank", str(e.lora.max_lora_rank),
                 "--lora-target-modules", "all", "--max-loaded-loras", str(e.lora.max_cpu_loras)]
    argv += _speculative_sglang(plan)
    return [*argv, *user_value(plan, "--served-model-name", e.served_model_name), "--host", "0.0.0.0", "--port", str(e.port)]


def tgi_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    e, p = plan.engine, plan.parallelism
    if p.pipeline_parallel_size > 1:
        raise EmitError("TGI has no pipeline parallelism; plan with --engine vllm for this layout.")
    # TGI needs max_input_tokens < max_total_tokens <= max_model_len and a prefill batch that holds one prompt.
    max_input = max(e.max_model_len - 1, 1)
    argv = [*user_value(plan, "--model-id", model), "--num-shard", str(p.tensor_parallel_size)]
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


def llamacpp_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    e = plan.engine
    # llama-server splits n_ctx over its slots: each of --parallel slots gets ctx-size / parallel tokens.
    load = "-hf" if plan.quantization.published_checkpoint is not None else "-m"  # -hf REPO:TAG downloads the GGUF
    argv = [load, model, "-c", str(e.max_model_len * e.max_num_seqs), "--parallel", str(e.max_num_seqs)]
    if plan.hardware.kind == "gpu":
        argv += ["-ngl", str(LLAMA_CPP_ALL_LAYERS)]
    if _kv(plan):  # a quantized V cache needs flash attention in llama.cpp
        argv += ["--cache-type-k", _kv(plan), "--cache-type-v", _kv(plan), "--flash-attn", "on"]
    if e.max_num_batched_tokens and _differs(plan, "max_num_batched_tokens", e.max_num_batched_tokens):
        argv += ["--batch-size", str(e.max_num_batched_tokens)]
    if e.max_num_seqs > 1:
        # An explicit --parallel turns llama-server's unified KV cache off (common/arg.cpp: kv_unified defaults on only
        # for the automatic slot count); without it busy slots that are not consecutive decode in separate passes
        # (measured on the H200: 3 busy slots 11 ms/token against 7.5 ms for 4). The simulator assumes one batch.
        argv += ["--kv-unified"]
    if not (plan.prefix_caching and plan.prefix_caching.shared_prefix_tokens):
        # The host prompt cache (--cache-ram, 8192 MiB by default) copies slot state on every admission, ~106-130 ms
        # per request on the H200 with nothing shared to reuse; it is kept only where a shared prefix was declared.
        argv += ["--cache-ram", "0"]
    return [*argv, "--alias", e.served_model_name, "--host", "0.0.0.0", "--port", str(e.port)]


def script_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    """CTranslate2 and transformers: arguments of the generated generate.py."""
    return ["--model", model]


def trtllm_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    """trtllm-serve (click; TensorRT-LLM 1.2 tensorrt_llm/commands/serve.py) on the PyTorch backend."""
    e, p = plan.engine, plan.parallelism
    argv = [model, "--backend", "pytorch", "--tp_size", str(p.tensor_parallel_size), "--pp_size", str(p.pipeline_parallel_size)]
    if plan.model.family == "moe" and p.tensor_parallel_size > 1:
        argv += ["--ep_size", str(p.tensor_parallel_size)]  # experts split over the TP ranks (expert parallelism)
    argv += ["--max_batch_size", str(e.max_num_seqs), "--max_num_tokens", str(e.max_num_batched_tokens or e.max_model_len)]
    argv += ["--max_seq_len", str(e.max_model_len), "--kv_cache_free_gpu_memory_fraction", str(e.gpu_memory_utilization)]
    options = TRTLLM_OPTIONS if where == "host" else f"{CONTAINER_CONFIG_DIR}/{TRTLLM_OPTIONS}"
    return [*argv, "--extra_llm_api_options", options, "--host", "0.0.0.0", "--port", str(e.port)]


def mlc_overrides(plan: DeploymentPlan) -> str:
    """mlc_llm serve --overrides: 'key=value;...' (EngineConfigOverride, python/mlc_llm/cli/serve.py v0.20.0)."""
    e, p = plan.engine, plan.parallelism
    values = {
        "max_num_sequence": e.max_num_seqs,
        "max_total_seq_length": max(plan.memory.required_kv_tokens, e.max_model_len),
        "prefill_chunk_size": e.max_num_batched_tokens or e.max_model_len,
        "context_window_size": e.max_model_len,
        "gpu_memory_utilization": e.gpu_memory_utilization,
        "tensor_parallel_shards": p.tensor_parallel_size,
    }
    return ";".join(f"{k}={v}" for k, v in values.items())


def mlc_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    """mlc_llm serve on the converted folder with its compiled library (see mlc_prepare)."""
    e = plan.engine
    argv = [model, *user_value(plan, "--model-lib", f"{model}/lib.so"), "--mode", "server", "--device", "cuda"]
    return [*argv, "--overrides", mlc_overrides(plan), "--host", "0.0.0.0", "--port", str(e.port)]


def exllamav2_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    """TabbyAPI's flags (argparse built from its config models, commit d2d87bb): the model folder, cache and batch."""
    e = plan.engine
    folder, name = model.rstrip("/").rsplit("/", 1) if "/" in model.rstrip("/") else (".", model)
    cache_mode = _kv(plan) or "FP16"
    # ExLlamaV2 pages the cache in 256-token pages; cache_size holds what the memory model counted.
    page = 256
    cache_size = -(-max(plan.memory.required_kv_tokens, e.max_model_len) // page) * page
    argv = [*user_value(plan, "--model-dir", folder), *user_value(plan, "--model-name", name), "--backend", "exllamav2"]
    argv += ["--max-seq-len", str(e.max_model_len), "--cache-size", str(cache_size), "--cache-mode", cache_mode]
    argv += ["--max-batch-size", str(e.max_num_seqs), "--chunk-size", str(e.max_num_batched_tokens or 2048)]
    return [*argv, "--disable-auth", "true", "--host", "0.0.0.0", "--port", str(e.port)]


ISQ = {"isq-q4k": "q4k", "isq-q8_0": "q8_0"}


def mistralrs_flags(plan: DeploymentPlan, model: str, where: Where = "host") -> list[str]:
    """mistralrs serve (clap; docs reference/cli/serve.md, v0.9.2) with in-situ quantization."""
    e = plan.engine
    # --max-num-batched-tokens is in the 0.9 source but not in its documented flag list: the default (4096, what the
    # engine profile counts) is kept.
    argv = ["-p", str(e.port), "--host", "0.0.0.0", "--max-seqs", str(e.max_num_seqs), *user_value(plan, "--model-id", model)]
    argv += ["--dtype", {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[plan.dtype]]
    if plan.quantization.method in ISQ:
        argv += ["--isq", ISQ[plan.quantization.method]]
    argv += ["--max-seq-len", str(e.max_model_len), "--max-batch-size", str(e.max_num_seqs)]
    if plan.hardware.kind == "cpu":
        argv += ["--cpu"]
    else:  # the paged KV cache holds exactly what the memory model counted
        argv += ["--paged-attn", "on", "--pa-context-len", str(max(plan.memory.required_kv_tokens, e.max_model_len))]
        if _kv(plan):
            argv += ["--pa-cache-type", _kv(plan)]
    return argv


FLAGS = {
    "vllm": vllm_flags,
    "sglang": sglang_flags,
    "tgi": tgi_flags,
    "llama.cpp": llamacpp_flags,
    "ctranslate2": script_flags,
    "transformers": script_flags,
    "trtllm": trtllm_flags,
    "mlc": mlc_flags,
    "exllamav2": exllamav2_flags,
    "mistralrs": mistralrs_flags,
}
# Engines that serve every local replica from one process (data parallelism); the others get one process per GPU group.
DATA_PARALLEL_ENGINES = ("vllm", "sglang")


def local_replicas(plan: DeploymentPlan) -> int:
    """Replicas on one node (multi-node plans and the CPU have one): as many as the node's GPUs hold, at most the
    plan's replicas (a sized fleet of 12 two-GPU replicas runs 1 per 2-GPU machine, 4 per 8-GPU node)."""
    p = plan.parallelism
    if p.nodes != 1 or plan.hardware.kind != "gpu":
        return 1
    per_replica = max(p.tensor_parallel_size * p.pipeline_parallel_size, 1)
    return max(1, min(p.replicas, plan.hardware.gpus_per_node // per_replica))


def with_port(argv: list[str], port: int) -> list[str]:
    """``argv`` with its listening port replaced (``--port N`` / ``-p N``): one replica per port on one node."""
    out = list(argv)
    for i, word in enumerate(out[:-1]):
        if word in ("--port", "-p"):
            out[i + 1] = str(port)
    return out


def ray_head_argv() -> list[str]:
    return ["ray", "start", "--head", f"--port={RAY_PORT}"]


def ray_worker_argv(head_address: str) -> list[str]:
    return ["ray", "start", "--block", f"--address={head_address}:{RAY_PORT}"]
