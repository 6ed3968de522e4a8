"""The trade-off front of a capacity search as a PNG (matplotlib, an optional package)."""

from __future__ import annotations

import io
from pathlib import Path

from .result import CapacityResult

TITLE = "infer-advisor capacity front"  # the PNG's Title text chunk: how --force knows a plot is ours


def require_matplotlib() -> None:
    """One line (exit 2) when matplotlib, an optional package, is missing: checked before a search, not after."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        from ..errors import RequestError

        raise RequestError("--plot needs matplotlib (pip install 'infer-advisor[bench]' or pip install matplotlib).")


def is_front_png(path: Path) -> bool:
    """True for a PNG this module wrote (its Title chunk), so ``--force`` replaces only our own plots."""
    try:
        head = path.read_bytes()[:4096]
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and TITLE.encode() in head


def plot_front(result: CapacityResult, path: Path, *, force: bool = False) -> Path:
    """Tokens/s per GPU against tokens/s per user for every simulated trial, the Pareto front drawn over them.

    Written through the shared single-file writer: an existing file is replaced only with ``force`` and only if it
    is a plot of ours."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    by_gpu: dict[str, list] = {}
    for p in result.front:
        by_gpu.setdefault(p.gpu, []).append(p)
    for gpu, pts in sorted(by_gpu.items()):
        pts.sort(key=lambda p: p.output_tokens_per_s_per_user)
        ax.plot([p.output_tokens_per_s_per_user for p in pts], [p.output_tokens_per_s_per_gpu for p in pts], marker="o", label=gpu)
    if result.chosen and result.chosen.output_tokens_per_s_per_user and result.chosen.output_tokens_per_s_per_gpu:
        c = result.chosen
        ax.scatter([c.output_tokens_per_s_per_user], [c.output_tokens_per_s_per_gpu], s=140, facecolors="none", edgecolors="k",
                   label=f"chosen: {c.gpu} {c.layout} x{c.replicas}")
    ax.set_xlabel("output tokens/s per user (1 / time per output token)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"Trade-off front at up to the rate one replica sustains ({result.rate:g} req/s asked)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, format="png", metadata={"Title": TITLE})
    finally:
        plt.close(fig)
    from .._output import write_file

    return write_file(path, buf.getvalue(), force=force, ours=is_front_png, option="--plot")
