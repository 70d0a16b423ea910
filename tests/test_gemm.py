"""FLOPs, bytes and intensity against figures computed by hand or published by NVIDIA."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.model.gemm import Gemm, gemm_bytes, gemm_flops, gemm_intensity

dims = st.integers(min_value=1, max_value=100_000)
dtypes = st.sampled_from(["fp64", "fp32", "tf32", "fp16", "bf16", "int8", "fp8"])


def test_small_shape_by_hand():
    # M=4, N=6, K=5: FLOPs = 2*4*6*5 = 240; fp32 bytes = 4*(4*5 + 5*6 + 4*6) = 4*74 = 296
    assert gemm_flops(4, 6, 5) == 240
    assert gemm_bytes(4, 6, 5, "fp32") == 296
    assert gemm_intensity(4, 6, 5, "fp32") == pytest.approx(240 / 296)


def test_nvidia_linear_layer_batch_512_is_315_flop_per_byte():
    # NVIDIA GPU Performance Background guide, "Understanding Performance" table:
    # linear layer, 4096 outputs, 1024 inputs, batch 512, FP16 -> 315 FLOPS/B.
    # 2*512*4096*1024 = 4,294,967,296 FLOP; 2*(512*1024 + 1024*4096 + 512*4096) = 13,631,488 B
    assert gemm_flops(512, 4096, 1024) == 4_294_967_296
    assert gemm_bytes(512, 4096, 1024, "fp16") == 13_631_488
    assert gemm_intensity(512, 4096, 1024, "fp16") == pytest.approx(315.08, abs=0.01)


def test_nvidia_linear_layer_batch_1_is_about_1_flop_per_byte():
    # Same table, batch 1 -> 1 FLOPS/B: 8,388,608 FLOP over 2*(1024 + 4,194,304 + 4096) B
    assert gemm_intensity(1, 4096, 1024, "fp16") == pytest.approx(8_388_608 / 8_398_848)
    assert round(gemm_intensity(1, 4096, 1024, "fp16")) == 1


def test_nvidia_matrix_guide_8192_128_8192_is_124_flop_per_byte():
    # Matrix Multiplication Background guide: M=8192, N=128, K=8192 in FP16 -> 124.1 FLOPS/B
    assert gemm_intensity(8192, 128, 8192, "fp16") == pytest.approx(124.1, abs=0.05)


def test_gemm_properties_match_functions():
    g = Gemm("MM1", "fc1", "forward", 512, 4096, 1024, "fp16")
    assert (g.flops, g.bytes) == (4_294_967_296, 13_631_488)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_gemm_rejects_bad_dimensions(bad):
    with pytest.raises(ValueError):
        Gemm("MM1", "fc1", "forward", bad, 8, 8, "fp16")


@given(dims, dims, dims)
def test_flops_is_2mnk_and_symmetric_in_m_n(m, n, k):
    assert gemm_flops(m, n, k) == 2 * m * n * k
    assert gemm_flops(m, n, k) == gemm_flops(n, m, k)


@given(dims, dims, dims, dtypes)
def test_intensity_is_below_twice_the_smallest_dimension_over_itemsize(m, n, k, dtype):
    # mk + kn + mn >= mn, so 2mnk / (e(mk + kn + mn)) <= 2k/e; likewise for m and n.
    from roofline.model.dtypes import itemsize

    assert gemm_intensity(m, n, k, dtype) <= 2 * min(m, n, k) / itemsize(dtype) * (1 + 1e-12)
