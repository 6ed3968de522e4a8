"""The quantization methods and backends, read from ``data/quantize/methods.yaml``; and the backend contract.

A backend is a module ``infer_advisor/quantize/<module>.py`` exposing::

    def run(source: Path, work_dir: Path, spec: MethodSpec, calibration: list[str],
            progress: Callable[[str], None]) -> list[str]:
        '''Write the finished model into ``work_dir`` (which exists and is empty); return notes.'''

and optionally::

    def check(model_dir: Path, spec: MethodSpec, *, prompt: str, max_new_tokens: int,
              eval_texts: list[str] | None) -> QuickCheck:
        '''Reload ``model_dir`` with the matching runtime and generate; perplexity when ``eval_texts``.'''

The shared work (resolving the model, the output directory, calibration text, sizes, the summary) lives in
:mod:`infer_advisor.quantize.core`; a backend only quantizes.
"""

from __future__ import annotations

from functools import cache
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import EngineNotInstalledError, RequestError, close_matches

# Weights are quantized in groups of this many input columns unless asked otherwise: the AWQ paper's setting
# and the default of AutoAWQ's and llm-compressor's W4A16 schemes (https://arxiv.org/abs/2306.00978, sec. 5).
DEFAULT_GROUP_SIZE = 128


class BackendEntry(BaseModel):
    """One backend row of methods.yaml."""

    model_config = ConfigDict(extra="forbid")

    module: str = Field(description="Module under infer_advisor.quantize implementing run() (and check()).")
    requires: list[str] = Field(description="Import names that must be importable before work starts.")
    extra: str = Field(description="The pip extra that installs the backend: infer-advisor[<extra>].")
    source: str = Field(description="Where the backend is documented.")


class MethodEntry(BaseModel):
    """One method row of methods.yaml."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The --method value.")
    backends: list[str] = Field(min_length=1, description="Backends that write this method; the first is the default.")
    bits: int = Field(gt=0, le=32, description="Bits per quantized weight.")
    group_size: bool = Field(default=False, description="True when a group size applies to this method.")
    calibration: bool = Field(default=False, description="True when the method reads calibration text.")
    ct2_quantization: str | None = Field(default=None, description="CTranslate2 `quantization` argument.")
    gguf_type: str | None = Field(default=None, description="GGUF weight type, e.g. q4_k_m.")
    description: str = Field(description="One line for `--help` and the result.")
    format: str = Field(description="The on-disk format written and who loads it.")
    source: str = Field(description="Where the method is defined.")


class MethodTable(BaseModel):
    """The whole of methods.yaml."""

    model_config = ConfigDict(extra="forbid")

    backends: dict[str, BackendEntry]
    methods: list[MethodEntry]

    @model_validator(mode="after")
    def _known_backends(self) -> MethodTable:
        for m in self.methods:
            for b in m.backends:
                if b not in self.backends:
                    raise ValueError(f"method '{m.name}' names unknown backend '{b}'")
        return self


class MethodSpec(BaseModel):
    """A method resolved for one run: what a backend's ``run()`` receives."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="The method, e.g. awq or ct2-int8.")
    backend: str = Field(description="The backend writing it, e.g. llmcompressor.")
    bits: int = Field(description="Bits per quantized weight.")
    group_size: int | None = Field(default=None, description="Input columns per quantization group; None if n/a.")
    calibration: bool = Field(default=False, description="True when the backend uses the calibration text.")
    ct2_quantization: str | None = Field(default=None, description="CTranslate2 `quantization` argument.")
    gguf_type: str | None = Field(default=None, description="GGUF weight type (f16, q8_0, q4_k_m, q4_0).")
    num_samples: int = Field(default=64, description="Calibration samples to use at most.")
    extra: str = Field(description="The pip extra that installs the backend.")
    format: str = Field(description="The on-disk format written.")


@cache
def method_table() -> MethodTable:
    """The validated methods.yaml (read once)."""
    from .._data import load_validated
    from .._paths import shipped

    return load_validated(shipped("data") / "quantize" / "methods.yaml", MethodTable)


def method_names() -> list[str]:
    return [m.name for m in method_table().methods]


def backend_names() -> list[str]:
    return list(method_table().backends)


def resolve_method(
    name: str, backend: str | None = None, *, group_size: int = DEFAULT_GROUP_SIZE, num_samples: int = 64
) -> MethodSpec:
    """The :class:`MethodSpec` for ``name`` on ``backend`` (default: the method's first backend).

    >>> resolve_method("ct2-int8").ct2_quantization
    'int8'
    """
    table = method_table()
    entry = next((m for m in table.methods if m.name == name), None)
    if entry is None:
        hint = close_matches(name, method_names())
        did = f" Did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
        raise RequestError(f"Unknown quantization method '{name}'.{did} Choose from: {', '.join(method_names())}.")
    chosen = backend or entry.backends[0]
    if chosen not in entry.backends:
        raise RequestError(
            f"Method '{name}' has no backend '{chosen}'. Use --backend {' or '.join(entry.backends)}."
        )
    if group_size <= 0:
        raise RequestError(f"--group-size must be positive, got {group_size}.")
    back = table.backends[chosen]
    return MethodSpec(
        name=entry.name,
        backend=chosen,
        bits=entry.bits,
        group_size=group_size if entry.group_size else None,
        calibration=entry.calibration,
        ct2_quantization=entry.ct2_quantization,
        gguf_type=entry.gguf_type,
        num_samples=num_samples,
        extra=back.extra,
        format=entry.format,
    )


def require_backend(spec: MethodSpec) -> None:
    """Raise :class:`EngineNotInstalledError` (naming the extra) when the backend's imports are missing."""
    import importlib.util

    back = method_table().backends[spec.backend]
    missing = [name for name in back.requires if importlib.util.find_spec(name) is None]
    if missing:
        raise EngineNotInstalledError(
            f"The '{spec.backend}' quantization backend", back.extra, f"missing: {', '.join(missing)}"
        )


def backend_module(spec: MethodSpec):
    """The module implementing ``spec.backend`` (imported now, not at package import)."""
    import importlib

    return importlib.import_module(f"{__package__}.{method_table().backends[spec.backend].module}")

