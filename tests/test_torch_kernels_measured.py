"""What torch's own kernels took on a lent H100 is said beside the predictions it bears on, with
the figures of the files it was measured into: its quantized GEMMs (benchmarks/data/
h100_live_quant.csv; measured / predicted recomputed here from the timings) beside every
weight-only or int8 prediction on a GPU, and a plain PyTorch decode step eagerly and as a CUDA
graph (benchmarks/data/h100_live_decode.json) beside a GPU's decode prediction."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from roofline.analysis.gpu_gemm import TORCH_INT8_BEST_TOPS, TORCH_QUANT_MEASURED
from roofline.analysis.report import analyze_gemm
from roofline.api import analyze_model
from roofline.hardware.catalog import load_hardware
from roofline.model.gemm import Gemm
from roofline.output.times import quantized_lines

DATA = Path(__file__).parent.parent / "benchmarks" / "data" / "h100_live_quant.csv"
LLAMA = str(Path(__file__).parent.parent / "examples" / "hf" / "llama-2-7b.json")


def _ratios(kind: str, lo: int, hi: int, bound: str = "") -> list[float]:
    hw = load_hardware("h100-sxm5-80gb")
    dtype, stored = {"w4a16": ("bf16", "int4"), "w8a16": ("bf16", "int8"),
                     "int8": ("int8", "")}[kind]
    out = []
    with open(DATA, newline="") as f:
        for row in csv.DictReader(f):
            m = int(row["m"])
            if row["kind"] != kind or not lo <= m <= hi or row["group"] not in ("0", "128"):
                continue
            gemm = Gemm("MM1", "x", "forward", m, int(row["n"]), int(row["k"]), dtype,
                        b_dtype=stored, group_size=128 if stored == "int4" else 0)
            result = analyze_gemm(gemm, hw)
            if bound and result.bound != bound:
                continue
            out.append(float(row["time_ms"]) * 1e-3 / result.predicted_time_s)
    return out


def test_the_figures_said_are_the_measured_ones():
    t = TORCH_QUANT_MEASURED
    for key, (kind, lo, hi) in {"int4_1_2": ("w4a16", 1, 2), "int4_16_64": ("w4a16", 16, 64),
                                "int8_weight_1_2": ("w8a16", 1, 2)}.items():
        got = _ratios(kind, lo, hi)
        assert len(got) >= 8
        assert (min(got), max(got)) == pytest.approx(t[key], abs=0.01), key
    compute = _ratios("int8", 17, 10**9, "compute")
    assert (min(compute), max(compute)) == pytest.approx(t["int8_compute"], abs=0.01)
    memory = _ratios("int8", 17, 10**9, "memory")
    assert (min(memory), max(memory)) == pytest.approx(t["int8_memory"], abs=0.01)
    with open(DATA, newline="") as f:
        best = max(2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / (float(r["time_ms"]) * 1e-3)
                   for r in csv.DictReader(f) if r["kind"] == "int8")
    assert best / 1e12 == pytest.approx(TORCH_INT8_BEST_TOPS, abs=0.5)


def test_each_prediction_of_a_quantized_gemm_on_a_gpu_says_what_it_assumes():
    int4 = analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=1, seq=1024,
                         dtype="bf16", weights="int4")
    (line,) = quantized_lines(int4)
    assert line.startswith("weight-only GEMMs: MM1, MM2, MM3, MM4 (B int4): predicted as "
                           "one kernel that dequantizes B")
    assert "_weight_int4pack_mm) 1.25-1.67x the prediction at 1-2 tokens" in line
    w8a8 = analyze_model(LLAMA, "h100", mode="inference", phase="prefill", batch=1, seq=1024,
                         dtype="int8")
    (line,) = quantized_lines(w8a8)
    assert "pytorch/pytorch#187094" in line and "at best 988 TOPS, its memory-bound" in line
    # fp8 weights: no torch kernel of them was timed, and no int kernel is named
    fp8 = analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=1, seq=1024,
                        dtype="bf16", weights="fp8")
    (line,) = quantized_lines(fp8)
    assert ("(no weight-only timing is in the fit); fp8 weights: no torch kernel timed; vLLM "
            "runs an fp8 checkpoint on a GPU with fp8 Tensor Cores as W8A8") in line
    # an entry whose probe timed its kernels from Python says its prediction is eager's
    from roofline.output.times import launch_lines

    eager = analyze_model(LLAMA, str(DATA.parent / "h100_live_probe.yaml"), mode="inference",
                          phase="decode", batch=1, seq=1024, dtype="bf16")
    (line,) = launch_lines(eager)
    assert line.startswith("launches: predicted with this probe's per-kernel times from Python")
    # an A100 runs torch's int8 GEMMs on its own generation's kernels: no int8 line there
    assert quantized_lines(analyze_model(LLAMA, "a100", mode="inference", phase="prefill",
                                         batch=1, seq=1024, dtype="int8")) == []
    dense = analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=1, seq=1024,
                          dtype="bf16")
    assert quantized_lines(dense) == []


def test_the_quant_measurement_asks_only_what_each_torch_kernel_takes(monkeypatch):
    """benchmarks/_quant_gemms.py (run on a GPU by gpu_measure.py --parts quant): int4 with
    groups that divide K, torch._int_mm only at M > 16 with N and K multiples of 8, no row
    twice."""
    import sys

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "benchmarks"))
    sys.modules.pop("_quant_gemms", None)
    import _quant_gemms as q

    rows = q.quant_shapes([(16, 4096, 4096), (35, 8, 8), (64, 12, 8), (128, 8, 8)])
    assert len(rows) == len(set(rows))
    assert [r for r in rows if r[0] == "int8" and r[3] < 4096] == [("int8", 35, 8, 8, 0),
                                                                     ("int8", 128, 8, 8, 0)]
    assert all(r[1] > 16 and r[2] % 8 == 0 and r[3] % 8 == 0 for r in rows if r[0] == "int8")
    assert all(r[3] % r[4] == 0 and r[3] % (16 * q.INNER_K_TILES) == 0
               for r in rows if r[0] == "w4a16")


def test_a_gpu_decode_says_eager_pytorch_waits_on_the_host_with_the_measured_figures():
    import json

    from roofline.analysis.gpu_ops import EAGER_DECODE_MEASURED as E
    from roofline.output.times import launch_lines

    rows = json.loads((DATA.parent / "h100_live_decode.json").read_text())
    first = next(r for r in rows if (r["batch"], r["kv"]) == (1, 1024))
    assert first["kernels"] == E["kernels"]
    assert first["graph_s"] == pytest.approx(E["graph_s"], rel=1e-3)
    assert first["eager_s"] == pytest.approx(E["eager_s"], rel=1e-3)
    # eager PyTorch is host-bound in every row: 1.8x its graph time or more
    assert min(r["eager_s"] / r["graph_s"] for r in rows) > 1.8
    decode = analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=1, seq=1024,
                           dtype="bf16")
    (line,) = launch_lines(decode)
    assert "(1,290 kernels) took 22.3 ms eagerly on an H100, 7.65 ms as a CUDA graph" in line
    prefill = analyze_model(LLAMA, "h100", mode="inference", phase="prefill", batch=1,
                            seq=1024, dtype="bf16")
    assert launch_lines(prefill) == []
    assert launch_lines(analyze_model(LLAMA, "xeon-platinum-8380", mode="inference", phase="decode",
                                      batch=1, seq=1024, dtype="fp32")) == []


def test_the_html_page_says_both_too():
    from roofline.output.html import report_page

    report = analyze_model(LLAMA, "h100", mode="inference", phase="decode", batch=1, seq=1024,
                           dtype="bf16", weights="int4")
    page = report_page([report])
    assert "weight-only GEMMs: MM1, MM2, MM3, MM4 (B int4)" in page
    assert "launches: predicted as the kernels&#x27; own time" in page or \
        "launches: predicted as the kernels' own time" in page


def test_the_fp8_figures_said_are_the_measured_ones():
    # torch._scaled_mm's fp8 rows of the lent H100 (h100_live_gemm.csv), measured / predicted
    # on the datasheet entry for the compute-bound GEMMs predicted at 50 us or more, and the
    # best rate of all its fp8 rows
    import statistics

    from roofline.analysis.gpu_gemm import TORCH_FP8_MEASURED as F

    hw = load_hardware("h100-sxm5-80gb")
    ratios, best = [], 0.0
    with open(DATA.parent / "h100_live_gemm.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["dtype"] != "fp8":
                continue
            m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
            measured = float(row["time_ms"]) * 1e-3
            best = max(best, 2 * m * n * k / measured / 1e12)
            result = analyze_gemm(Gemm("MM1", "x", "forward", m, n, k, "fp8"), hw)
            if result.bound == "compute" and result.predicted_time_s >= 50e-6:
                ratios.append(measured / result.predicted_time_s)
    assert len(ratios) >= 20
    assert (min(ratios), max(ratios)) == pytest.approx((F["low"], F["high"]), abs=0.01)
    assert statistics.median(ratios) == pytest.approx(F["median"], abs=0.01)
    assert best == pytest.approx(F["best_tflops"], abs=0.5)


def test_an_fp8_prediction_on_hopper_says_what_torchs_kernel_took():
    from roofline import analyze, network_from_yaml

    yaml = "batch: 8192\ndtype: fp8\nmlp: [8192, 8192]\nmode: inference"
    lines = quantized_lines(analyze(network_from_yaml(yaml), load_hardware("h100-sxm5-80gb")))
    assert any(line.startswith("fp8 GEMMs: MM1: ") and "torch._scaled_mm" in line
               and "1.15-1.43x" in line for line in lines)
    # Blackwell's fp8 rows (XLA's B200 table) are not slower than predicted: no line there
    assert quantized_lines(analyze(network_from_yaml(yaml), load_hardware("b200"))) == []
