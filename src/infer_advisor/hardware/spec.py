"""Parse a hardware spec: ``auto``, ``cpu``, ``NAME[:COUNT][xNODES]``, or a GPU the catalog lacks.

An unlisted GPU is described inline as a YAML mapping or in a YAML/JSON file, with the catalog's fields
(validated by the same :class:`GPUEntry` model), optionally followed by ``:COUNT[xNODES]``::

    --gpu '{name: RTX-3080-Laptop, memory_gib: 16, memory_bandwidth_gb_s: 448, tflops: {fp16: 60, bf16: 60},
            compute_capability: 8.6, interconnect: pcie, interconnect_gb_s: 16}'
    --gpu my-card.yaml:4

    >>> parse_spec("H100-80GB:8x2")
    HardwareSpec(kind='gpu', name='H100-80GB', count=8, nodes=2)
    >>> parse_spec("rtx4090").count
    1

The name is looked up in the catalog first, so names that contain an 'x' (``rtx4090``, ``MI300X``)
are never mistaken for a node count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from pathlib import Path

from pydantic import ValidationError

from ..errors import DataFileError, HardwareSpecError, UnknownGPUError
from ..request import searches_gpu_types  # noqa: F401 - one definition, used by the request's checks too
from .catalog import GPUEntry, find_entry, suggest_names

# Longest inline GPU description accepted (a full entry is about 300 characters).
MAX_INLINE_SPEC = 4000
SPEC_SOURCE = "user-supplied --gpu spec"
# Every field a GPU description needs, as one inline --gpu value (README, `plan --help`, and every error shows it).
SPEC_EXAMPLE = ("{name: RTX-3080-Laptop, memory_gib: 16, memory_bandwidth_gb_s: 448, tflops: {fp16: 60, bf16: 60}, "
                "compute_capability: 8.6, interconnect: pcie, interconnect_gb_s: 16}")

# Most GPUs one host holds: 16, as in NVIDIA DGX-2 / HGX-2 (16x V100 behind NVSwitch), the largest
# single-OS-image NVIDIA board; GB200 NVL72 racks are 18 hosts of 4 GPUs.
MAX_GPUS_PER_NODE = 16
# Most nodes a plan may span: 4096, beyond the largest published LLM training clusters per job
# (16,384 H100 = 2,048 nodes for Llama 3 405B, Meta 2024); more is a typo, not a deployment.
MAX_NODES = 4096

_COUNTS = re.compile(r"^(?P<count>-?\d+)(?:[xX](?P<nodes>-?\d+))?$")
_NODES_ONLY = re.compile(r"^(?P<name>.+?)[xX](?P<nodes>-?\d+)$")


@dataclass(frozen=True)
class HardwareSpec:
    """A parsed ``--gpu`` value (internal: a plain dataclass, so parsing builds no pydantic schema at import)."""

    kind: Literal["auto", "cpu", "gpu"]  # auto: probe this machine; cpu; gpu: a catalog GPU
    name: str | None = None  # catalog name of the GPU (kind='gpu')
    count: int = 1  # GPUs per node
    nodes: int = 1
    entry: GPUEntry | None = field(default=None, repr=False)  # the GPU described inline or in a file (not in the catalog)


def _int(spec: str, text: str, what: str, limit: int) -> int:
    value = int(text)
    if value < 1:
        raise HardwareSpecError(spec, f"{what} must be at least 1, got {value}")
    if value > limit:
        raise HardwareSpecError(spec, f"{what} {value} is more than {limit}")
    return value


def parse_spec(spec: str) -> HardwareSpec:
    """Parse ``spec``; raise HardwareSpecError for bad syntax/counts, UnknownGPUError for unknown names."""
    if not isinstance(spec, str):
        raise HardwareSpecError(repr(spec), "expected a string")
    text = spec.strip()
    if not text:
        raise HardwareSpecError(spec, "it is empty")
    low = text.lower()
    if low == "auto":
        return HardwareSpec(kind="auto")
    if low == "cpu":
        return HardwareSpec(kind="cpu", count=0)
    custom = _custom_spec(spec, text)
    if custom is not None:
        return custom
    if text.count(":") > 1:
        raise HardwareSpecError(spec, "more than one ':'")
    if ":" in text:
        name, _, counts = text.partition(":")
        name = name.strip()
        if not name:
            raise HardwareSpecError(spec, "no GPU name before ':'")
        if name.lower() in ("auto", "cpu"):
            raise HardwareSpecError(spec, f"'{name}' takes no count")
        m = _COUNTS.match(counts.strip())
        if not m:
            raise HardwareSpecError(spec, f"'{counts}' is not COUNT or COUNTxNODES")
        count = _int(spec, m["count"], "GPU count", MAX_GPUS_PER_NODE)
        nodes = _int(spec, m["nodes"], "node count", MAX_NODES) if m["nodes"] else 1
        return HardwareSpec(kind="gpu", name=_canonical(name), count=count, nodes=nodes)
    entry = find_entry(text)
    if entry is not None:
        return HardwareSpec(kind="gpu", name=entry.name)
    m = _NODES_ONLY.match(text)
    if m and find_entry(m["name"]) is not None:
        nodes = _int(spec, m["nodes"], "node count", MAX_NODES)
        return HardwareSpec(kind="gpu", name=_canonical(m["name"]), nodes=nodes)
    if re.search(r"[^A-Za-z0-9 ._\-]", text):
        raise HardwareSpecError(spec, "a GPU name has only letters, digits, '-', '_', '.' and spaces")
    raise UnknownGPUError(text, suggest_names(text))


def _canonical(name: str) -> str:
    entry = find_entry(name)
    if entry is None:
        raise UnknownGPUError(name, suggest_names(name))
    return entry.name


def _counts(spec: str, counts: str) -> tuple[int, int]:
    m = _COUNTS.match(counts.strip())
    if not m:
        raise HardwareSpecError(spec, f"'{counts}' is not COUNT or COUNTxNODES")
    count = _int(spec, m["count"], "GPU count", MAX_GPUS_PER_NODE)
    nodes = _int(spec, m["nodes"], "node count", MAX_NODES) if m["nodes"] else 1
    return count, nodes


def _custom_spec(spec: str, text: str) -> HardwareSpec | None:
    """An inline YAML mapping ``{...}[:COUNT[xNODES]]`` or a ``.yaml/.yml/.json`` file ``PATH[:COUNT[xNODES]]``."""
    if text.startswith("{"):
        body, _, counts = text.rpartition("}")
        if len(text) > MAX_INLINE_SPEC:
            raise HardwareSpecError(spec[:60] + "...", f"an inline GPU description has at most {MAX_INLINE_SPEC} characters")
        from .._data import parse_yaml_text

        try:  # aliases and duplicate keys refused by the parser (a name may hold '&' or '*')
            raw = parse_yaml_text(body + "}", "--gpu")
        except DataFileError as err:
            raise HardwareSpecError(spec, f"not a YAML mapping ({err.problem})") from None
        count, nodes = _counts(spec, counts.removeprefix(":")) if counts.strip() else (1, 1)
        return HardwareSpec(kind="gpu", name=None, count=count, nodes=nodes, entry=_entry(raw, "--gpu"))
    path_text, _, counts = text.partition(":") if re.search(r"\.(ya?ml|json):", text, re.IGNORECASE) else (text, "", "")
    if not re.search(r"\.(ya?ml|json)$", path_text, re.IGNORECASE):
        return None
    from .._data import read_structured

    path = Path(path_text).expanduser()
    if not path.exists():  # a FIFO or device is refused by read_structured (regular files only), not called missing
        raise HardwareSpecError(spec, f"no GPU description file at {path_text}")
    raw = read_structured(path, check=lambda data: _entry(data, str(path)))  # the cache keeps only valid files
    count, nodes = _counts(spec, counts) if counts else (1, 1)
    return HardwareSpec(kind="gpu", name=None, count=count, nodes=nodes, entry=_entry(raw, str(path)))


def _entry(raw: object, where: str) -> GPUEntry:
    """Validate a user GPU description as a catalog entry (``source`` and ``memory_type`` may be left out)."""

    if not isinstance(raw, dict):
        raise DataFileError(where, "a GPU description is a mapping of the catalog's fields (see data/gpus.yaml)")
    from ..untrusted import check_gpu_name

    for key in ("name", "aliases", "nvml_names"):  # names reach artifacts, tables and comments
        values = raw.get(key)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, str):
                check_gpu_name(value, f"{where}: {key}", lambda msg: DataFileError(where, msg.removeprefix(f"{where}: ")))
    try:
        return GPUEntry.model_validate({"source": SPEC_SOURCE, "memory_type": "unknown", **raw})
    except ValidationError as err:
        raise DataFileError(where, spec_problems(err)) from None


def spec_problems(err: ValidationError) -> str:
    """Every missing and every wrong field of a GPU description in one line, with a description that works."""
    missing = [str(e["loc"][0]) for e in err.errors() if e["type"] == "missing" and e.get("loc")]
    wrong = [f"{'.'.join(str(p) for p in e.get('loc', ()))} ({e['msg'].lower()})" for e in err.errors() if e["type"] != "missing"]
    parts = ([f"missing {', '.join(missing)}"] if missing else []) + ([f"wrong {'; '.join(wrong)}"] if wrong else [])
    return f"{'; '.join(parts)}. Every field, e.g.: --gpu '{SPEC_EXAMPLE}'"

