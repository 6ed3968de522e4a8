"""The chosen option's TTFT band (capacity/ttft_band.py): the operating point re-simulated at the edges of the speed
model's error band. It brackets the point figure, widens toward the knee, and says the queue grows past capacity."""

from __future__ import annotations

import pytest

from infer_advisor import size
from infer_advisor.capacity import ttft_band as band_module
from infer_advisor.capacity.policy import error_band_upper, speed_error_band

ONE_H200 = dict(model="meta-llama/Llama-3.2-1B", gpu="H200", engine="llama.cpp", quantization="gguf-f16",
                input_tokens=1137, output_tokens=200, headroom=False)


@pytest.fixture(scope="module")
def top() -> float:
    return size(rate=1, **ONE_H200).chosen.max_rate_per_replica


def test_the_band_brackets_the_point_and_widens_toward_the_knee(top, monkeypatch):
    # a narrow band (7%: the capacity errors calls F and G measured) so every level below the knee has both edges
    monkeypatch.setattr(band_module, "band_edges", lambda engine, gpu: (0.93, 1.07, "a 7% band", "7%"))
    widths = []
    for share in (0.3, 0.6, 0.9):
        c = size(rate=share * top, replicas=1, **ONE_H200).chosen
        b = c.ttft_band
        assert b.utilisation == pytest.approx(share, rel=1e-6)
        assert b.near_knee is (share > band_module.KNEE_UTILISATION)
        assert (b.slower.speed, b.faster.speed) == (0.93, 1.07)
        assert not b.faster.queue_grows
        assert b.faster.ttft_p50_s <= c.ttft_p50_s and b.faster.ttft_p90_s <= c.ttft_p90_s
        if b.slower.queue_grows:
            assert b.slower.ttft_p50_s is None and b.slower.ttft_p90_s is None
            widths.append(float("inf"))
        else:
            assert c.ttft_p50_s <= b.slower.ttft_p50_s and c.ttft_p90_s <= b.slower.ttft_p90_s
            widths.append(b.slower.ttft_p50_s / b.faster.ttft_p50_s)
    assert widths[0] < widths[1] < widths[2], widths
    assert widths[0] < 1.25  # far from the knee 7% of speed is about 7% of TTFT; at 0.9 of M it is several-fold
    assert widths[2] > 2 * widths[0]


def test_without_gpu_validation_runs_the_band_is_the_one_confidence_sizes_with_and_the_queue_grows_past_capacity():
    low, high = speed_error_band("llama.cpp")
    assert 0 < low < 1 < high
    assert error_band_upper("llama.cpp", 0.9) == pytest.approx(1 / low)
    on_a100 = {**ONE_H200, "gpu": "A100-80GB"}  # no llama.cpp validation calls on the A100
    c = size(rate=0.7 * size(rate=1, **on_a100).chosen.max_rate_per_replica, replicas=1, **on_a100).chosen
    assert c.ttft_band.source == band_module.BAND_SOURCE
    b = c.ttft_band
    assert (b.slower.speed, b.faster.speed) == (low, high)
    assert 0.7 / low > 1 and b.slower.queue_grows  # 0.7 of M on a replica 1/low slower: past its capacity
    assert b.faster.ttft_p50_s < c.ttft_p50_s


def test_the_cli_says_the_band_and_the_note_near_the_knee(top):
    from infer_advisor.cli.render_capacity import ttft_band_rows

    c = size(rate=0.9 * top, replicas=1, **ONE_H200).chosen
    rows = ttft_band_rows(c)
    assert rows[0][0] == "TTFT band" and "% faster to " in rows[0][1] and "% slower than modelled" in rows[0][1]
    on_a100 = {**ONE_H200, "gpu": "A100-80GB"}  # the published band: its slow edge is past capacity at 0.9 of M
    wide = ttft_band_rows(size(rate=0.9 * size(rate=1, **on_a100).chosen.max_rate_per_replica, replicas=1, **on_a100).chosen)
    assert "the queue grows if it is" in wide[0][1] and "faster than modelled" in wide[0][1]
    assert wide[0][1].endswith("(band: published, all engines)")
    assert any("sensitive" in text or "several-fold" in text for _, text in rows[1:])
    assert rows[0][1].endswith("(band: 4 H200 validation runs)")  # the H200 validation calls' band
    assert len(ttft_band_rows(c.model_copy(update={"ttft_band": c.ttft_band.model_copy(update={"near_knee": False})}))) == 1


def test_on_the_h200_llama_cpp_uses_the_band_of_its_own_validation_calls(top):
    from infer_advisor.capacity.validation_band import validation_band

    low, high, source, _ = validation_band("llama.cpp", "H200")
    # calls B, D, F, G: served when overloaded / predicted 1.85/1.768, 1.719/1.768, 2.956/2.664, 4.186/4.467
    assert low == pytest.approx(4.186 / 4.467) and high == pytest.approx(2.956 / 2.664)
    assert "4 prospective H200 llama.cpp validation calls" in source
    b = size(rate=0.5 * top, replicas=1, **ONE_H200).chosen.ttft_band
    assert (b.slower.speed, b.faster.speed, b.source) == (low, high, source)
    assert not b.slower.queue_grows and not b.faster.queue_grows  # 0.5 of M: both edges below capacity
    assert validation_band("llama.cpp", "A100-80GB") is None and validation_band("vllm", "H200") is None
