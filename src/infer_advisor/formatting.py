"""Small formatting helpers shared by stages (bytes for people); only base imports, so any stage may use them."""

from __future__ import annotations

from .units import GIB


def gib(n: float) -> str:
    """``15 * 2**30`` -> ``"15.0 GiB"``: bytes in GiB, one decimal."""
    return f"{n / GIB:.1f} GiB"


def human_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"``: bytes in binary units, one decimal (whole bytes below 1 KiB)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover
