"""Numbers of 1000 and more read as numbers, not ``.3g``'s exponent: an H100's fp8 peak in the
GEMM table reads 1979 TFLOP/s, a ridge past 1000 FLOP/B on a chart reads as such."""

from __future__ import annotations

import pytest

from roofline.units import three_digits


@pytest.mark.parametrize(("value", "text"), [
    (1979.0, "1979"), (999.4, "999"), (312.0, "312"), (153.04, "153"), (0.00338, "0.00338"),
    (0.0, "0"), (12_345.6, "12346"), (-2048.0, "-2048"),
])
def test_three_significant_digits_without_an_exponent(value, text):
    assert three_digits(value) == text


def test_the_gemm_table_reads_an_fp8_peak_whole(invoke):
    # 4096^3 in fp8 on an H100 SXM: compute-bound at the dense fp8 peak, 1979 TFLOP/s
    out = invoke("gemm", "4096", "4096", "4096", "--hw", "h100", "--dtype", "fp8").stdout
    row = next(line for line in out.splitlines() if line.startswith("MM1"))
    assert " 1979 " in row and "e+03" not in out
