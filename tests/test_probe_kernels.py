"""The numpy kernels on tiny sizes: right results, right work counts; no timing asserted."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.kernels.cpu import (
    KernelCheckError,
    StreamArrays,
    check_gemm,
    gemm_kernel,
    read_stream_kernel,
    shaped_gemm_kernel,
    small_gemm_kernel,
    thin_gemm_kernels,
)


@pytest.mark.parametrize("dtype", ["fp64", "fp32"])
def test_gemm_kernel_work_and_run(dtype):
    kernel = gemm_kernel(8, dtype)
    assert kernel.work == 2 * 8 * 8 * 8  # 2 m n k = 1024 FLOP
    assert kernel.unit == "FLOP"
    kernel.run(3)


def test_gemm_check_catches_a_wrong_result():
    a = np.ones((4, 4))
    with pytest.raises(KernelCheckError):
        check_gemm(a, a, np.zeros((4, 4)), "fp64")


def test_small_gemm_counts_calls():
    kernel = small_gemm_kernel(4)
    assert (kernel.work, kernel.unit) == (1.0, "call")


def test_stream_triad_and_copy_results_and_bytes():
    with StreamArrays(1000, threads=2, block=64) as arrays:
        triad = arrays.kernel("triad")
        assert np.all(arrays.a == 1.0 + 3.0 * 2.0)  # a = b + s c = 1 + 3 x 2
        assert triad.work == 24 * 1000  # STREAM counts 3 x 8 B per element
        copy = arrays.kernel("copy")
        assert np.all(arrays.a == 1.0)
        assert copy.work == 16 * 1000
        assert arrays.nbytes == 3 * 8 * 1000
        triad.run(2)


def test_stream_threads_capped_by_elements():
    with StreamArrays(3, threads=8) as arrays:
        assert arrays.threads == 3
        arrays.kernel("triad")


def test_stream_check_catches_corruption():
    with StreamArrays(100, threads=1) as arrays:
        arrays.kernel("triad")
        arrays.a[-1] = 0
        with pytest.raises(KernelCheckError):
            arrays._check("triad")


def test_read_stream_is_a_dot_product_counting_every_byte_read():
    kernel = read_stream_kernel(1000, threads=3)  # two float64 vectors of 500: 8000 B read
    assert (kernel.work, kernel.unit) == (8000.0, "B")
    assert "dot product" in kernel.label
    kernel.run(2)


def test_thin_kernels_share_one_b_and_count_their_flops():
    kernels = thin_gemm_kernels((1, 4), 32, "fp32")
    assert [k.work for k in kernels] == [2 * 1 * 32 * 32, 2 * 4 * 32 * 32]  # 2 m nk^2
    assert [k.label for k in kernels] == ["fp32 GEMM 1x32x32", "fp32 GEMM 4x32x32"]
    for kernel in kernels:
        kernel.run(2)


def test_gemm_check_reads_a_corner_of_a_wide_b():
    rng = np.random.default_rng(0)
    a, b = rng.random((2, 8)), rng.random((8, 600))
    c = a @ b
    check_gemm(a, b, c, "fp64")
    c[0, 100] += 1.0  # inside the 256 columns checked
    with pytest.raises(KernelCheckError):
        check_gemm(a, b, c, "fp64")


def test_batched_shaped_gemm_counts_every_product_and_checks_first_and_last():
    kernel = shaped_gemm_kernel(3, 5, 7, "fp64", batch_count=4)
    assert kernel.work == 2 * 3 * 5 * 7 * 4
    kernel.run(2)
    rng = np.random.default_rng(0)
    a, b = rng.random((4, 3, 7)), rng.random((4, 7, 5))
    c = a @ b
    check_gemm(a, b, c, "fp64", "batched")
    c[-1, 0, 0] += 1.0  # the last product of the batch is read too
    with pytest.raises(KernelCheckError, match="batched: result differs"):
        check_gemm(a, b, c, "fp64", "batched")
