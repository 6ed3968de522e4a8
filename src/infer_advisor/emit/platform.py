"""What differs between NVIDIA, AMD and CPU deployments: the image, how containers get the devices, and how pods
find the right nodes. Computed once per plan; templates only print these values.

    >>> from infer_advisor import advise
    >>> plan = advise(model="meta-llama/Llama-3.1-70B-Instruct", gpu="MI300X")
    >>> platform_for(plan, gpus=1).k8s_gpu_resource
    'amd.com/gpu'
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..errors import EmitError
from ..plan.models import DeploymentPlan
from ..engines.launch_facts import emit_facts, engine_facts

# Kubernetes extended resources of the vendors' device plugins (NVIDIA k8s-device-plugin, ROCm k8s-device-plugin).
GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
# Which variable restricts a process to some of the node's GPUs (CUDA runtime; ROCm's HIP runtime).
VISIBLE_DEVICES = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "HIP_VISIBLE_DEVICES"}
# ROCm containers need the kernel driver (/dev/kfd) and the render nodes (/dev/dri) and the groups that own them
# (ROCm docs, "Running ROCm Docker containers"; vLLM and SGLang ROCm docker run examples).
AMD_DEVICES = ["/dev/kfd", "/dev/dri"]
AMD_GROUPS = ["video", "render"]


class Platform(BaseModel):
    vendor: Literal["nvidia", "amd", "cpu"]
    image: str = Field(description="The engine image for this hardware (ROCm build on AMD, CUDA build on NVIDIA, CPU build).")
    from_image: str = Field(description="The image for a Dockerfile FROM line: pinned by digest where data/emit.yaml knows it.")
    k8s_gpu_resource: str | None
    visible_devices_env: str | None
    docker_device_args: list[str] = Field(description="docker run arguments that hand the GPUs to the container.")
    compose_devices: list[str] = Field(default_factory=list, description="Device files for compose (AMD).")
    compose_group_add: list[str] = Field(default_factory=list)
    node_label: str | None = Field(default=None, description="Node label naming the GPU model.")
    node_label_values: list[str] = Field(default_factory=list, description="Values of that label for the plan's GPU.")
    tolerations: list[dict] = Field(default_factory=list)


def _sm_image(template: str, sms: list[int], compute_capability: float, engine: str) -> str:
    sm = round(compute_capability * 10)
    fitting = [s for s in sms if s <= sm]
    if not fitting:
        raise EmitError(f"{engine} publishes CUDA images for sm{min(sms)} and newer; this GPU is sm{sm}.")
    return template.replace("{sm}", str(max(fitting)))


def _at_version(plan: DeploymentPlan, image: str) -> str:
    """``image`` (tagged with the pinned engine version) at the version the plan is for (``--engine-version``)."""
    from ..engines.profiles import engine_profile

    pinned, wanted = engine_profile(plan.engine.name).version, plan.engine.version
    return image.replace(pinned, wanted) if wanted != pinned else image


def _image(plan: DeploymentPlan, vendor: str) -> str:
    e = plan.engine
    ef = engine_facts(plan)
    if vendor == "cpu":
        return e.image
    gpu = plan.hardware.gpus[0]
    if vendor == "amd":
        from ..engines.profiles import engine_profile

        profile = engine_profile(e.name)
        image = profile.rocm_image_by_gpu.get(gpu.name) or profile.rocm_image
        if image is None:
            raise EmitError(f"{e.name} has no ROCm build to emit for {gpu.name}; plan with --engine vllm (ROCm image).")
        return _at_version(plan, image)
    if ef.gpu_image and ef.gpu_image_by_sm:
        return _at_version(plan, _sm_image(ef.gpu_image, ef.gpu_image_by_sm, gpu.compute_capability, e.name))
    return _at_version(plan, ef.gpu_image) if ef.gpu_image else e.image


def _label_values(plan: DeploymentPlan, vendor: str) -> list[str]:
    gpu = plan.hardware.gpus[0]
    known = emit_facts().gpu_node_label_values.get(gpu.name)
    if known:
        return list(known)
    if vendor == "nvidia":  # GPU Feature Discovery: the NVML product name with spaces as dashes
        return sorted({n.strip().replace(" ", "-") for n in gpu.product_names if n.strip()})
    return []


def platform_for(plan: DeploymentPlan, gpus: int) -> Platform:
    """The platform of ``plan``; ``gpus``: GPUs one container uses."""
    facts = emit_facts()
    vendor = "cpu" if plan.hardware.kind == "cpu" else plan.hardware.gpus[0].vendor
    if vendor not in ("cpu", "nvidia", "amd"):
        raise EmitError(f"No artifacts for {vendor} GPUs; plan for NVIDIA, AMD or the CPU.")
    image = _image(plan, vendor)
    if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]:
        raise EmitError(f"Image '{image}' is not pinned to a version; fix data/engines.yaml or data/emit.yaml.")
    digest = facts.base_image_digests.get(image)
    out = dict(
        vendor=vendor, image=image, from_image=f"{image}@{digest}" if digest else image,
        k8s_gpu_resource=GPU_RESOURCES.get(vendor), visible_devices_env=VISIBLE_DEVICES.get(vendor),
    )
    if vendor == "nvidia":
        out["docker_device_args"] = ["--gpus", str(gpus)]
    elif vendor == "amd":
        out["docker_device_args"] = [*(f"--device={d}" for d in AMD_DEVICES), *(f"--group-add={g}" for g in AMD_GROUPS)]
        out["compose_devices"] = AMD_DEVICES
        out["compose_group_add"] = AMD_GROUPS
    else:
        out["docker_device_args"] = []
    if vendor != "cpu":
        out["node_label"] = facts.gpu_node_labels.get(vendor)
        out["node_label_values"] = _label_values(plan, vendor)
        # GPU nodes are commonly tainted `<resource>:NoSchedule` so that only GPU pods land there.
        out["tolerations"] = [{"key": GPU_RESOURCES[vendor], "operator": "Exists", "effect": "NoSchedule"}]
    return Platform(**out)
