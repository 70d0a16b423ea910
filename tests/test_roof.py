"""The roofline itself, against datasheet ridges and its defining invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline import load_hardware
from roofline.roof import attainable_flops_per_s, bound, ridge_point

positive = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)


def test_v100_ridge_is_139():
    # NVIDIA GPU Performance Background guide: 125 FP16 Tensor TFLOPS / ~900 GB/s -> 139 ops:byte
    assert ridge_point(125e12, 900e9) == pytest.approx(138.9, abs=0.05)
    assert load_hardware("v100-sxm2-16gb").ridge("fp16") == pytest.approx(138.9, abs=0.05)


def test_a100_dense_ridges_not_416():
    # docs/design.md: 416 only comes out of the sparse 624 TFLOPS; dense 312 / 1.555 = 200.6,
    # 312 / 2.039 = 153.0
    assert load_hardware("a100-sxm4-40gb").ridge("fp16") == pytest.approx(200.6, abs=0.1)
    assert load_hardware("a100-sxm4-80gb").ridge("fp16") == pytest.approx(153.0, abs=0.1)


def test_bound_switches_at_the_ridge():
    assert bound(138.8, 138.9) == "memory"
    assert bound(138.9, 138.9) == "compute"


def test_attainable_on_the_memory_slope_by_hand():
    # 1 FLOP/B x 900 GB/s = 0.9 TFLOP/s, below the 125 TFLOP/s ceiling
    assert attainable_flops_per_s(1.0, 125e12, 900e9) == pytest.approx(0.9e12)
    assert attainable_flops_per_s(1000.0, 125e12, 900e9) == 125e12


@given(positive, positive, positive)
def test_attainable_never_exceeds_either_roof(intensity, peak, bandwidth):
    attainable = attainable_flops_per_s(intensity, peak, bandwidth)
    assert attainable <= peak
    assert attainable <= intensity * bandwidth
    assert attainable == min(peak, intensity * bandwidth)


@given(positive, positive, positive, positive)
def test_attainable_never_decreases_with_intensity(a, b, peak, bandwidth):
    low, high = sorted((a, b))
    assert attainable_flops_per_s(low, peak, bandwidth) <= attainable_flops_per_s(high, peak,
                                                                                 bandwidth)
