"""The trade-off front of a capacity search as a PNG (matplotlib, an optional package)."""

from __future__ import annotations

from pathlib import Path

from .result import CapacityResult


def plot_front(result: CapacityResult, path: Path) -> Path:
    """Tokens/s per GPU against tokens/s per user for every simulated trial, the Pareto front drawn over them."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..errors import RequestError

        raise RequestError("--plot needs matplotlib (pip install 'infer-advisor[bench]' or pip install matplotlib).") from None
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
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")  # never a half-written PNG under the asked name
    try:
        fig.savefig(partial, dpi=120, format="png")
        partial.replace(path)
    finally:
        plt.close(fig)
        partial.unlink(missing_ok=True)
    return path
