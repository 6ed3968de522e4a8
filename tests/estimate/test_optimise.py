"""The coefficient fits' loss and optimiser (estimate/optimise.py), checked by hand."""

from __future__ import annotations

import math

import pytest

from infer_advisor.estimate.optimise import SOFT_L1_SCALE, nelder_mead, soft_l1


def test_soft_l1_is_quadratic_near_zero_and_linear_far_out():
    r = math.log1p(0.01) / SOFT_L1_SCALE
    assert soft_l1([0.01]) == pytest.approx(math.sqrt(1 + r * r) - 1)
    assert soft_l1([0.01]) == pytest.approx(r * r / 2, rel=1e-3)  # quadratic for small log ratios
    far = math.log1p(9.0) / SOFT_L1_SCALE
    assert soft_l1([9.0]) == pytest.approx(far - 1, rel=0.02)  # about linear ten times off


def test_soft_l1_charges_a_point_it_cannot_predict():
    assert soft_l1([None]) == soft_l1([-1.0]) == soft_l1([float("nan")]) == 10.0
    assert soft_l1([0.0, 0.0]) == 0.0


def test_nelder_mead_finds_an_interior_minimum():
    x = nelder_mead(lambda v: (v[0] - 0.3) ** 2 + (v[1] - 4.0) ** 2, [0.9, 1.0], [0.0, 0.0], [1.0, 10.0], iters=400)
    assert x == pytest.approx([0.3, 4.0], abs=0.02)


def test_nelder_mead_stays_in_the_box():
    x = nelder_mead(lambda v: (v[0] + 5.0) ** 2, [0.5], [0.1], [1.0])
    assert x[0] == pytest.approx(0.1)  # the minimum is outside: the lower bound
