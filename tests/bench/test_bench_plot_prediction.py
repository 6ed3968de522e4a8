"""Issue 25 item 3 (bench half): bench.png shows the plan's predicted curve and its error band beside the measured
points. The curve is the plan's deployment planned again at each measured concurrency through advise(); the
figure is read back from its matplotlib artists."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")

from infer_advisor.bench.compare import load_plan, predicted_curve  # noqa: E402
from infer_advisor.bench.metrics import level_result  # noqa: E402
from infer_advisor.bench.output import bench_figure  # noqa: E402
from infer_advisor.bench.report import BenchMetadata, BenchReport, DeviceInfo, RequestSample  # noqa: E402
from infer_advisor.plan import advise  # noqa: E402


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(advise(model="meta-llama/Llama-2-7b-hf", gpu="A100-80GB").model_dump_json())
    return path


def test_the_curve_is_the_plan_at_each_measured_concurrency(plan_file):
    plan = json.loads(plan_file.read_text())
    curve, why_not = predicted_curve(load_plan(plan_file), [1, 8, 32])
    assert why_not is None and [p.concurrency for p in curve] == [1, 8, 32]
    at32 = curve[-1]  # the plan's own concurrency: the same figures the plan printed
    assert at32.ttft_s == pytest.approx(plan["performance"]["ttft_s"])
    assert at32.tpot_s == pytest.approx(plan["performance"]["tpot_s"])
    assert tuple(at32.error_band) == tuple(plan["performance"]["error_band"])
    assert curve[0].output_tokens_per_s_aggregate < curve[-1].output_tokens_per_s_aggregate


def _sample(c: int, i: int, ttft: float) -> RequestSample:
    return RequestSample(concurrency=c, index=i, input_tokens=512, output_tokens=200, token_count_source="server-usage",
                         ttft_s=ttft, e2e_s=ttft + 199 * 0.03, tpot_s=0.03)  # fmt: skip


def test_the_figure_draws_measured_points_beside_the_curve_and_band(plan_file):
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    levels = [level_result(c, [_sample(c, i, 0.1 * c) for i in range(4)], 10.0, None) for c in (1, 8, 32)]
    md = BenchMetadata(engine="openai", model="meta-llama/Llama-2-7b-hf", workload="fixed", request={}, random_weights=False,
                       device=DeviceInfo(kind="remote", name="http://127.0.0.1:1"), versions={}, memory_source="none",
                       started_at="2026-12-03T00:00:00+00:00", command_line=["infer-advisor", "bench"])  # fmt: skip
    curve, _ = predicted_curve(load_plan(plan_file), [1, 8, 32])
    report = BenchReport(metadata=md, levels=levels, predictions=curve, complete=True)
    fig = bench_figure(report)
    try:
        for ax, name in zip(fig.axes, ("ttft_s", "tpot_s"), strict=True):
            labels = ax.get_legend_handles_labels()[1]
            assert "measured (p50)" in labels
            assert any(label.startswith("plan's prediction (estimated") for label in labels)
            lo, hi = curve[0].error_band
            assert any(label.startswith(f"band: {lo:.2f}x-{hi:.2f}x") for label in labels)
            predicted = next(ln for ln in ax.lines if ln.get_label().startswith("plan's prediction"))
            assert list(predicted.get_ydata()) == pytest.approx([getattr(p, name) * 1000 for p in curve])
            assert any(isinstance(c, PolyCollection) for c in ax.collections)  # the band
    finally:
        plt.close(fig)
