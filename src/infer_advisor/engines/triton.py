"""Triton Inference Server facts (``data/triton.yaml``): the release that ships each TensorRT-LLM version, its image,
ports, health path and the TensorRT-LLM backend's LLM API model. Used by the planner (``--stack nvidia-triton``) and
the emit stage.

    >>> from infer_advisor.engines.triton import triton_release
    >>> triton_release("1.2.1").triton
    '26.07'
"""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class TritonRelease(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    triton: str = Field(description="Triton release (yy.mm) whose trtllm-python-py3 container ships the engine version.")
    triton_server_version: str = Field(description="The tritonserver version of that release, e.g. 2.71.0.")
    source: str
    model_code_ref: str = Field(description="Git ref (release branch) of TensorRT-LLM whose triton_backend LLM API model is installed.")
    model_code_source: str


class TritonFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    releases: dict[str, TritonRelease]
    image: str = Field(description="Image name with {triton} for the release.")
    image_source: str
    model_code_repo: str
    model_code_path: str
    model_name: str
    model_name_source: str
    http_port: int
    grpc_port: int
    metrics_port: int
    ports_source: str
    health_path: str
    health_source: str
    cuda_memory_pool_bytes: int = Field(ge=0)
    cuda_memory_pool_source: str
    launch_source: str
    decoupled: bool
    max_batch_size: int = Field(ge=0)
    triton_config_source: str
    model_inputs: list[tuple[str, str, list[int]]]
    model_outputs: list[tuple[str, str, list[int]]]
    model_io_source: str

    def image_for(self, release: TritonRelease) -> str:
        return self.image.format(triton=release.triton)


@cache
def triton_facts() -> TritonFacts:
    return load_validated(shipped("data") / "triton.yaml", TritonFacts)


def triton_release(engine_version: str) -> TritonRelease:
    """The Triton release for a TensorRT-LLM version; an unknown version is one line naming the known ones."""
    from ..errors import RequestError

    facts = triton_facts()
    if engine_version not in facts.releases:
        raise RequestError(
            f"No Triton release is known to ship TensorRT-LLM {engine_version} (known: {', '.join(facts.releases)}); "
            "add it to data/triton.yaml from Triton's compatibility matrix."
        )
    return facts.releases[engine_version]
