"""The trade-off of a capacity search as a PNG (matplotlib, an optional package): a picture that compares.

Every GPU type asked for is on it (a type with no option that serves the rate is named in the legend with why),
each option drawn is marked meets (filled) or misses (hollow) the targets, the Pareto front is computed over the
points drawn (so nothing drawn lies above it), the ITL target appears as the tokens/s per user it requires, and the
chosen option is labelled with its fleet and cost.
"""

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
    from ..bounded_read import read_bounded
    from ..errors import DataFileError

    try:  # bounded, regular files only: a FIFO or /dev/zero given as --plot with --force is not ours, never a hang
        head = read_bounded(path, "data")[:4096]
    except (DataFileError, OSError):
        return False
    return head.startswith(b"\x89PNG") and TITLE.encode() in head


def points(result: CapacityResult) -> list[tuple[str, float, float, bool]]:
    """(GPU, tokens/s per user, tokens/s per GPU, meets targets) of every option drawn: the simulated trials on the
    search's front and each ranked option at the most it sustains within the targets."""
    out = [(p.gpu, p.output_tokens_per_s_per_user, p.output_tokens_per_s_per_gpu, p.meets_targets) for p in result.front]
    ranked = [c for c in (result.chosen, *result.runners_up, *result.best_per_gpu) if c is not None]
    out += [(c.gpu, c.output_tokens_per_s_per_user, c.output_tokens_per_s_per_gpu, c.meets_targets)
            for c in ranked if c.output_tokens_per_s_per_user and c.output_tokens_per_s_per_gpu]
    return out


def pareto(pts: list[tuple[str, float, float, bool]]) -> list[tuple[float, float]]:
    """The front over ``pts``: no point drawn is better on both axes (more per user and more per GPU)."""
    front, best = [], -1.0
    for _, x, y, _ in sorted(pts, key=lambda p: (-p[1], -p[2])):
        if y > best:
            front.append((x, y))
            best = y
    return sorted(front)


def figure(result: CapacityResult):
    """The matplotlib Figure (tests read its artists back); :func:`plot_front` writes it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 6.5))
    pts = points(result)
    gpus = sorted({c.gpu for c in result.best_per_gpu} | {p[0] for p in pts})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, gpu in enumerate(gpus):
        colour = colours[i % len(colours)]
        mine = [p for p in pts if p[0] == gpu]
        met = [p for p in mine if p[3]]
        missed = [p for p in mine if not p[3]]
        if not mine:  # asked for, but no option serves the rate: named with why
            why = next((c.why_not for c in result.best_per_gpu if c.gpu == gpu and c.why_not), "no option serves the rate")
            why = why if len(why) <= 80 else why[:79] + "…"
            ax.plot([], [], linestyle="none", marker="x", color=colour, label=f"{gpu}: not drawn ({why})")
            continue
        if met:
            ax.scatter([p[1] for p in met], [p[2] for p in met], color=colour, marker="o", label=f"{gpu}: meets targets")
        if missed:
            ax.scatter([p[1] for p in missed], [p[2] for p in missed], facecolors="none", edgecolors=colour, marker="o",
                       label=f"{gpu}: misses targets")
    front = pareto(pts)
    if front:
        ax.plot([x for x, _ in front], [y for _, y in front], color="0.3", linestyle="--", linewidth=1, label="front (over the points drawn)")
    if result.targets.itl_p99:
        need = 1.0 / result.targets.itl_p99  # mean gap <= p99 gap: a necessary bound on tokens/s per user
        ax.axvline(need, color="red", linestyle=":", label=f"target: p99 ITL {result.targets.itl_p99 * 1000:.0f} ms (needs >= {need:.0f} tok/s per user)")
    for name in ("ttft_p90", "ttft_p99", "e2e_p90"):
        limit = getattr(result.targets, name)
        if limit:  # not an axis of this picture: stated, so the marks can be read
            ax.plot([], [], color="red", linestyle=":", label=f"target: {name.replace('_', ' ')} <= {limit:g} s (in meets/misses)")
    c = result.chosen
    if c and c.output_tokens_per_s_per_user and c.output_tokens_per_s_per_gpu:
        cost = f", ${c.cost_per_hour:,.2f}/hour" if c.cost_per_hour is not None else ""
        label = f"chosen: {c.replicas} x {c.gpus_per_replica} {c.gpu} {c.layout}{cost}"
        ax.scatter([c.output_tokens_per_s_per_user], [c.output_tokens_per_s_per_gpu], s=220, facecolors="none",
                   edgecolors="k", linewidths=2, label=label)
        ax.annotate(label, (c.output_tokens_per_s_per_user, c.output_tokens_per_s_per_gpu), textcoords="offset points",
                    xytext=(8, 8), fontsize=8)
    ax.set_xlabel("output tokens/s per user (1 / mean time per output token)")
    ax.set_ylabel("output tokens/s per GPU")
    ax.set_title(f"{result.rate:g} req/s asked: every GPU type searched, each option at the loads simulated", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)  # below: no point hidden
    fig.tight_layout()
    return fig


def plot_front(result: CapacityResult, path: Path, *, force: bool = False) -> Path:
    """Write :func:`figure` as a PNG through the shared single-file writer: an existing file is replaced only with
    ``force`` and only if it is a plot of ours."""
    require_matplotlib()
    import matplotlib
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.parse_math": False}):  # labels are literal text, never mathtext ('$' in a name)
        fig = figure(result)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=120, format="png", metadata={"Title": TITLE}, bbox_inches="tight")  # the legend below too
    finally:
        plt.close(fig)
    from .._output import write_file

    return write_file(path, buf.getvalue(), force=force, ours=is_front_png, option="--plot")
