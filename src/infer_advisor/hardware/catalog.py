"""The GPU catalog (``data/gpus.yaml``): one cached, validated loader and name lookup.

    >>> from infer_advisor.hardware import lookup_gpu
    >>> lookup_gpu("rtx4090").name
    'RTX-4090'

Names match case- and punctuation-insensitively (``A100_80GB`` == ``a100-80gb``), through the entry's
name, its aliases, and the names NVML reports (``nvml_names``).
"""


import re
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, field_validator, model_validator

from .._paths import shipped
from ..errors import DataFileError, UnknownGPUError, close_matches
from ..units import GB, GIB, MIB  # noqa: F401  (read from here by the doctor)
from .facts import GPUInfo

CATALOG_FILE = "gpus.yaml"
TFLOPS_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")
Dtype = Literal["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4"]

# Prefixes NVML puts before the product name ("NVIDIA GeForce RTX 4090", "Tesla T4").
_VENDOR_WORDS = ("nvidia", "geforce", "tesla", "quadro", "amd", "instinct", "radeon")


class GPUEntry(BaseModel):
    """One catalog entry, as written in gpus.yaml (units in the file's header)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="Canonical name, e.g. 'A100-80GB'.")
    vendor: Literal["nvidia", "amd", "intel"] = "nvidia"
    aliases: list[str] = Field(default_factory=list)
    nvml_names: list[str] = Field(default_factory=list)
    # Upper bounds a factor of ~10 above the largest product (B300 288 GiB, 8 TB/s, 15 PFLOP/s FP4 dense; NVLink 5
    # 1.8 TB/s): a larger figure is a unit mistake, and it would make any model "fit" at "inf TB/s".
    memory_gib: PositiveFloat = Field(le=4096)
    memory_type: str
    memory_bandwidth_gb_s: PositiveFloat = Field(le=100_000)
    tflops: dict[Dtype, Annotated[PositiveFloat, Field(le=200_000)]] = Field(min_length=1)
    compute_capability: float = Field(ge=0, le=20)
    gfx_arch: str | None = Field(default=None, description="AMD GPU architecture (gfx942 = MI300X/MI325X): what ROCm engines gate kernels on.")
    gfx_arch_source: str | None = None
    interconnect: Literal["nvlink", "pcie", "infinity-fabric"]
    interconnect_gb_s: PositiveFloat = Field(le=20_000)
    notes: str | None = None
    unified_memory: bool = Field(
        default=False, description="Memory is shared with the CPU and the OS (DGX Spark GB10): not all of it is free."
    )
    source: str = Field(min_length=8, description="Datasheet URL or document name.")
    driver_memory_mib: PositiveFloat | None = Field(default=None, description="Total the driver reports (NVML / nvidia-smi).")
    driver_memory_source: str | None = None
    cuda_memory_gib: PositiveFloat | None = Field(default=None, description="Total CUDA gives a process (torch.cuda.mem_get_info).")
    cuda_memory_source: str | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _no_bools_as_numbers(cls, value, info):
        """``memory_gib: yes`` is a YAML bool, not 1 GiB."""
        if isinstance(value, bool) and info.field_name != "unified_memory":
            raise ValueError("a number, not true/false")
        if isinstance(value, dict) and any(isinstance(v, bool) for v in value.values()):
            raise ValueError("numbers, not true/false")
        return value

    @model_validator(mode="after")
    def _figures_have_sources(self) -> "GPUEntry":
        for figure in ("driver_memory", "cuda_memory"):
            value = getattr(self, f"{figure}_mib" if figure == "driver_memory" else f"{figure}_gib")
            if value is not None and not (getattr(self, f"{figure}_source") or "").strip():
                raise ValueError(f"{figure}_{'mib' if figure == 'driver_memory' else 'gib'} needs {figure}_source")
        return self

    def cuda_reserve_bytes(self) -> int:
        """NVML total minus the CUDA-visible total: this entry's own pair, else the catalog's default."""
        if self.driver_memory_mib and self.cuda_memory_gib:
            return max(int(self.driver_memory_mib * MIB - self.cuda_memory_gib * GIB), 0)
        return catalog().cuda_reserve_mib * MIB

    def usable_memory(self) -> tuple[int, str]:
        """(bytes an engine can budget on, where the figure comes from)."""
        if self.cuda_memory_gib:
            return int(self.cuda_memory_gib * GIB), f"catalog: CUDA-visible total ({self.cuda_memory_source})"
        reserve = catalog().cuda_reserve_mib
        if self.driver_memory_mib:
            return int((self.driver_memory_mib - reserve) * MIB), (
                f"catalog: driver total {self.driver_memory_mib:g} MiB ({self.driver_memory_source}) minus the {reserve} MiB CUDA reserve"
            )
        return int(self.memory_gib * GIB - reserve * MIB), (
            f"estimated: datasheet {self.memory_gib:g} GiB minus the {reserve} MiB CUDA reserve (no published driver total)"
        )

    def to_info(self) -> GPUInfo:
        """This entry as the plan's GPU: built from the validated entry, typed as GPUInfo's fields are (no schema
        to build on the plan path)."""
        usable, usable_source = self.usable_memory()
        return GPUInfo.model_construct(
            name=self.name,
            vendor=self.vendor,
            memory_bytes=int(self.memory_gib * GIB),
            driver_memory_bytes=int(self.driver_memory_mib * MIB) if self.driver_memory_mib else None,
            usable_memory_bytes=usable,
            usable_memory_source=usable_source,
            compute_capability=self.compute_capability,
            gfx_arch=self.gfx_arch,
            memory_bandwidth_bytes_per_s=self.memory_bandwidth_gb_s * GB,
            tflops=dict(self.tflops),
            interconnect=self.interconnect,
            interconnect_bandwidth_bytes_per_s=self.interconnect_gb_s * GB,
            source="catalog",
            figure_sources={f: "catalog" for f in _FIGURES},
            aliases=list(self.aliases),
            memory_type=self.memory_type,
            catalog_source=self.source,
            catalog_notes=self.notes,
            unified_memory=self.unified_memory,
        )


_FIGURES = (
    "memory_bytes",
    "memory_bandwidth_bytes_per_s",
    "compute_capability",
    "tflops",
    "interconnect",
    "interconnect_bandwidth_bytes_per_s",
)


class NVLinkGeneration(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    nvml_version: int = Field(ge=1, description="Code nvmlDeviceGetNvLinkVersion returns.")
    generation: str
    gb_s_per_direction: PositiveFloat = Field(description="One link, one direction, GB/s.")
    source: str = Field(min_length=8)


class PCIeGeneration(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    generation: int = Field(ge=1)
    gb_s_per_lane: PositiveFloat = Field(description="One lane, one direction, GB/s after encoding.")
    source: str = Field(min_length=8)


class GPUCatalog(BaseModel):
    """The whole gpus.yaml file."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    nvlink_links: list[NVLinkGeneration]
    cuda_reserve_mib: int = Field(ge=0, description="NVML total minus CUDA-visible total where a GPU has no pair of its own.")
    cuda_reserve_source: str = Field(min_length=8)
    pcie_lanes: list[PCIeGeneration]
    gpus: list[GPUEntry] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_keys(self) -> "GPUCatalog":
        seen: dict[str, str] = {}
        for entry in self.gpus:
            for key in {normalize(n) for n in (entry.name, *entry.aliases, *entry.nvml_names)}:
                other = seen.setdefault(key, entry.name)
                if other != entry.name:
                    raise ValueError(
                        f"entry '{entry.name}': name/alias '{key}' also resolves to '{other}' (names must be unique)"
                    )
        return self

    def nvlink_gb_s(self, nvml_version: int | None) -> float | None:
        for gen in self.nvlink_links:
            if gen.nvml_version == nvml_version:
                return gen.gb_s_per_direction
        return None

    def pcie_gb_s(self, generation: int | None, width: int | None) -> float | None:
        if not generation or not width:
            return None
        for gen in self.pcie_lanes:
            if gen.generation == generation:
                return gen.gb_s_per_lane * width
        return None


