"""What starts an engine: the full command line and the preparation steps before it, dispatched per engine.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB")
    >>> from infer_advisor.engines.argv import model_ref
    >>> launch_argv(plan, model_ref(plan), "host")
    ['vllm', 'serve', 'meta-llama/Llama-2-7b-hf', '--tensor-parallel-size', '1', ...]

The per-engine flag builders are in ``argv.py``, the conversion steps (MLC LLM, ExLlamaV2) in ``prepare.py`` and
Triton's model repository in ``triton_launch.py``; this module only picks between them, so none of them imports
another's dispatcher.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import EmitError
from .argv import FLAGS, ModelRef, Where
from .launch_facts import emit_facts
from .prepare import PrepareStep, exllamav2_steps, mlc_steps, prepared_model
from .triton_launch import HOST_SOURCE, MODEL_REPOSITORY, model_code_steps, tritonserver_argv

if TYPE_CHECKING:
    from ..plan.models import DeploymentPlan


def launch_argv(plan: DeploymentPlan, ref: ModelRef, where: Where) -> list[str]:
    """The full command (executable + flags) that starts the plan's engine on the host, in its container, or in a
    Kubernetes pod (``k8s``: one replica per pod, so no in-process data parallelism)."""
    name = plan.engine.name
    if name not in FLAGS:
        raise EmitError(f"No argument builder for engine '{name}'.")
    if plan.parallelism.nodes > 1 and name != "vllm":
        raise EmitError(f"Multi-node artifacts are emitted for vLLM (Ray) only, not {name}; plan with --engine vllm.")
    if plan.engine.server == "triton":  # the engine's settings live in the model repository (model.yaml)
        return tritonserver_argv(plan, where)
    facts = emit_facts().engines[name]
    command = facts.host_command if where == "host" else facts.container_command
    model = ref.host if where == "host" else ref.container
    if facts.builds_image:  # MLC / ExLlamaV2 serve the folder their own conversion step writes
        model = prepared_model(plan, ref, where)
    return [*command, *FLAGS[name](plan, model, where)]


def prepare_steps(plan: DeploymentPlan, ref: ModelRef, where: Where) -> list[PrepareStep]:
    if plan.engine.server == "triton":  # the image build installs the model code; on the host serve.sh does
        return model_code_steps(plan, HOST_SOURCE, MODEL_REPOSITORY) if where == "host" else []
    if plan.engine.name == "mlc":
        return mlc_steps(plan, ref, where)
    if plan.engine.name == "exllamav2":
        return exllamav2_steps(plan, ref, where)
    return []
