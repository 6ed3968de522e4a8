"""Which checkpoint formats an engine loads on which platform (``data/formats_by_platform.yaml``), read from the
engines' own source at their pinned versions.

    >>> loadable("sglang", "rocm", "modelopt-fp8").loads
    False
    >>> loadable("vllm", "rocm", "modelopt-fp8", version="0.20.0").loads
    False

Each answer carries the engine file it came from. Engines without a row (transformers, CTranslate2, MLC, ...) answer
None: the table says nothing about them and the caller keeps its own checks.
"""


from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._data import load_validated
from .._paths import shipped

Platform = Literal["cuda", "rocm", "cpu"]
PLATFORMS: tuple[str, ...] = ("cuda", "rocm", "cpu")


class Cell(BaseModel):
    """Whether one engine loads one checkpoint format on one platform, and where that was read."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    loads: bool
    min_cc: float | None = Field(default=None, gt=0, description="Compute capability the engine requires (CUDA).")
    since: str | None = Field(default=None, description="First engine version the cell holds for.")
    before: str | None = Field(default=None, description="First engine version it no longer holds for.")
    gfx: list[str] | None = Field(default=None, description="AMD architectures it is limited to (ROCm).")
    source: str = Field(min_length=8)


class Answer(BaseModel):
    """The table's answer for one engine version, platform, format and GPU (built by :func:`loads` from the
    validated table with ``model_construct``: nothing in it comes from outside)."""

    model_config = ConfigDict(defer_build=True)

    loads: bool
    why: str = Field(description="One line: what the engine does with this format here.")
    source: str


class EngineFormats(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    version: str
    cuda: dict[str, Cell]
    rocm: dict[str, Cell]
    cpu: dict[str, Cell]


class FormatInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    detect: str = Field(min_length=8)


class FormatsByPlatform(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    formats: dict[str, FormatInfo]
    engines: dict[str, EngineFormats]
    preference: dict[Platform, list[str]]
    preference_source: str = Field(min_length=8)

    @model_validator(mode="after")
    def _complete(self) -> "FormatsByPlatform":
        known = set(self.formats)
        for engine, table in self.engines.items():
            for platform in PLATFORMS:
                cells = getattr(table, platform)
                unknown = set(cells) - known - {"otherwise"}
                if unknown:
                    raise ValueError(f"engines.{engine}.{platform}: unknown formats {sorted(unknown)}; known: {sorted(known)}")
                missing = known - set(cells)
                if missing and "otherwise" not in cells:
                    raise ValueError(f"engines.{engine}.{platform}: no cell for {sorted(missing)} and no 'otherwise'")
        for platform, order in self.preference.items():
            if set(order) - known:
                raise ValueError(f"preference.{platform}: unknown formats {sorted(set(order) - known)}")
        return self


@cache
def formats_by_platform() -> FormatsByPlatform:
    return load_validated(shipped("data") / "formats_by_platform.yaml", FormatsByPlatform)


def _holds(cell: Cell, version: str | None) -> bool:
    from .versions import version_key

    if version is None:
        return True
    v = version_key(version)
    return (cell.since is None or version_key(cell.since) <= v) and (cell.before is None or v < version_key(cell.before))


def loadable(
    engine: str, platform: str, fmt: str, *, version: str | None = None, compute_capability: float | None = None,
    gfx: str | None = None,
) -> Answer | None:
    """Does ``engine`` (at ``version``, default the pinned one) load checkpoint format ``fmt`` on ``platform``?
    None when the table has no row for the engine."""
    table = formats_by_platform().engines.get(engine)
    if table is None:
        return None
    cells = getattr(table, platform)
    cell = cells.get(fmt) or cells["otherwise"]
    where = f"{engine} {version or table.version} on {platform.upper() if platform != 'rocm' else 'ROCm'}"
    loads = cell.loads if _holds(cell, version) else not cell.loads
    if not loads:
        return Answer.model_construct(loads=False, why=f"{where} does not load {fmt} checkpoints", source=cell.source)
    if platform == "cuda" and cell.min_cc and compute_capability and compute_capability + 1e-9 < cell.min_cc:
        return Answer.model_construct(loads=False, why=f"{where} needs compute capability {cell.min_cc:g} for {fmt} (this GPU: {compute_capability:g})",
                                      source=cell.source)
    if platform == "rocm" and cell.gfx and gfx and not any(gfx.startswith(g) for g in cell.gfx):
        return Answer.model_construct(loads=False, why=f"{where} loads {fmt} only on {', '.join(cell.gfx)} (this GPU: {gfx})", source=cell.source)
    return Answer.model_construct(loads=True, why=f"{where} loads {fmt} checkpoints", source=cell.source)


def preference(platform: str) -> list[str]:
    """Formats a plan on ``platform`` may serve from a published checkpoint, best first (others are never served)."""
    return list(formats_by_platform().preference.get(platform, []))


# The checkpoint format a plan's weight format (data/formats.yaml key) is stored in when no published checkpoint says
# otherwise. fp8 alone is ambiguous (ModelOpt, compressed-tensors, plain fp8): published entries state it.
_DEFAULT_FORMAT = {
    "none": "bf16", "awq": "awq", "gptq": "gptq", "compressed-tensors-w4a16": "compressed-tensors", "int8": "compressed-tensors",
    "fp8-block": "fp8-block", "mxfp4-experts": "mxfp4", "nvfp4": "modelopt-nvfp4",
}


def checkpoint_format(method: str, *, published_format: str | None = None, online: bool = False) -> str | None:
    """The checkpoint format the engine is given for weight format ``method``: a published checkpoint's own format,
    ``fp8-online`` for a bf16 checkpoint quantized while loading, else the usual format of ``method`` (None: the table
    has no column for it, e.g. EXL2 or MLC's own formats)."""
    if published_format:
        return published_format
    if online:
        return "fp8-online"
    if method.startswith("gguf-"):
        return "gguf"
    return _DEFAULT_FORMAT.get(method)
