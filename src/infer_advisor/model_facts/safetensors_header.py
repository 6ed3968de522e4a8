"""Read safetensors headers without loading a tensor (as hf-mem does).

A safetensors file starts with an 8-byte little-endian header length N, then N bytes of JSON mapping each
tensor name to ``{"dtype", "shape", "data_offsets"}`` (plus an optional ``__metadata__``). Sharded
checkpoints list their files in ``model.safetensors.index.json`` (``weight_map``).

    summary = read_local_checkpoint(Path("./Llama-2-7b-hf"))   # None if there is no *.safetensors
    summary.num_parameters, summary.bytes_by_dtype
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from math import prod
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError
from .facts import SafetensorsSummary

INDEX_FILE = "model.safetensors.index.json"
# Largest header accepted: the safetensors format caps it at 100 MB
# (https://github.com/huggingface/safetensors/blob/main/safetensors/src/tensor.rs, MAX_HEADER_SIZE).
MAX_HEADER_BYTES = 100_000_000


def parse_header(raw: bytes, where: str) -> dict[str, Any]:
    """Parse header JSON bytes into ``{tensor name: info}`` (``__metadata__`` dropped); errors name ``where``."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelConfigError(
            where, f"safetensors header is not valid JSON ({err.__class__.__name__}: {err})"
        ) from None
    if not isinstance(header, dict):
        raise ModelConfigError(where, "safetensors header is not a JSON object")
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    for name, info in tensors.items():
        ok = (
            isinstance(info, dict)
            and isinstance(info.get("dtype"), str)
            and isinstance(info.get("shape"), list)
            and all(isinstance(d, int) and d >= 0 for d in info["shape"])
            and isinstance(info.get("data_offsets"), list)
            and len(info["data_offsets"]) == 2
            and all(isinstance(o, int) for o in info["data_offsets"])
            and info["data_offsets"][0] <= info["data_offsets"][1]
        )
        if not ok:
            raise ModelConfigError(
                where, f"safetensors header entry '{name}' lacks a valid dtype, shape or data_offsets"
            )
    return tensors


def read_file_header(path: Path) -> dict[str, Any]:
    """The tensor table of one local .safetensors file, reading only its header."""
    where = str(path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ModelConfigError(where, f"truncated safetensors file: {len(head)} bytes, need at least 8")
            (length,) = struct.unpack("<Q", head)
            if length == 0 or length > MAX_HEADER_BYTES or length > size - 8:
                raise ModelConfigError(
                    where,
                    f"safetensors header length {length} does not fit a {size}-byte file "
                    "(truncated or not safetensors)",
                )
            raw = fh.read(length)
    except OSError as err:
        raise ModelConfigError(where, f"cannot read: {err.strerror or err}") from None
    if len(raw) < length:
        raise ModelConfigError(where, f"truncated safetensors header: {len(raw)} of {length} bytes")
    tensors = parse_header(raw, where)
    end = max((info["data_offsets"][1] for info in tensors.values()), default=0)
    if 8 + length + end > size:
        raise ModelConfigError(
            where, f"truncated safetensors file: data ends at byte {8 + length + end}, file has {size}"
        )
    return tensors


def summarize(files: Mapping[str, Mapping[str, Any]]) -> SafetensorsSummary:
    """Add up ``{file: {tensor: info}}`` (local headers or the Hub's) into one summary: the one copy of this sum."""
    num_tensors = num_params = 0
    by_dtype: dict[str, int] = {}
    for tensors in files.values():
        for info in tensors.values():
            shape = info["shape"] if isinstance(info, Mapping) else info.shape
            dtype = info["dtype"] if isinstance(info, Mapping) else info.dtype
            begin, end = info["data_offsets"] if isinstance(info, Mapping) else info.data_offsets
            num_tensors += 1
            num_params += prod(shape)
            by_dtype[dtype] = by_dtype.get(dtype, 0) + (end - begin)
    return SafetensorsSummary(
        num_tensors=num_tensors,
        num_parameters=num_params,
        bytes_by_dtype=dict(sorted(by_dtype.items())),
        total_bytes=sum(by_dtype.values()),
        num_files=len(files),
    )


def checkpoint_files(folder: Path) -> list[Path]:
    """The safetensors files of a local checkpoint: those named by the index when there is one."""
    index = folder / INDEX_FILE
    if index.is_file():
        try:
            data = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ModelConfigError(str(index), f"cannot read the shard index: {err}") from None
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise ModelConfigError(str(index), "the shard index has no 'weight_map' object")
        names = sorted({str(v) for v in weight_map.values()})
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise ModelConfigError(str(index), f"shard(s) listed in weight_map are missing: {', '.join(missing[:3])}")
        return [folder / n for n in names]
    return sorted(folder.glob("*.safetensors"))


def read_local_checkpoint(folder: Path) -> SafetensorsSummary | None:
    """Summary of every safetensors header in ``folder``; ``None`` when it holds no safetensors file."""
    files = checkpoint_files(folder)
    if not files:
        return None
    return summarize({p.name: read_file_header(p) for p in files})


def summarize_hub(files_metadata: Mapping[str, Any]) -> SafetensorsSummary:
    """Summary from huggingface_hub's ``SafetensorsRepoMetadata.files_metadata``."""
    return summarize({name: meta.tensors for name, meta in files_metadata.items()})
