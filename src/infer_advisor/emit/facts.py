"""The emit stage's data file (``data/emit.yaml``): engine commands, container paths, pinned packages."""

from __future__ import annotations

from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from .._data import load_validated
from .._paths import shipped


class EngineEmitFacts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host_command: list[str] = Field(description="How the engine starts where it is installed.")
    container_command: list[str] = Field(description="How it starts inside its image.")
    cache_dir: str = Field(description="Hugging Face cache folder inside the image.")
    gpu_image: str | None = Field(default=None, description="Image for GPU plans when engines.yaml's is a CPU build.")
    kv_cache_dtype: dict[str, str] = Field(description="Plan kv_cache_dtype -> the engine's flag value.")
    source: str


class EmitFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engines: dict[str, EngineEmitFacts]
    pip_packages: dict[str, list[str]]
    pip_packages_source: str
    apt_packages: list[str]
    apt_packages_source: str
    startup_seconds_base: int = Field(gt=0)
    startup_seconds_per_gib: float = Field(ge=0)
    startup_source: str
    probe_period_seconds: int = Field(gt=0)
    probe_period_source: str
    cache_headroom: float = Field(ge=1)
    cache_headroom_source: str


@cache
def emit_facts() -> EmitFile:
    return load_validated(shipped("data") / "emit.yaml", EmitFile)
