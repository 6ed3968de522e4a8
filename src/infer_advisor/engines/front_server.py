"""What the emit stage asks of an engine beyond its command line, in one table per engine and per server.

- :func:`front_server`: a server started in front of the engine instead of its own (``plan.engine.server``;
  Triton Inference Server for TensorRT-LLM with ``--stack nvidia-triton``): its name, ports, command per replica,
  first request, model repository and image build steps. ``None``: the engine serves itself.
- :func:`launch_files`: files the engine or its server reads at start (TensorRT-LLM's options YAML, Triton's model
  repository), as plain values; the emit stage writes them and renders a template where one is named.

The emitters never name an engine or a server: a new one is an entry in ``SERVERS`` or ``FILES`` and its builder
here (or in its own module in this package), with its templates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import argv as A
from . import triton_launch as T
from .prepare import PrepareStep
from .triton import triton_facts, triton_release

if TYPE_CHECKING:  # the plan is read, never built here (engines sit below plan; see tests/test_import_graph.py)
    from ..plan.models import DeploymentPlan

# render(kind, suffix, **values) -> text: the emit stage's template for this plan's engine ("config", ".pbtxt").
Render = Callable[..., str]


@dataclass(frozen=True)
class FrontServer:
    """A server in front of the engine: every value the artifacts need from it."""

    display: Callable[[DeploymentPlan], str]  # "Triton Inference Server 2.71.0 with TensorRT-LLM"
    ports: Callable[[int], list[T.TritonPort]]  # named ports of replica i on one node (the first is HTTP)
    argv: Callable[[DeploymentPlan, A.Where, int], list[str]]  # its command for replica i (host/container/k8s)
    model_ref: Callable[[A.ModelRef], A.ModelRef]  # where its model files name the checkpoint
    first_request: Callable[[DeploymentPlan, int], tuple[str, dict]]  # (path, JSON body) of a first completion
    model_repository: str  # its model folder inside the built image
    model_code_ref: Callable[[str], str]  # the source ref its model code is installed from, by engine version
    image_build_steps: Callable[[DeploymentPlan], list[PrepareStep]]  # what the Dockerfile runs to install that code
    unlimited_memlock: bool  # its documented `docker run` lifts the memlock limit


@dataclass(frozen=True)
class LaunchFile:
    """A file the engine reads at start: written beside the artifacts, copied into the image, bind-mounted by compose
    and held in a ConfigMap on Kubernetes (``k8s_configmap=False``: baked into the built image only)."""

    name: str
    text: str
    container_dir: str
    k8s_configmap: bool = True


TRITON = FrontServer(
    display=lambda plan: f"Triton Inference Server {plan.engine.server_version} with TensorRT-LLM",
    ports=T.ports,
    argv=T.tritonserver_argv,
    model_ref=T.model_ref,
    first_request=lambda plan, max_tokens: (T.generate_path(plan), T.first_request(plan, max_tokens)),
    model_repository=T.CONTAINER_REPOSITORY,
    model_code_ref=lambda version: triton_release(version).model_code_ref,
    image_build_steps=lambda plan: T.model_code_steps(plan, T.BUILD_SOURCE, T.CONTAINER_REPOSITORY),
    unlimited_memlock=True,
)
SERVERS: dict[str, FrontServer] = {"triton": TRITON}


def front_server(plan: DeploymentPlan) -> FrontServer | None:
    """The server in front of the plan's engine, or None when the engine serves itself."""
    return SERVERS.get(plan.engine.server) if plan.engine.server else None


def _trtllm_options(plan: DeploymentPlan, ref: A.ModelRef, render: Render) -> list[LaunchFile]:
    import yaml

    text = (
        f"# TensorRT-LLM {plan.engine.version} LLM API options for trtllm-serve --extra_llm_api_options "
        "(written by infer-advisor).\n" + yaml.safe_dump(A.trtllm_options(plan), sort_keys=False)
    )
    return [LaunchFile(name=A.TRTLLM_OPTIONS, text=text, container_dir=A.CONTAINER_CONFIG_DIR)]


def _triton_repository(plan: DeploymentPlan, ref: A.ModelRef, render: Render) -> list[LaunchFile]:
    """Triton's model repository, baked into the built image: config.pbtxt (a template) and 1/model.yaml."""
    import yaml

    f = triton_facts()
    folder = f"{T.MODEL_REPOSITORY}/{f.model_name}"
    model_yaml = (
        f"# TensorRT-LLM {plan.engine.version} LLM() arguments for Triton's tensorrt_llm model (written by infer-advisor);\n"
        "# triton_config must agree with config.pbtxt (max_batch_size, decoupled).\n"
        + yaml.safe_dump(T.llm_args(plan, ref.container), sort_keys=False)
    )
    pbtxt = render("config", ".pbtxt", model_name=f.model_name, inputs=f.model_inputs, outputs=f.model_outputs,
                   decoupled=f.decoupled, max_batch_size=f.max_batch_size, source=f.model_io_source)
    return [
        LaunchFile(name=f"{folder}/config.pbtxt", text=pbtxt, container_dir=T.CONTAINER_REPOSITORY, k8s_configmap=False),
        LaunchFile(name=f"{folder}/1/model.yaml", text=model_yaml, container_dir=T.CONTAINER_REPOSITORY, k8s_configmap=False),
    ]


# Keyed by the server in front of the engine, else the engine.
FILES: dict[str, Callable[[DeploymentPlan, A.ModelRef, Render], list[LaunchFile]]] = {
    "trtllm": _trtllm_options,
    "triton": _triton_repository,
}


def launch_files(plan: DeploymentPlan, ref: A.ModelRef, render: Render) -> list[LaunchFile]:
    """The files the plan's engine (or the server in front of it) reads at start; none for most engines."""
    build = FILES.get(plan.engine.server or plan.engine.name)
    return build(plan, ref, render) if build is not None else []
