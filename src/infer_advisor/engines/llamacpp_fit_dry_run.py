"""The part of a llama.cpp start-up log that its fitting dry run printed, cut out before the log is read.

Builds with ``common_fit_params`` (common/common.cpp, b6900+) first load the model with ``no_alloc`` set, to size
layers and context against free memory, and print the same model, KV and compute-buffer lines as the real load:
``print_info: no_alloc = 1`` opens that pass and ``common_fit_params: ...`` (``failed to fit params ...`` or
``fitting params to free memory took N seconds``) closes it. Its buffers read "0.00 MiB" and its KV line can
describe another layout than the real one (d-ctx-1.05M-4streams on the lent H200: the dry run's line gave 262,656 cells
where the real allocation was 1,050,624; docs/doctor.md, set d), so none of it is the run's memory.
"""

from __future__ import annotations

_FLAG = "no_alloc"
_CLOSE = "common_fit_params:"


def _no_alloc_line(text: str, start: int) -> tuple[int, int, bool] | None:
    """(line start, line end, whether it sets no_alloc = 1) of the next ``print_info: no_alloc = N`` line."""
    at = text.find(_FLAG, start)
    while at >= 0:
        begin, end = text.rfind("\n", 0, at) + 1, text.find("\n", at)
        end = len(text) if end < 0 else end
        value = text[at + len(_FLAG) : end].replace(" ", "").replace("\t", "")
        if value in ("=1", "=0"):
            return begin, end, value == "=1"
        at = text.find(_FLAG, end)
    return None


def without_fit_dry_run(text: str) -> str:
    """``text`` without the lines from ``no_alloc = 1`` through the last ``common_fit_params:`` line before the next
    ``no_alloc`` line (the real load's ``no_alloc = 0``).

    A dry run not closed by a ``common_fit_params:`` line is kept (it cannot be told from a real load that stopped)."""
    kept, copied, pos = [], 0, 0
    while (flag := _no_alloc_line(text, pos)) is not None:
        begin, pos, dry = flag
        if not dry:
            continue
        following = _no_alloc_line(text, pos)
        close = text.rfind(_CLOSE, pos, following[0] if following else len(text))
        if close < 0:
            break
        kept.append(text[copied:begin])
        pos = text.find("\n", close)
        pos = copied = len(text) if pos < 0 else pos + 1
    kept.append(text[copied:])
    return "".join(kept)


def fit_kept_settings(text: str) -> bool:
    """Whether the dry run ended without changing the user's settings (``failed to fit params ... abort``), so that its
    lines describe the layout the real load then tried (d-ctx-1.05M-4streams-first: the real load failed in cudaMalloc
    before printing its own KV, compute-buffer and layer lines)."""
    return "common_fit_params: failed to fit params" in text


def fill_from_dry_run(log, dry):
    """``log`` with each figure it lacks (None) taken from ``dry``, the same reading of the whole log; ``dry`` None: as is."""
    if dry is None:
        return log
    for key in type(log).model_fields:
        if getattr(log, key) is None and getattr(dry, key) is not None:
            setattr(log, key, getattr(dry, key))
            if key in dry.lines and key not in log.lines:
                log.lines[key] = dry.lines[key]
    return log


def read_past_fit_dry_run(text: str, read):
    """``read(text)`` of the real load's lines; where the dry run kept the user's settings, its lines fill only the
    figures the real load never printed (it stopped before them)."""
    real = without_fit_dry_run(text)
    return fill_from_dry_run(read(real), read(text) if real != text and fit_kept_settings(text) else None)
