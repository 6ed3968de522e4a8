"""Issue 25 item 3: the sizing picture compares. Read back from the matplotlib Figure: every GPU type asked for, the
ITL target line, the front over the points drawn (nothing drawn above it), meets/misses marks, the chosen one
labelled with its cost."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from infer_advisor.capacity import size  # noqa: E402
from infer_advisor.capacity.plot import figure, pareto, points  # noqa: E402


@pytest.fixture(scope="module")
def result():
    return size(model="meta-llama/Llama-3.1-70B", gpu="H100-80GB,A100-80GB,L40S", rate=20, input_tokens=2000,
                output_tokens=300, ttft_p90=1.0, itl_p99=0.06)  # fmt: skip


def test_every_gpu_type_targets_marks_and_the_chosen_cost_are_on_the_figure(result):
    import matplotlib.pyplot as plt

    fig = figure(result)
    try:
        labels = fig.axes[0].get_legend_handles_labels()[1]
        for gpu in ("H100-80GB", "A100-80GB", "L40S"):
            assert any(label.startswith(gpu + ":") for label in labels), (gpu, labels)
        assert any("L40S: not drawn (misses the p90 time to first token" in label for label in labels)
        assert any(label.startswith("target: p99 ITL 60 ms") for label in labels)
        assert any(label.startswith("target: ttft p90 <= 1 s") for label in labels)
        assert "H100-80GB: meets targets" in labels
        c = result.chosen
        chosen = next(label for label in labels if label.startswith("chosen: "))
        assert chosen == f"chosen: {c.replicas} x {c.gpus_per_replica} {c.gpu} {c.layout}, ${c.cost_per_hour:,.2f}/hour"
        assert any(t.get_text() == chosen for t in fig.axes[0].texts)  # labelled on the plot, not only in the legend
        vline = [ln for ln in fig.axes[0].lines if list(ln.get_xdata()) == [1 / 0.06, 1 / 0.06]]
        assert vline  # the ITL target as the tokens/s per user it needs
    finally:
        plt.close(fig)


def test_nothing_drawn_lies_above_the_front(result):
    pts = points(result)
    front = pareto(pts)
    for _, x, y, _ in pts:  # no drawn point beats a front point on both axes
        assert any(fx >= x and fy >= y for fx, fy in front)
    c = result.chosen
    assert any(fx >= c.output_tokens_per_s_per_user and fy >= c.output_tokens_per_s_per_gpu for fx, fy in front)
