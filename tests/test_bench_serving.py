"""benchmarks/bench_serving.py: the published rows load as copied and the script runs (its
figures are a benchmark's, not asserted here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import bench_serving  # noqa: E402

from roofline.hardware.catalog import load_hardware  # noqa: E402


def test_rows_load_with_their_precision_and_a_known_device_and_model():
    rows = bench_serving.load_rows()
    assert len(rows) == 17
    assert {r.metric for r in rows} == {bench_serving.THROUGHPUT, bench_serving.FIRST_TOKEN}
    for r in rows:
        load_hardware(r.device)
        assert (bench_serving.MODELS / f"{r.model}.json").is_file()
    a100 = next(r for r in rows if r.device == "a100-sxm4-80gb" and r.batch == 52)
    assert a100.precision == {"dtype": "fp16"} and a100.value == 591
    h100 = next(r for r in rows if r.device == "h100-sxm5-80gb" and r.batch == 48)
    assert h100.precision == {"dtype": "fp16", "weights": "fp8", "activations": "fp8",
                              "kv_cache": "fp8"}


def test_a_published_figure_becomes_seconds_of_what_is_predicted():
    rows = bench_serving.load_rows()
    tput = next(r for r in rows if r.batch == 52)  # 52 x 128 tokens at 591 tokens/s
    assert bench_serving.measured_s(tput) == pytest.approx(52 * 128 / 591)
    ttft = next(r for r in rows if r.metric == bench_serving.FIRST_TOKEN)
    assert bench_serving.measured_s(ttft) == pytest.approx(ttft.value / 1e3)


def test_the_script_prints_every_row_and_both_summaries(capsys):
    assert bench_serving.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("tok/s ") == 11 and out.count("TTFT ") == 6
    assert "output tokens/s (static batch), 11 rows" in out
    assert "first-token latency, 6 rows" in out
