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
    monkeypatch.setattr(band_module, "speed_error_band", lambda engine: (0.93, 1.07))
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


def test_the_shipped_band_is_the_one_confidence_sizes_with_and_the_queue_grows_past_capacity(top):
    low, high = speed_error_band("llama.cpp")
    assert 0 < low < 1 < high
    assert error_band_upper("llama.cpp", 0.9) == pytest.approx(1 / low)
    c = size(rate=0.7 * top, replicas=1, **ONE_H200).chosen
    b = c.ttft_band
    assert (b.slower.speed, b.faster.speed) == (low, high)
    assert 0.7 / low > 1 and b.slower.queue_grows  # 0.7 of M on a replica 1/low slower: past its capacity
    assert b.faster.ttft_p50_s < c.ttft_p50_s


def test_the_cli_says_the_band_and_the_note_near_the_knee(top):
    from infer_advisor.cli.render_capacity import ttft_band_rows

    c = size(rate=0.9 * top, replicas=1, **ONE_H200).chosen
    rows = ttft_band_rows(c)
    assert rows[0][0] == "TTFT band" and "the queue grows if it is" in rows[0][1] and "slower" in rows[0][1]
    assert "faster than modelled" in rows[0][1]
    assert any("sensitive" in text or "several-fold" in text for _, text in rows[1:])
    assert len(ttft_band_rows(c.model_copy(update={"ttft_band": c.ttft_band.model_copy(update={"near_knee": False})}))) == 1
