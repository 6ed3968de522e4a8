"""Which model a start-up log served, when the user does not say and the log names a local folder: marked inferred.

    >>> infer_model("/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/0a1b")
    ('Qwen/Qwen3-8B', "inferred from the log's model path: the Hugging Face cache folder models--Qwen--Qwen3-8B")

Two readings of a path, in order, each looked up in the embedded catalog only (names and aliases, case-insensitive; no
Hub call): the Hugging Face cache folder ``models--ORG--NAME`` anywhere in it (``huggingface_hub``'s own layout:
``repo_folder_name`` joins the repo id's parts with ``--``), else the last folder's name when it is a catalog name or
alias (``/data/Qwen3-8B`` -> Qwen/Qwen3-8B). A fine-tune in a folder named after its base is read as the base: the
note says so, and ``--model`` overrides it. Bounded: at most 300 characters of the path are read.
"""

from __future__ import annotations

import re

_HF_CACHE = re.compile(r"models--([A-Za-z0-9][\w.-]{0,95})--([\w.-]{1,96})")
MAX_PATH_CHARS = 300


def infer_model(path: str | None) -> tuple[str | None, str | None]:
    """(catalog name, how it was inferred) for a local model path, or (None, None)."""
    text = (path or "")[:MAX_PATH_CHARS].strip().strip("'\"")
    if not text.startswith(("/", "./", "../", "~")) and "models--" not in text:  # a Hub id (org/name) is not a path
        return None, None
    m = _HF_CACHE.search(text)
    if m:
        name = _catalog_name(f"{m.group(1)}/{m.group(2)}")
        if name:
            return name, f"inferred from the log's model path: the Hugging Face cache folder {m.group(0)}"
    last = [part for part in text.rstrip("/").split("/") if part][-1:]
    if last:
        name = _catalog_name(last[0])
        if name:
            return name, (f"inferred from the log's model path: its folder '{last[0][:60]}' is the catalog's {name} "
                          "(a fine-tune in a folder of that name is read as its base)")
    return None, None


def _catalog_name(candidate: str) -> str | None:
    from ..errors import InferAdvisorError
    from ..model_facts import resolve_model

    try:
        return resolve_model(candidate, source="catalog").name
    except (InferAdvisorError, ValueError):
        return None
