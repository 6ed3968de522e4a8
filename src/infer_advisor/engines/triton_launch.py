"""Triton Inference Server in front of TensorRT-LLM (``--stack nvidia-triton``): the model repository, the
``tritonserver`` command and the steps that install the TensorRT-LLM backend's LLM API model code.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="H100-80GB", stack="nvidia-triton")
    >>> argv = tritonserver_argv(plan, "container")
    >>> argv[:5]
    ['mpirun', '--allow-run-as-root', '-n', '1', '/opt/tritonserver/bin/tritonserver']
    >>> argv[5:8]
    ['--model-repository=/opt/infer-advisor/model_repository', '--grpc-port=8001', '--http-port=8000']

The model is the LLM API (PyTorch backend) ``tensorrt_llm`` model of TensorRT-LLM's ``triton_backend/all_models/llmapi``:
``config.pbtxt`` declares its inputs and outputs, ``1/model.yaml`` holds the ``LLM()`` arguments (the same ones
trtllm-serve builds from its flags) and ``triton_config``; ``1/model.py`` and its helpers come from TensorRT-LLM's
source at the release branch Triton's own build uses (the image build, or serve.sh's first run, fetches them). Everything here is a value;
templates only print it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from .triton import triton_facts, triton_release
from . import argv as A
from .launch_facts import engine_facts
from .prepare import PrepareStep

if TYPE_CHECKING:  # the plan is read, never built here (engines sit below plan; see tests/test_import_graph.py)
    from ..plan.models import DeploymentPlan

# The model repository beside the artifacts (host) and inside the built image.
MODEL_REPOSITORY = "model_repository"
CONTAINER_REPOSITORY = f"{A.CONTAINER_CONFIG_DIR}/model_repository"
# Where the TensorRT-LLM source (sparse: the Triton model folder only) is checked out.
HOST_SOURCE = ".tensorrt_llm-src"
BUILD_SOURCE = "/tmp/tensorrt_llm-src"
# Triton's three ports move together for each further replica on one node (8000-8002, 8003-8005, ...).
PORTS_PER_REPLICA = 3
# Copies the release's model folder except the two files written here (Python: no `cp -n`, whose exit status changed in
# coreutils 9.2, and no file list that could differ between releases).
COPY_MODEL_CODE = (
    "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2], dirs_exist_ok=True, "
    "ignore=shutil.ignore_patterns(\"model.yaml\", \"config.pbtxt\"))"
)


class TritonPort(BaseModel):
    name: str = Field(description="http, grpc or metrics.")
    port: int


def ports(replica: int = 0) -> list[TritonPort]:
    f = triton_facts()
    shift = PORTS_PER_REPLICA * replica
    return [
        TritonPort(name="http", port=f.http_port + shift),
        TritonPort(name="grpc", port=f.grpc_port + shift),
        TritonPort(name="metrics", port=f.metrics_port + shift),
    ]


def repository(where: A.Where) -> str:
    return MODEL_REPOSITORY if where == "host" else CONTAINER_REPOSITORY


def tritonserver_argv(plan: DeploymentPlan, where: A.Where, replica: int = 0) -> list[str]:
    """What launch_triton_server.py runs for world size 1, with this replica's ports and shared-memory prefix."""
    ef = engine_facts(plan)
    command = ef.host_command if where == "host" else ef.container_command
    http, grpc, metrics = (p.port for p in ports(replica if where != "k8s" else 0))
    return [
        *command, f"--model-repository={repository(where)}", f"--grpc-port={grpc}", f"--http-port={http}",
        f"--metrics-port={metrics}", "--disable-auto-complete-config",
        f"--backend-config=python,shm-region-prefix-name=prefix{replica if where != 'k8s' else 0}_",
    ]


def model_ref(ref: A.ModelRef) -> A.ModelRef:
    """model.yaml names the model once for the host and the image: a local checkpoint is mounted at its own path."""
    if ref.mount_source and not ref.mount_relative:
        return ref.model_copy(update={"container": ref.host, "mount_target": ref.host})
    return ref


def llm_args(plan: DeploymentPlan, model: str) -> dict:
    """model.yaml: the LLM() arguments trtllm-serve builds from its flags (serve.py get_llm_args), the options file's
    kv_cache_config / speculative_config, and triton_config."""
    e, p = plan.engine, plan.parallelism
    f = triton_facts()
    args: dict = {"model": model, "backend": "pytorch"}
    args |= {"tensor_parallel_size": p.tensor_parallel_size, "pipeline_parallel_size": p.pipeline_parallel_size}
    if plan.model.family == "moe" and p.tensor_parallel_size > 1:
        args["moe_expert_parallel_size"] = p.tensor_parallel_size  # experts split over the TP ranks, as trtllm-serve's --ep_size
    args |= {
        "max_batch_size": e.max_num_seqs, "max_num_tokens": e.max_num_batched_tokens or e.max_model_len, "max_seq_len": e.max_model_len,
    }
    options = A.trtllm_options(plan)
    args["kv_cache_config"] = {"free_gpu_memory_fraction": e.gpu_memory_utilization, **options["kv_cache_config"]}
    if "speculative_config" in options:
        args["speculative_config"] = options["speculative_config"]
    args["triton_config"] = {"max_batch_size": f.max_batch_size, "decoupled": f.decoupled}
    return args


def model_code_steps(plan: DeploymentPlan, source: str, target_repository: str, python: str = "python3") -> list[PrepareStep]:
    """Fetch the release's LLM API model code (sparse checkout of one folder) and copy it beside model.yaml."""
    f = triton_facts()
    release = triton_release(plan.engine.version)
    folder = f"{source}/{f.model_code_path}"
    target = f"{target_repository}/{f.model_name}"
    return [
        PrepareStep(
            creates=f"{source}/.git",
            argv=["git", "clone", "--depth=1", f"--branch={release.model_code_ref}", "--filter=blob:none", "--sparse",
                  f.model_code_repo, source],
            what=f"fetch TensorRT-LLM {release.model_code_ref} (sparse: no files yet)",
        ),
        PrepareStep(
            creates=f"{folder}/1/model.py",
            argv=["git", "-C", source, "sparse-checkout", "set", f.model_code_path.rsplit("/", 1)[0]],
            what=f"check out {f.model_code_path.rsplit('/', 1)[0]} (the Triton LLM API model)",
        ),
        PrepareStep(
            creates=f"{target}/1/model.py",
            argv=[python, "-c", COPY_MODEL_CODE, folder, target],
            what=f"copy its model code (1/model.py and helpers) into {target}, keeping this folder's model.yaml and config.pbtxt",
        ),
    ]


def generate_path(plan: DeploymentPlan, stream: bool = False) -> str:
    return f"/v2/models/{plan.engine.served_model_name}/generate" + ("_stream" if stream else "")


def first_request(plan: DeploymentPlan, max_tokens: int) -> dict:
    """The generate extension's body for the tensorrt_llm model (its inputs, by name)."""
    return {"text_input": "Hello, my name is", "sampling_param_max_tokens": max_tokens, "sampling_param_exclude_input_from_output": True}
