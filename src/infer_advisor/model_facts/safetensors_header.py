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
# Bits per element of each safetensors dtype (safetensors/src/tensor.rs, Dtype::bitsize).
DTYPE_BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64,
    "I64": 64, "U64": 64, "F64": 64,
}  # fmt: skip
# Largest dimension accepted in a shape: 2^40 elements, far beyond any tensor (a 1T-parameter model's largest is ~10^9).
MAX_DIM = 2**40


def _check_tensor(name: str, info: Any, where: str) -> None:
    """Offsets ordered and non-negative, shape non-negative, and bytes == elements x dtype size when the dtype is known."""
    ok = (
        isinstance(info, dict)
        and isinstance(info.get("dtype"), str)
        and isinstance(info.get("shape"), list)
        and len(info["shape"]) <= 16
        and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM for d in info["shape"])
        and isinstance(info.get("data_offsets"), list)
        and len(info["data_offsets"]) == 2
        and all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in info["data_offsets"])
        and info["data_offsets"][0] <= info["data_offsets"][1]
    )
    if not ok:
        raise ModelConfigError(
            where,
            f"safetensors header entry '{str(name)[:80]}' lacks a valid dtype, shape or non-negative data_offsets",
        )
    bits = DTYPE_BITS.get(info["dtype"])
    begin, end = info["data_offsets"]
    if bits is not None and (prod(info["shape"]) * bits + 7) // 8 != end - begin:
        raise ModelConfigError(
            where,
            f"safetensors tensor '{str(name)[:80]}': shape {info['shape']} of {info['dtype']} needs "
            f"{(prod(info['shape']) * bits + 7) // 8} bytes, data_offsets span {end - begin}",
        )


def parse_header(raw: bytes, where: str) -> dict[str, Any]:
    """Parse header JSON bytes into ``{tensor name: info}`` (``__metadata__`` dropped); errors name ``where``."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as err:
        raise ModelConfigError(
            where, f"safetensors header is not valid JSON ({err.__class__.__name__}: {str(err)[:120]})"
        ) from None
    except RecursionError:
        raise ModelConfigError(where, "safetensors header JSON is nested too deeply") from None
    if not isinstance(header, dict):
        raise ModelConfigError(where, "safetensors header is not a JSON object")
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    for name, info in tensors.items():
        _check_tensor(name, info, where)
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
    # The data buffer is exactly the rest of the file, covered by the tensors without gaps or overlaps
    # (what safetensors' own loader validates: MetadataIncompleteBuffer / InvalidOffset).
    data_bytes = size - 8 - length
    spans = sorted(tuple(info["data_offsets"]) for info in tensors.values())
    cursor = 0
    for begin, end in spans:
        if begin != cursor:
            raise ModelConfigError(where, f"safetensors data_offsets leave a gap or overlap at byte {min(begin, cursor)}")
        cursor = end
    if cursor != data_bytes:
        raise ModelConfigError(
            where, f"safetensors tensors cover {cursor} bytes of data but the file holds {data_bytes} (truncated or corrupt)"
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
        from .jsonfile import load_json

        data = load_json(index)
        weight_map = data.get("weight_map") if isinstance(data, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise ModelConfigError(str(index), "the shard index has no 'weight_map' object")
        names = sorted({str(v) for v in weight_map.values()})
        root = folder.resolve()
        for n in names:  # shards live in the model folder: no absolute paths, no '..', no symlink out
            target = (folder / n).resolve()
            if Path(n).is_absolute() or ".." in Path(n).parts or not target.is_relative_to(root):
                raise ModelConfigError(str(index), f"shard '{n[:100]}' points outside the model folder")
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
    """Summary from huggingface_hub's ``SafetensorsRepoMetadata.files_metadata`` (shapes checked against offsets)."""
    files = {}
    for name, meta in files_metadata.items():
        tensors = {}
        for t, info in meta.tensors.items():
            as_dict = {"dtype": info.dtype, "shape": list(info.shape), "data_offsets": list(info.data_offsets)}
            _check_tensor(t, as_dict, f"{name} (Hub safetensors header)")
            tensors[t] = as_dict
        files[name] = tensors
    return summarize(files)
