"""Read a model's JSON files (config.json, shard index) so that any bad file is one ModelConfigError line.

Hostile inputs handled here: unreadable files and folders (permissions, names too long), non-UTF-8 bytes,
invalid JSON, JSON nested deeper than Python's parser recursion (RecursionError), and files larger than any
real config (:data:`MAX_JSON_BYTES`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ModelConfigError

# Largest config.json / shard index accepted: 64 MiB. Real ones are 1-100 KB (a 1T-parameter MoE's
# model.safetensors.index.json lists ~100k tensors in about 10 MB).
MAX_JSON_BYTES = 64 * 2**20


def parse_json(text: str | bytes, where: str) -> Any:
    """json.loads with every failure (including RecursionError on deep nesting) as one ModelConfigError."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text)
    except UnicodeDecodeError:
        raise ModelConfigError(where, "not UTF-8 text") from None
    except json.JSONDecodeError as err:
        raise ModelConfigError(where, f"invalid JSON at line {err.lineno}: {err.msg}") from None
    except RecursionError:
        raise ModelConfigError(where, "JSON nested too deeply") from None
    except ValueError as err:  # e.g. an integer literal too long to convert
        raise ModelConfigError(where, f"invalid JSON: {str(err).splitlines()[0][:120]}") from None


def load_json(path: Path) -> Any:
    """Parse the JSON file ``path``; errors name the file."""
    where = str(path)
    from ..bounded_read import read_bounded

    try:
        size = path.stat().st_size
    except OSError as err:
        raise ModelConfigError(where, f"cannot read: {err.strerror or err}") from None
    if size > MAX_JSON_BYTES:
        raise ModelConfigError(where, f"{size} bytes is larger than any real config ({MAX_JSON_BYTES} bytes)")
    data = read_bounded(path, "config", ModelConfigError)  # a FIFO or device is refused, never read
    return parse_json(data, where)
