"""Parse a hardware spec: ``auto``, ``cpu`` or ``NAME[:COUNT][xNODES]``.

    >>> parse_spec("H100-80GB:8x2")
    HardwareSpec(kind='gpu', name='H100-80GB', count=8, nodes=2)
    >>> parse_spec("rtx4090").count
    1

The name is looked up in the catalog first, so names that contain an 'x' (``rtx4090``, ``MI300X``)
are never mistaken for a node count.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import HardwareSpecError, UnknownGPUError
from .catalog import find_entry, suggest_names

# Most GPUs one host holds: 16, as in NVIDIA DGX-2 / HGX-2 (16x V100 behind NVSwitch), the largest
# single-OS-image NVIDIA board; GB200 NVL72 racks are 18 hosts of 4 GPUs.
MAX_GPUS_PER_NODE = 16
# Most nodes a plan may span: 4096, beyond the largest published LLM training clusters per job
# (16,384 H100 = 2,048 nodes for Llama 3 405B, Meta 2024); more is a typo, not a deployment.
MAX_NODES = 4096

_COUNTS = re.compile(r"^(?P<count>-?\d+)(?:[xX](?P<nodes>-?\d+))?$")
_NODES_ONLY = re.compile(r"^(?P<name>.+?)[xX](?P<nodes>-?\d+)$")


class HardwareSpec(BaseModel):
    """A parsed ``--gpu`` value."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["auto", "cpu", "gpu"] = Field(description="auto: probe this machine; cpu; gpu: a catalog GPU.")
    name: str | None = Field(default=None, description="Catalog name of the GPU (kind='gpu').")
    count: int = Field(default=1, description="GPUs per node.")
    nodes: int = Field(default=1, description="Nodes.")


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
