"""A captured layer norm backward on a GPU as torch's two kernels (analysis.gpu_layer_norm): dX's
stream with its re-reads past 4 KB rows, then the weight gradients' ceil(columns / 32) blocks
or their stream, and past 65,536 rows the split torch makes; over a few rows the forward's and
dX's rounds of loads. Each figure is worked by hand from the module's constants; the model is
checked against the whole ops lent GPUs timed (benchmarks/data/h1?0_live_norms.csv,
h1?0_live_smallsums*.csv), the H200's never fitted."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from roofline.analysis.gpu_layer_norm import row_rounds_s
from roofline.analysis.gpu_ops import predict_op
from roofline.hardware.catalog import load_hardware
from roofline.model.ops import Op, SumShape

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"
KIND = "aten.native_layer_norm_backward"


def _predict(rows: int, cols: int, dtype: str, entry: str = "h100-sxm5-80gb",
             kind: str = KIND):
    hw = load_hardware(entry)
    size = 2 if dtype == "bf16" else 4
    passes = 3 if kind == KIND else 2
    op = Op("OP1", "ln", "backward" if kind == KIND else "forward", kind, 0,
            passes * rows * cols * size, summed=SumShape(rows, cols))
    return predict_op(op, hw, dtype, hw.peak_flops_per_s(dtype), hw.bandwidth_bytes_per_s)


def test_a_few_rows_go_round_their_loads():
    # one decode token's layer norm of 4,096 bf16 on an H100: a block of 128 threads, vectors
    # of 4, twice over the row's 4096 / 512 = 8 rounds: 1.19 + 16 x 0.29 = 5.83 us, over its
    # row passes (1.5 x 16,384 B / (11.5 x 132 x 1.98 GHz)); with a launch 6.73 us (torch took
    # 6.06 us); 768 values: 2 x 2 rounds, 0.9 + 1.19 + 1.16 = 3.25 us (2.93 us)
    p = _predict(1, 4096, "bf16", kind="aten.native_layer_norm")
    assert (p.basis, p.time_s) == ("row-passes", pytest.approx(0.9e-6 + 1.19e-6 + 16 * 0.29e-6))
    assert _predict(8, 768, "bf16", kind="aten.native_layer_norm").time_s == pytest.approx(
        0.9e-6 + 1.19e-6 + 4 * 0.29e-6)
    # its backward: dX 0.58 + 16 x 0.175 = 3.38 us over its stream (torch's dX kernel 3.68 us),
    # the gradients' blocks as before: 32 x 1 / (3.3 x 1.98 GHz) under their stream
    p = _predict(1, 4096, "bf16")
    assert p.terms["dx_s"] == pytest.approx(0.58e-6 + 16 * 0.175e-6)
    # 2,112 blocks of 128 threads fill an H100 at once (132 SMs x 16): 4,224 rows take two
    # waves, 1.19 + 2 x 4 x 0.29 = 3.51 us, under the row passes there, 1.5 x 2 x 4224 x 768 x
    # 2 B / (11.5 x 132 x 1.98 GHz) = 6.48 us, which stay the op's
    hw = load_hardware("h100-sxm5-80gb")
    assert row_rounds_s(SumShape(4224, 768), hw) == pytest.approx(1.19e-6 + 8 * 0.29e-6)
    p = _predict(4224, 768, "bf16", kind="aten.native_layer_norm")
    assert p.terms["row_s"] == pytest.approx(1.5 * 2 * 4224 * 768 * 2 / (11.5 * 132 * 1.98e9))


def test_a_few_rows_hold_on_both_gpus():
    # 1-512 rows of 768 and 4,096, bf16 and fp32: the forward's one kernel, all 24 within 1.25x
    # on the H100 that fitted its rounds, its repeat and two H200 runs (as row passes: 0-1 of
    # 12 a dtype); the backward's two, 20 of 24 on each H100 run and 23 of 24 on each H200's
    # (before: 5 and 4): bench_gpu_norms.py's layer norm table
    import sys

    sys.path.insert(0, str(DATA.parent))
    import bench_gpu_norms

    rows = {tuple(r[:4]): (int(r[4]), int(r[5])) for r in (
        line.split() for line in bench_gpu_norms.small_norm_lines(False)[1:])}
    runs = (("H100", "first"), ("H100", "repeat"), ("H200", "first"), ("H200", "repeat"))
    for gpu, run in runs:
        for dtype in ("bf16", "fp32"):
            assert rows[(gpu, run, "layer-norm", dtype)] == (12, 12)
    backward = {(gpu, run): sum(rows[(gpu, run, "layer-norm-backward", d)][1]
                                for d in ("bf16", "fp32")) for gpu, run in runs}
    assert backward == {("H100", "first"): 20, ("H100", "repeat"): 20, ("H200", "first"): 23,
                        ("H200", "repeat"): 23}


def test_narrow_rows_wait_on_the_gradient_kernels_few_blocks():
    # 65,536 rows of 1,024 bf16 on an H100: dX streams its 3 x 134,217,728 B at 0.88 x 3.35 TB/s
    # = 136.59 us (2 KB rows: no re-read); the gradients run 1024 / 32 = 32 blocks, each
    # 65,536 x 32 values at 3.3 a clock of 1.98 GHz: 320.98 us, over their 91.06 us stream;
    # two launches of 0.9 us: 459.37 us (torch took 141 + 291 us; the op 434 us)
    p = _predict(65536, 1024, "bf16")
    assert p.basis == "layer-norm-kernels"
    assert p.terms["dx_s"] == pytest.approx(402_653_184 / (0.88 * 3350e9))
    assert p.terms["gradients_s"] == pytest.approx(65536 * 32 / (3.3 * 1.98e9))
    assert p.time_s == pytest.approx(1.8e-6 + 136.59e-6 + 320.98e-6, rel=1e-4)


def test_wide_rows_read_again_and_the_gradients_stream():
    # 16,384 rows of 4,096 bf16: 8 KB rows, over 4 KB: dX 1.55 x 136.59 = 211.71 us (torch:
    # 207 us); 128 blocks, one wave, 16,384 x 32 / (3.3 x 1.98e9) = 80.24 us under their
    # stream, 2 x 134,217,728 B / (0.88 x 3.35 TB/s) = 91.06 us (torch: 113 us)
    p = _predict(16384, 4096, "bf16")
    assert p.terms["dx_s"] == pytest.approx(1.55 * 402_653_184 / (0.88 * 3350e9))
    assert p.terms["gradients_s"] == pytest.approx(268_435_456 / (0.88 * 3350e9))


def test_many_rows_of_few_blocks_are_split_and_summed():
    # 87,381 rows of 768 bf16: 24 blocks < 132 / 2 and over 65,536 rows: torch splits the rows
    # over min(ceil(87381 / 32) = 2731, 32768 / 24 = 1365) blocks, which write 1365 x 768
    # partial sums each for dgamma and dbeta, then two sums over their 1365 rows (reduce
    # kernel: 4-column vectors, 6 blocks, 1365 >= 64 rows split over 4 warps, 342 a thread,
    # over 256: split over min(352, 22) = 22 blocks, 16 rows a thread: 3.2 us and 4 rounds of
    # 0.2 us, 6 partial sums a thread at 0.31 us; two kernels each)
    p = _predict(87381, 768, "bf16")
    tensor = 87381 * 768 * 2
    dram = 0.88 * 3350e9
    partial = 1365 * 768 * 2
    sums = 3.2e-6 + 4 * 0.2e-6 + 6 * 0.31e-6
    assert p.terms["kernels"] == 2 + 2 * 2
    assert p.terms["gradients_s"] == pytest.approx(2 * tensor / dram + 2 * partial / dram
                                                   + 2 * sums)


def _norms(path: Path) -> list[tuple[int, int, str, float]]:
    with open(path, newline="") as f:
        return [(int(r["rows"]), int(r["cols"]), r["dtype"], float(r["time_ms"]) * 1e-3)
                for r in csv.DictReader(f) if r["op"] == "layer-norm-backward" and r["time_ms"]
                and int(r["rows"]) * int(r["cols"]) >= 2**23 - 2**13]


@pytest.mark.parametrize("name,entry,least", [("h100_live_norms.csv", "h100-sxm5-80gb", 20),
                                               ("h200_live_norms.csv", "h200-sxm-141gb", 19)])
def test_the_whole_ops_hold_on_both_gpus(name, entry, least):
    # 2^23 and 2^26 values over rows of 768-8,192, bf16 and fp32: the H100's 20 and an H200's
    # (never fitted: 1.43x the bandwidth) within 1.25x of the two kernels (the row passes
    # before: 16 and 10)
    rows = _norms(DATA / name)
    assert len(rows) == 20
    ratios = [took / _predict(m, n, dtype, entry).time_s for m, n, dtype, took in rows]
    assert sum(1 / 1.25 <= r <= 1.25 for r in ratios) >= least


def test_a_norm_of_the_steps_input_runs_no_dx_kernel():
    # a layer norm over the step's input: nothing asks for dX, so torch runs only the gradient
    # kernel (the op moves dY and X: 2 x 65,536 x 1,024 x 2 B); 0.9 us + 320.98 us
    hw = load_hardware("h100-sxm5-80gb")
    op = Op("OP1", "ln", "backward", KIND, 0, 2 * 65536 * 1024 * 2,
            summed=SumShape(65536, 1024))
    p = predict_op(op, hw, "bf16", hw.peak_flops_per_s("bf16"), hw.bandwidth_bytes_per_s)
    assert (p.terms["dx_s"], p.terms["kernels"]) == (0.0, 1)
    assert p.time_s == pytest.approx(0.9e-6 + 320.98e-6, rel=1e-4)


def test_the_gradient_blocks_wave_by_the_threads_an_sm_holds():
    # 4,096 columns: 128 blocks of 1,024 threads. An H100's SMs hold 2,048 threads, two blocks
    # each: one wave on 132; an A10's hold 1,536, one block each: two waves on 72. With DRAM
    # out of the way, 16,384 x 32 values at 3.3 a block-clock: H100 1.98 GHz 80.24 us; A10
    # 1.695 GHz 2 x 93.73 us
    from roofline.analysis.gpu_layer_norm import layer_norm_backward_s
    from roofline.analysis.gpu_ops import sm_clocks_per_s

    for entry, expected in (("h100-sxm5-80gb", 16384 * 32 / (3.3 * 1.98e9)),
                            ("a10", 2 * 16384 * 32 / (3.3 * 1.695e9))):
        hw = load_hardware(entry)
        _, gradients_s, _ = layer_norm_backward_s(SumShape(16384, 4096), 2, hw, 1e18,
                                                  sm_clocks_per_s(hw))
        assert gradients_s == pytest.approx(expected), entry