def normalize(name: str) -> str:
    """Lower-case and drop everything but letters and digits: 'RTX 4090' -> 'rtx4090'."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _entry_name(err: ValidationError, raw: object) -> str:
    loc = err.errors()[0].get("loc", ())
    if len(loc) >= 2 and loc[0] == "gpus" and isinstance(loc[1], int) and isinstance(raw, dict):
        try:
            return f"entry '{raw['gpus'][loc[1]].get('name', '?')}'"
        except (KeyError, IndexError, AttributeError, TypeError):
            pass
    return ""


def load_catalog(path: Path) -> GPUCatalog:
    """Read and validate a catalog file; errors name the file and the entry (the validated catalog is kept for
    the next run: ``_snapshot``)."""
    from .._data import format_validation_error, parse_structured
    from .._snapshot import validated_snapshot
    from ..bounded_read import read_bounded

    def validate(raw: object) -> GPUCatalog:
        try:
            return GPUCatalog.model_validate(raw)
        except ValidationError as err:
            where = _entry_name(err, raw)
            problem = format_validation_error(err)
            raise DataFileError(str(path), f"{where}: {problem}" if where else problem) from None

    raw = read_bounded(path, "data")
    return validated_snapshot(path, raw, "gpu-catalog", lambda: validate(parse_structured(path, raw, check=validate)))


@cache
def catalog() -> GPUCatalog:
    """The shipped catalog, loaded once."""
    return load_catalog(shipped("data") / CATALOG_FILE)


@cache
def _index() -> dict[str, GPUEntry]:
    out: dict[str, GPUEntry] = {}
    for entry in catalog().gpus:
        for n in (entry.name, *entry.aliases, *entry.nvml_names):
            out[normalize(n)] = entry
    return out


def gpu_catalog() -> list[GPUInfo]:
    """Every catalog entry as a :class:`GPUInfo` (``source='catalog'``), in file order."""
    return [e.to_info() for e in catalog().gpus]


def find_entry(name: str) -> GPUEntry | None:
    """The entry whose name, alias or NVML name is ``name`` (case/punctuation-insensitive), else None."""
    return _index().get(normalize(name))


def lookup_gpu(name: str) -> GPUInfo:
    """Catalog figures for ``name``: ``lookup_gpu("h100").name == 'H100-80GB'``.

    Raises :class:`UnknownGPUError` with the closest catalog names when nothing matches.
    """
    entry = find_entry(name)
    if entry is None:
        raise UnknownGPUError(name, suggest_names(name))
    return entry.to_info()


def suggest_names(name: str) -> list[str]:
    """Catalog names close to ``name`` (through names and aliases), best first."""
    pool = {}
    for entry in catalog().gpus:
        for n in (entry.name, *entry.aliases):
            pool.setdefault(n, entry.name)
    hits = close_matches(name, pool)
    key = normalize(name)
    if key:
        hits += [n for n in pool if normalize(n).startswith(key) or (len(key) > 2 and key in normalize(n))]
    out: list[str] = []
    for hit in hits:
        canonical = pool[hit]
        if canonical not in out:
            out.append(canonical)
    return out[:3]


def match_probed_name(probed: str) -> tuple[GPUEntry | None, str]:
    """Catalog entry for a name NVML reported, and how it matched ('exact', 'prefix' or 'none').

    Exact: the name (vendor words dropped) is an entry's name, alias or NVML name. Prefix: a catalog
    key starts the name and the next character is not a digit ('NVIDIA H200 NVL' -> H200, but
    'A1000' never -> A100).
    """
    key = normalize(probed)
    entry = _index().get(key)
    if entry is not None:
        return entry, "exact"
    words = [w for w in re.split(r"[\s_]+", probed.strip()) if w.lower() not in _VENDOR_WORDS]
    stripped = normalize(" ".join(words))
    entry = _index().get(stripped)
    if entry is not None:
        return entry, "exact"
    best: tuple[int, GPUEntry] | None = None
    for k, e in _index().items():
        if len(k) >= 2 and stripped.startswith(k) and not stripped[len(k) : len(k) + 1].isdigit():
            if best is None or len(k) > best[0]:
                best = (len(k), e)
    return (best[1], "prefix") if best else (None, "none")
