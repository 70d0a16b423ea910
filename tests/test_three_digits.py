"""Numbers of 1000 and more read as numbers, not ``.3g``'s exponent: an H100's fp8 peak in the
GEMM table reads 1979 TFLOP/s, a ridge past 1000 FLOP/B on a chart reads as such."""

from __future__ import annotations

import pytest

from roofline.units import three_digits


@pytest.mark.parametrize(("value", "text"), [
    (1979.0, "1979"), (999.4, "999"), (312.0, "312"), (153.04, "153"), (0.00338, "0.00338"),
    (0.0, "0"), (12_345.6, "12346"), (-2048.0, "-2048"), (999_999.4, "999999"),
    (1_234_567.0, "1.23e6"),  # seven digits: an exponent, three digits kept
    (-2.5e7, "-2.5e7"), (1e20, "1e20"),
])
def test_three_significant_digits_without_an_exponent(value, text):
    assert three_digits(value) == text


def test_the_gemm_table_reads_an_fp8_peak_whole(invoke):
    # 4096^3 in fp8 on an H100 SXM: compute-bound at the dense fp8 peak, 1979 TFLOP/s
    out = invoke("gemm", "4096", "4096", "4096", "--hw", "h100", "--dtype", "fp8").stdout
    row = next(line for line in out.splitlines() if line.startswith("MM1"))
    assert " 1979 " in row and "e+03" not in out


@pytest.mark.parametrize(("value", "text"), [
    (0.0009999996, "1 ms"),   # rounded before the unit is chosen, not "1e+03 us"
    (4.84e-05, "48.4 us"), (0.00302, "3.02 ms"), (1500.0, "1500 s"), (0.0, "0 s"),
    (6 / 2039e9, "2.94 ps"),  # gemm 1 1 1, fp16, A100: 6 B at 2039 GB/s (2 FLOPs: less)
    (123_456.0, "123000 s"), (999_999.0, "1e6 s"),  # rounded to 1.00e6 first
    (8.5197e21, "8.52e21 s"),  # no prefix above the second: an exponent
])
def test_a_duration_reads_with_its_unit(value, text):
    from roofline.units import seconds

    assert seconds(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (999.9996e6, "1 GB"), (4.29e9, "4.29 GB"), (1.5e18, "1.5 EB"), (512.0, "512 B"),
    (2.66e21, "2.66 ZB"), (7.25e24, "7.25 YB"), (999.4e24, "999 YB"),
    (999.6e24, "1e27 B"), (5.3169e36, "5.32e36 B"),  # past yotta: an exponent, no prefix
])
def test_a_quantity_reads_with_its_prefix(value, text):
    from roofline.units import si

    assert si(value, "B") == text


def test_a_probe_warning_reads_its_times_as_durations():
    from roofline.output.probe_notes import note_text
    from roofline.probe.result import Note

    note = Note("unstable", {"label": "torch add 3.0 MiB", "spread": 0.19, "best_s": 4.84e-05,
                             "median_s": 6.3e-05, "worst_s": 8.32e-05, "values": 11})
    assert note_text(note).startswith("torch add 3.0 MiB may be unstable: spread (MAD/median) "
                                      "19%, best 48.4 us, median 63 us, worst 83.2 us per call "
                                      "over 11 values;")


@pytest.mark.parametrize(("n", "text"), [(1, "1 GPU"), (8, "8 GPUs"), (0, "0 GPUs")])
def test_a_count_agrees_with_its_noun(n, text):
    from roofline.units import count

    assert count(n, "GPU") == text


def test_a_gemm_of_the_largest_dimensions_prints_no_float_noise(invoke):
    # 2**40 cubed in fp16 on an A100: 2 x 2**120 = 2.66e36 FLOP; bytes 2 x 3 x 2**80 = 7.25e24
    # (7.25 YB); the roof is the FLOP time, 2.66e36 / 312e12 = 8.52e21 s
    out = invoke("gemm", *["1099511627776"] * 3, "--hw", "a100").stdout
    assert "roof 8.52e21 s" in out and "7.25 YB" in out
    assert "e36 FLOP" in out  # the totals line, past yotta
    assert not any(len(word) > 14 and word.isdigit() for word in out.split())
