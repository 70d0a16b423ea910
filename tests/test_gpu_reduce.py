"""A sum over a matrix's rows (a bias gradient) on a GPU runs torch's reduce kernel, whose launch
``analysis.gpu_reduce.launch`` works out as torch's setReduceConfig does; each figure below is
derived by hand from those rules and the module's constants, and the model is checked against the
sums a lent H100 timed (benchmarks/data/h100_live_colsums.csv)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from roofline.analysis.gpu_ops import predict_op
from roofline.analysis.gpu_reduce import ReduceLaunch, launch
from roofline.analysis.report import analyze
from roofline.hardware.catalog import load_hardware
from roofline.model.dtypes import itemsize
from roofline.model.network import network_from_yaml
from roofline.model.ops import Op, SumShape

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _predict(rows: int, columns: int, dtype: str, entry: str = "h100-sxm5-80gb"):
    hw = load_hardware(entry)
    op = Op("OP1", "x", "backward", "aten.sum", rows * columns,
            (rows * columns + columns) * itemsize(dtype), summed=SumShape(rows, columns))
    return predict_op(op, hw, dtype, hw.peak_flops_per_s(dtype), hw.bandwidth_bytes_per_s)


def test_a_bias_gradient_of_768_columns_splits_its_rows_across_blocks():
    # 2048 x 768 on 132 SMs of 2048 threads: 4-column vectors (768 % 4 == 0), so blocks of at
    # most 128 threads, 32 wide and 4 high; 2048 rows >= min(4 x 16, 256): the warps split
    # them, 512 a thread; grid ceil(192 / 32) = 6 <= 132 x 16 = 2112 and 512 >= 256: split
    # across max(min(ceil(2112 / 6), ceil(512 / 16)), ceil(512 / 256)) = 32 blocks, 16 rows a
    # thread (4 rounds of 4), the last block adding ceil(32 / 4) = 8 partial sums a thread
    assert launch(SumShape(2048, 768), 132, 2048) == ReduceLaunch(192, 128, 4, 4, 8)
    # 32768 rows: 8192 a thread after the warps, min(352, 512) = 352 blocks a column group,
    # ceil(8192 / 352) = 24 rows a thread (6 rounds), 88 partial sums
    assert launch(SumShape(32768, 768), 132, 2048) == ReduceLaunch(2112, 128, 4, 6, 88)
    # a T4's SMs hold 1024 threads: a target of 40 x 8 = 320 blocks, min(ceil(320 / 6), 512) =
    # 54 blocks a group, ceil(8192 / 54) = 152 rows a thread (38 rounds), ceil(54 / 4) = 14
    assert launch(SumShape(32768, 768), 40, 1024) == ReduceLaunch(324, 128, 4, 38, 14)


def test_odd_columns_sum_one_value_a_thread_in_blocks_of_512():
    # 50,257 columns (GPT-2's vocabulary): no vector, blocks 32 x 16; 2048 rows split over the
    # 16 warps, 128 a thread (< 256: no split across blocks), ceil(50257 / 32) = 1571 blocks
    assert launch(SumShape(2048, 50257), 132, 2048) == ReduceLaunch(1571, 512, 16, 32, 0)


def test_few_rows_give_each_warp_its_own_columns():
    # GPT-2's position embedding gradient: 8 rows of 786,432 < min(4 x 16, 256): the warps take
    # other columns, 32 x 4 x 4 = 512 columns a block, 1536 blocks, 8 rows a thread (2 rounds)
    assert launch(SumShape(8, 786432), 132, 2048) == ReduceLaunch(1536, 128, 4, 2, 0)
    # one wave of 2 x 0.88 us = 1.76 us under its stream, (8 x 786432 + 786432) x 2 B /
    # (0.88 x 3.35 TB/s) = 4.801 us: it streams, one kernel
    p = _predict(8, 786432, "bf16")
    assert p.basis == "streaming"
    assert p.time_s == pytest.approx(0.9e-6 + 14_155_776 / (0.88 * 3350e9))


def test_a_sum_over_rows_is_priced_by_its_rounds_and_partial_sums():
    # 2048 x 768 bf16 on the H100 entry: two kernels (0.9 us each), 4 rounds x 0.88 us = 3.52
    # us over its stream ((2048 x 768 + 768) x 2 B / (0.88 x 3.35 TB/s) = 1.068 us), then 8 x
    # 0.315 us = 2.52 us: 7.84 us (torch took 7.99 us on a lent H100)
    p = _predict(2048, 768, "bf16")
    assert (p.basis, p.terms["kernels"]) == ("reduce-kernel", 2)
    assert p.time_s == pytest.approx(1.8e-6 + 3.52e-6 + 2.52e-6)
    # 32768 rows: its stream, 50,333,184 B / (0.88 x 3.35 TB/s) = 17.074 us, over 6 rounds
    # (5.28 us), then 88 x 0.315 = 27.72 us: 46.59 us (measured 45.10 us)
    p = _predict(32768, 768, "bf16")
    assert p.time_s == pytest.approx(1.8e-6 + 50_333_184 / (0.88 * 3350e9) + 27.72e-6)
    # 50,257 odd columns: 1571 blocks of 512 threads, 4 an SM, 3 waves x 32 rounds x 0.88 us =
    # 84.48 us over the 69.86 us stream, one kernel: 85.38 us (measured 84.44 us)
    assert _predict(2048, 50257, "bf16").time_s == pytest.approx(0.9e-6 + 84.48e-6)


def test_the_model_holds_the_sums_a_lent_h100_timed():
    # 36 sums over rows (bf16 and fp32, 768-50,257 columns, 2k-32k rows), each call's kernels
    # (the reduce and its memset) against the prediction: 33 within 1.25x (a stream alone: 18)
    ratios = []
    with open(DATA / "h100_live_colsums.csv", newline="") as f:
        for row in csv.DictReader(f):
            if row["op"] == "sum-rows":
                m, n = (int(x) for x in row["shape"].split("x"))
                ratios.append(float(row["kernel_ms"]) * 1e-3 / _predict(m, n, row["dtype"]).time_s)
    assert len(ratios) == 36
    assert sum(1 / 1.25 <= r <= 1.25 for r in ratios) >= 33
    assert 0.75 < min(ratios) and max(ratios) < 1.3


def test_a_model_yaml_linear_bias_gradient_is_a_sum_over_its_tokens():
    text = ("batch: 8\nseq: 1024\ndtype: bf16\nmode: train\nlayers:\n"
            "  - {type: linear, in: 768, out: 768, bias: true}\n"
            "  - {type: transformer, hidden: 768, heads: 12, ffn: 3072, bias: all}\n")
    report = analyze(network_from_yaml(text), load_hardware("h100-sxm5-80gb"))
    grads = [r for r in report.ops if r.op.kind == "bias-backward"]
    assert {r.op.summed for r in grads} == {SumShape(8192, 3072), SumShape(8192, 2304),
                                            SumShape(8192, 768)}
    assert all(r.predicted_basis == "reduce-kernel" for r in grads)
    # on a CPU entry the op keeps its roof
    cpu = analyze(network_from_yaml(text), load_hardware("xeon-platinum-8480plus"))
    assert {r.predicted_basis for r in cpu.ops if r.op.kind == "bias-backward"} != {
        "reduce-kernel"}
