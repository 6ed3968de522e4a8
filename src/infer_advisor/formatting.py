"""Small formatting helpers shared by stages (bytes for people); no project imports, so any stage may use them."""

from __future__ import annotations


def human_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"``: bytes in binary units, one decimal (whole bytes below 1 KiB)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover
