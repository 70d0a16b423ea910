"""Do torch's layer norm and softmax kernels on an H100 and H200 take the time roofline predicts
for them as captured ops? On demand (no test; no GPU: it reads what benchmarks/gpu_measure.py
--parts norms,rows --graph timed on a lent H100 SXM5 and H200, benchmarks/data/h1?0_live_norms.csv
and h1?0_live_rows.csv, and the L2 sweep --parts rows timed, h1?0_live_softmax_l2.csv):

    .venv/bin/python benchmarks/bench_gpu_norms.py [--markdown]

Each row is one op over rows x cols values (bf16 or fp32), priced as ``roofline.torch.capture``
records it (``aten.native_layer_norm``, ``aten.native_layer_norm_backward``, ``aten._softmax``,
``aten._log_softmax``, their backwards: the tensors it reads and writes, ``analysis.gpu_ops``'
two kernels for the softmax backward; a softmax's and its backward's row width, ``Op.row``) on
each GPU's datasheet entry. Printed per op, dtype and size (2^20, 2^23, 2^26 values): measured /
predicted on the H100 and on the H200 by row width, and the H100's time over the H200's (1.43
where a kernel streams at either GPU's bandwidth, 1.0 where each value's work on the same 132
SMs at the same clock sets it). The softmax forward's rates were fitted on the H100's bf16
softmax, the backward's warp rates on its bf16 backwards up to 1,024 columns
(``analysis.gpu_softmax``); every other row was not. Then the L2 sweep: the softmax forward at
2^26 values over the widths where torch's three-pass kernel's rows outgrow half the L2 (x:
their bytes over it), measured / predicted on each GPU (the ramp was read off the H100's fp32;
the H200's 60 MiB never fitted). Then the softmax backwards of both files by width: the kernel
torch runs, x for its two-pass kernel, measured / predicted, and as a stream of the op's bytes
(the prediction before the backward was priced by width).
data/h100_live_norm_kernels.csv and h100_live_rows_kernels.json hold the kernels one H100 ran
for each (torch.profiler), h100_live_softmax_ncu.csv what Nsight Compute counted of the
three-pass kernel.
Then ``F.cross_entropy`` over GPT-2's, Llama-2's and Llama-3's vocabularies, forward (CUDA-graph
replays) and forward with backward (eager calls), against the captured loss's prediction (needs
torch, CPU build: the capture runs on the meta device).
Then Liger-Kernel's published ``torch.nn.LayerNorm`` forward timings (data/liger_layer_norm.csv:
fp32, 4096 rows of 1024-16384 on A100 SXM4 and PCIe 80GB and an H100 SXM5), never fitted:
measured / predicted as a captured ``aten.native_layer_norm``, and as a stream alone.
Then layer norms over a few rows (1-512 of 768 and 4,096, data/h1?0_live_smallsums*.csv), their
kernels against the captured op's prediction, where their rounds of loads bound them
(``gpu_layer_norm.row_rounds_s``, fitted on the first H100 run's), and as priced before.
Last, sums over a matrix's rows (a bias gradient) and along them (``x.sum(-1)``, an RMSNorm's
``x.mean(-1)``) on two H100s and two H200s (data/h1?0_live_colsums*.csv, h1?0_live_smallsums*.csv:
768-50,257 columns, 1-32,768 rows) against the captured op's prediction through torch's reduce
kernel (``analysis.gpu_reduce``, whose four time constants the first H100 run's sums over rows
fitted; the rest never), and each as a stream alone. Then a convolution's bias gradient in NCHW
and channels_last (``x.sum((0, 2, 3))``, as torch's ``convolution_backward`` sums it) against the
captured ``bias-backward``'s prediction and as a stream; and a Conv2d with a bias trained through
autograd (data/h100_live_convbias.csv), its bias gradient's kernel against the op the capture
records for the same module.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import statistics
import sys
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from _tables import table_lines

HERE = Path(__file__).resolve().parent / "data"
FILES = {"h100-sxm5-80gb": HERE / "h100_live_norms.csv",
         "h200-sxm-141gb": HERE / "h200_live_norms.csv"}
ROWS = {"h100-sxm5-80gb": HERE / "h100_live_rows.csv",
        "h200-sxm-141gb": HERE / "h200_live_rows.csv"}
SWEEPS = {"h100-sxm5-80gb": HERE / "h100_live_softmax_l2.csv",
          "h200-sxm-141gb": HERE / "h200_live_softmax_l2.csv"}
LIGER = HERE / "liger_layer_norm.csv"
#: gpu_measure's op -> (captured kind, its ELEMENTWISE kind: FLOPs and tensors per value)
KINDS = {"layer-norm": ("aten.native_layer_norm", "layernorm"),
         "layer-norm-backward": ("aten.native_layer_norm_backward", "layernorm-backward"),
         "softmax": ("aten._softmax", "softmax"),
         "softmax-backward": ("aten._softmax_backward_data", "softmax-backward"),
         "log-softmax": ("aten._log_softmax", "softmax"),
         "log-softmax-backward": ("aten._log_softmax_backward_data", "softmax-backward")}


def ratios(files: dict[str, Path] = FILES
           ) -> dict[tuple[str, str, int, int], dict[str, tuple[float, float]]]:
    """(op, dtype, log2 of the values, cols) -> {device: (measured s, predicted s)} of the
    ``files`` (by device; the op rows gpu_measure.py timed)."""
    from roofline.analysis.gpu_ops import predict_op
    from roofline.analysis.gpu_softmax import SOFTMAX_BACKWARD_KINDS, SOFTMAX_KINDS
    from roofline.hardware.catalog import load_hardware
    from roofline.model.dtypes import itemsize
    from roofline.model.ops import ELEMENTWISE, Op, SumShape

    out: dict[tuple[str, str, int, int], dict[str, tuple[float, float]]] = {}
    for device, path in files.items():
        hw = load_hardware(device)
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if not row["time_ms"] or row["op"] not in KINDS:
                    continue
                rows, cols, dtype = int(row["rows"]), int(row["cols"]), row["dtype"]
                kind, table = KINDS[row["op"]]
                flops, reads, writes = ELEMENTWISE[table]
                n = rows * cols
                # a softmax or its backward over the last dimension: the row's width; a layer
                # norm: its rows and columns (the backward's weight gradients sum over them)
                op = Op("OP1", "x", "backward" if "backward" in kind else "forward", kind,
                        flops * n, (reads + writes) * itemsize(dtype) * n,
                        row=cols if kind in SOFTMAX_KINDS | SOFTMAX_BACKWARD_KINDS else 0,
                        summed=SumShape(rows, cols) if kind in LAYER_NORMS else None)
                predicted = predict_op(op, hw, dtype, hw.peak_flops_per_s(dtype),
                                       hw.bandwidth_bytes_per_s).time_s
                key = (row["op"], dtype, round(math.log2(n)), cols)  # rows = 2^v // cols
                out.setdefault(key, {})[device] = (float(row["time_ms"]) * 1e-3, predicted)
    return out


def lines(markdown: bool, files: dict[str, Path] = FILES) -> list[str]:
    data = ratios(files)
    cols = sorted({k[3] for k in data})
    body = []
    for op, dtype, values in sorted({k[:3] for k in data}):
        cells, speed = [], []
        for c in cols:
            got = data.get((op, dtype, values, c), {})
            h1, h2 = got.get("h100-sxm5-80gb"), got.get("h200-sxm-141gb")
            cells.append(" / ".join(f"{m / p:.2f}" for m, p in (h1, h2) if m) if h1 and h2
                         else "")
            if h1 and h2:
                speed.append(h1[0] / h2[0])
        body.append([op, dtype, f"2^{values}", *cells,
                     f"{min(speed):.2f}-{max(speed):.2f}"])
    all_ratios = [m / p for got in data.values() for m, p in got.values()]
    return [*table_lines(["op", "dtype", "values", *[f"{c} cols: H100 / H200" for c in cols],
                          "H100 / H200 time"], body, markdown), "",
            f"measured / predicted over all {len(all_ratios)} rows: median "
            f"{statistics.median(all_ratios):.2f}, {min(all_ratios):.2f}-{max(all_ratios):.2f}",
            "within 1.25x at 2^23 and 2^26 values (H100 / H200): " + "; ".join(
                f"{op} {dtype} {' / '.join(share(data, op, dtype, d) for d in files)}"
                for op, dtype in sorted({k[:2] for k in data}))]


def sweep_lines(markdown: bool) -> list[str]:
    """The L2 sweep: measured / predicted by width on each GPU, and x (the three-pass kernel's
    rows held at once over half the L2) on each."""
    from roofline.analysis.gpu_softmax import l2_fill, three_pass
    from roofline.hardware.catalog import load_hardware
    from roofline.model.dtypes import itemsize

    data = ratios(SWEEPS)
    body, ratios_by_device = [], {d: [] for d in SWEEPS}
    for op, dtype, values, cols in sorted(data, key=lambda k: (k[1], k[0], k[3])):
        got = data[(op, dtype, values, cols)]
        size = itemsize(dtype)
        cells = []
        for device in SWEEPS:
            hw = load_hardware(device)
            x = 0.0  # values: log2 of the op's values (``ratios``' key)
            if three_pass(cols, size):
                x = l2_fill(cols, size, 2 ** values // cols, hw) or 0.0
            m, p = got[device]
            ratios_by_device[device].append(m / p)
            cells += [f"{x:.2f}", f"{m / p:.2f}"]
        body.append([op, dtype, str(cols), *cells])
    return ["L2 sweep (2^26 values; x: the three-pass kernel's rows held at once over half the "
            "L2, 0 where another kernel runs):",
            *table_lines(["op", "dtype", "cols", "H100 x", "H100 measured / predicted",
                          "H200 x", "H200 measured / predicted"], body, markdown), "",
            "within 1.25x: " + "; ".join(
                f"{d} {sum(1 / 1.25 <= r <= 1.25 for r in v)} of {len(v)} "
                f"({min(v):.2f}-{max(v):.2f})" for d, v in ratios_by_device.items())]


def backward_lines(markdown: bool) -> list[str]:
    """The softmax and log-softmax backwards of both files by width (2^23 and 2^26 values):
    the kernel torch runs (``analysis.gpu_softmax``), x (the two-pass kernel's rows held at once
    over half the L2), measured / predicted on each GPU with the row's width, and as a stream of
    the op's bytes without it (the prediction before the backward was priced by width)."""
    from roofline.analysis.gpu_ops import predict_op
    from roofline.analysis.gpu_softmax import (
        SOFTMAX_BACKWARD_BLOCKS_PER_SM,
        backward_warp,
        l2_fill,
        two_pass,
    )
    from roofline.hardware.catalog import load_hardware
    from roofline.model.dtypes import itemsize
    from roofline.model.ops import Op

    def kernel(cols: int, size: int) -> str:
        if backward_warp(cols, size):
            return "warp"
        return "two-pass" if two_pass(cols, size) else "shared memory"

    data = {**ratios(FILES), **ratios(ROWS)}  # the rows file's 768 over the norms file's
    body = []
    counts: dict[str, list[int]] = {}
    for op, dtype, values, cols in sorted(
            (k for k in data if k[0].endswith("softmax-backward") and k[2] >= 23),
            key=lambda k: (k[0], k[1], k[2], k[3])):
        size = itemsize(dtype)
        cells = []
        for device in ROWS:
            hw = load_hardware(device)
            measured, predicted = data[(op, dtype, values, cols)][device]
            stream = predict_op(Op("OP1", "x", "backward", KINDS[op][0], 0,
                                   3 * size * 2 ** values // cols * cols),
                                hw, dtype, hw.peak_flops_per_s(dtype),
                                hw.bandwidth_bytes_per_s).time_s
            x = (l2_fill(cols, size, 2 ** values // cols, hw, SOFTMAX_BACKWARD_BLOCKS_PER_SM)
                 if two_pass(cols, size) else None)
            cells += [f"{x:.2f}" if x is not None else "", f"{measured / predicted:.2f}",
                      f"{measured / stream:.2f}"]
            got = counts.setdefault(device, [0, 0, 0])
            got[0] += 1
            got[1] += 1 / 1.25 <= measured / predicted <= 1.25
            got[2] += 1 / 1.25 <= measured / stream <= 1.25
        body.append([op, dtype, f"2^{values}", str(cols), kernel(cols, size), *cells])
    return ["Softmax backwards by width (data/h1?0_live_norms.csv and h1?0_live_rows.csv, 2^23 "
            "and 2^26 values; x: the two-pass kernel's rows held at once over half the L2):",
            *table_lines(["op", "dtype", "values", "cols", "kernel", "H100 x",
                          "H100 measured / predicted", "H100 as a stream", "H200 x",
                          "H200 measured / predicted", "H200 as a stream"], body, markdown), "",
            "within 1.25x (as a stream): " + "; ".join(
                f"{d} {n[1]} of {n[0]} ({n[2]})" for d, n in counts.items())]


def loss_ratios() -> dict[tuple[str, str, str, int, int], tuple[float, float]]:
    """(device, op, dtype, rows, classes) -> (measured s, predicted s) of ``F.cross_entropy``
    as gpu_measure.py timed it (forward: CUDA-graph replays, h1?0_live_rows.csv; forward and
    backward, ``torch.autograd.grad``: eager, h1?0_live_rows_eager.csv) and as
    ``roofline.torch.capture`` records it on each GPU's datasheet entry (the log-softmax, the
    nll loss and, in training, their backwards). Needs torch (CPU: the capture runs on meta)."""
    import torch

    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.torch import capture

    class Loss(torch.nn.Module):
        def __init__(self, rows: int, classes: int, dtype: torch.dtype) -> None:
            super().__init__()
            self.logits = torch.nn.Parameter(torch.empty(rows, classes, dtype=dtype,
                                                         device="meta"))

        def forward(self, target: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.cross_entropy(self.logits, target)

    dtypes = {"bf16": torch.bfloat16, "fp32": torch.float32}
    out = {}
    for device, graph in ROWS.items():
        hw = load_hardware(device)
        eager = graph.with_name(graph.stem + "_eager.csv")
        for path, op in ((graph, "cross-entropy"), (eager, "cross-entropy-train")):
            with open(path, newline="") as f:
                for row in csv.DictReader(f):
                    if row["op"] != op or not row["time_ms"]:
                        continue
                    rows, classes, dtype = int(row["rows"]), int(row["cols"]), row["dtype"]
                    net = capture(Loss(rows, classes, dtypes[dtype]),
                                  torch.zeros(rows, dtype=torch.long),
                                  mode="train" if op.endswith("train") else "inference")
                    predicted = sum(o.predicted_time_s for o in analyze(net, hw).ops)
                    out[(device, op, dtype, rows, classes)] = (float(row["time_ms"]) * 1e-3,
                                                               predicted)
    return out


def loss_lines(markdown: bool) -> list[str]:
    data = loss_ratios()
    body = [[device.split("-")[0], op, dtype, f"{rows} x {classes}", f"{m * 1e3:.3f} ms",
             f"{p * 1e3:.3f} ms", f"{m / p:.2f}"]
            for (device, op, dtype, rows, classes), (m, p) in sorted(data.items())]
    within = sum(1 / 1.25 <= m / p <= 1.25 for m, p in data.values())
    return ["F.cross_entropy over a vocabulary (the log-softmax and the nll loss as captured; "
            "train: with their backwards):",
            *table_lines(["GPU", "op", "dtype", "rows x classes", "measured", "predicted",
                          "measured / predicted"], body, markdown), "",
            f"within 1.25x: {within} of {len(data)}"]


def liger_lines(markdown: bool) -> list[str]:
    """Liger-Kernel's torch.nn.LayerNorm forward rows that have an hwdb entry: measured against
    the captured op's prediction (``row-passes`` where it binds) and against a stream alone."""
    from roofline.analysis.gpu_ops import predict_op
    from roofline.hardware.catalog import load_hardware
    from roofline.model.dtypes import itemsize
    from roofline.model.ops import Op

    body, ratios = [], []
    with open(LIGER, newline="") as f:
        for row in csv.DictReader(f):
            if not row["entry"]:
                continue
            hw, dtype = load_hardware(row["entry"]), row["dtype"]
            nbytes = 2 * int(row["rows"]) * int(row["cols"]) * itemsize(dtype)  # X read, Y written
            args = (hw, dtype, hw.peak_flops_per_s(dtype), hw.bandwidth_bytes_per_s)
            got = predict_op(Op("OP1", "ln", "forward", "aten.native_layer_norm", 0, nbytes),
                             *args)
            stream = predict_op(Op("OP1", "ln", "forward", "layernorm", 0, nbytes), *args)
            measured = float(row["median_ms"]) * 1e-3
            ratios.append(measured / got.time_s)
            body.append([row["gpu_name"], dtype, f"{row['rows']} x {row['cols']}",
                         f"{measured * 1e6:.1f} us", f"{got.time_s * 1e6:.1f} us",
                         f"{measured / got.time_s:.2f}", f"{measured / stream.time_s:.2f}"])
    within = sum(1 / 1.25 <= r <= 1.25 for r in ratios)
    return ["Liger-Kernel's torch.nn.LayerNorm forward (data/liger_layer_norm.csv), never fitted:",
            *table_lines(["GPU", "dtype", "rows x cols", "measured", "predicted",
                          "measured / predicted", "as a stream"], body, markdown), "",
            f"within 1.25x: {within} of {len(ratios)}"]


def share(data: dict[tuple[str, str, int, int], dict[str, tuple[float, float]]], op: str,
          dtype: str, device: str) -> str:
    """The share of ``op``'s ``dtype`` rows of 2^23 and 2^26 values (a kernel's time, not its
    launch's) on ``device`` whose measured / predicted is within 1.25x."""
    got = [v[device] for k, v in data.items()
           if k[:2] == (op, dtype) and k[2] >= 23 and device in v]
    return f"{sum(1 / 1.25 <= m / p <= 1.25 for m, p in got) / len(got):.0%}"


#: the captured layer norms, which keep their rows and columns (``Op.summed``)
LAYER_NORMS = ("aten.native_layer_norm", "aten.native_layer_norm_backward")
#: (GPU, run, hwdb entry, files) of gpu_measure.py --parts smallsums (the few rows' layer norms,
#: the convolution bias sums): the H100 run that fitted their constants, a repeat on another H100
#: and two H200 runs
SMALLSUM_RUNS = (("H100", "first", "h100-sxm5-80gb", ("h100_live_smallsums.csv",)),
                 ("H100", "repeat", "h100-sxm5-80gb", ("h100_live_smallsums_repeat.csv",)),
                 ("H200", "first", "h200-sxm-141gb", ("h200_live_smallsums.csv",)),
                 ("H200", "repeat", "h200-sxm-141gb", ("h200_live_smallsums_repeat.csv",)))
#: the sums' runs: the smallsums files with each run's --parts colsums file (none for the second
#: H200)
SUM_RUNS = (("H100", "first", "h100-sxm5-80gb",
             ("h100_live_colsums.csv", "h100_live_smallsums.csv")),
            ("H100", "repeat", "h100-sxm5-80gb",
             ("h100_live_colsums_repeat.csv", "h100_live_smallsums_repeat.csv")),
            ("H200", "first", "h200-sxm-141gb",
             ("h200_live_colsums.csv", "h200_live_smallsums.csv")),
            ("H200", "repeat", "h200-sxm-141gb", ("h200_live_smallsums_repeat.csv",)))
Runs = tuple[tuple[str, str, str, tuple[str, ...]], ...]


def _run_ratios(ops: Collection[str], price: Callable[[Any, dict[str, str]], tuple[
        str, float, float]], runs: Runs = SMALLSUM_RUNS
                ) -> dict[tuple[str, str, str, str], list[tuple[float, float]]]:
    """(measured / predicted, measured / as before) of each of ``ops``' rows in the ``runs``'
    files, by (GPU, run, the group ``price`` names, dtype): ``price`` takes the hwdb entry and
    the row and gives (group, predicted s, before s)."""
    from roofline.hardware.catalog import load_hardware

    got: dict[tuple[str, str, str, str], list[tuple[float, float]]] = {}
    for gpu, run, entry, names in runs:
        hw = load_hardware(entry)
        for name in names:
            with open(HERE / name, newline="") as f:
                for row in csv.DictReader(f):
                    if row["op"] in ops and not row.get("error"):
                        group, predicted, before = price(hw, row)
                        measured = float(row["kernel_ms"]) * 1e-3
                        got.setdefault((gpu, run, group, row["dtype"]), []).append(
                            (measured / predicted, measured / before))
    return got


def _run_lines(got: dict[tuple[str, str, str, str], list[tuple[float, float]]],
               header: list[str], fitted: tuple[str, str, str] | None, markdown: bool,
               runs: Runs = SMALLSUM_RUNS) -> list[str]:
    """``_run_ratios``' groups in their runs' order: how many within 1.25x and their range,
    now and as before; ``fitted``: the (GPU, run, group) the constants came from."""
    order = {(gpu, run): i for i, (gpu, run, _, _) in enumerate(runs)}
    body = []
    for (gpu, run, group, dtype), pairs in sorted(
            got.items(), key=lambda kv: (order[kv[0][:2]], kv[0][2:])):
        now, then = [a for a, _ in pairs], [b for _, b in pairs]
        mark = ["yes" if (gpu, run, group) == fitted else "no"] if fitted else []
        body.append([gpu, run, group, dtype, *mark, str(len(pairs)), _within(now),
                     f"{min(now):.2f}-{max(now):.2f}", _within(then),
                     f"{min(then):.2f}-{max(then):.2f}"])
    return table_lines(header, body, markdown)


def small_norm_lines(markdown: bool) -> list[str]:
    """Layer norms over 1-512 rows of 768 and 4,096 (data/h1?0_live_smallsums*.csv): each op's
    kernels (the forward's one; the backward's dX and weight-gradient kernels) against the
    captured op's prediction (``Op.summed``: its rounds of loads, ``gpu_layer_norm.row_rounds_s``,
    or its row passes or stream), and against it without its rows (the prediction before),
    by GPU, run, op and dtype."""
    from dataclasses import replace

    from roofline.analysis.gpu_ops import predict_op
    from roofline.model.dtypes import itemsize
    from roofline.model.ops import ELEMENTWISE, Op, SumShape

    def price(hw: Any, row: dict[str, str]) -> tuple[str, float, float]:
        m, n = (int(x) for x in row["shape"].split("x"))
        kind, table = KINDS[row["op"]]
        flops, reads, writes = ELEMENTWISE[table]
        dtype = row["dtype"]
        op = Op("OP1", "x", "backward" if "backward" in kind else "forward", kind,
                flops * m * n, (reads + writes) * itemsize(dtype) * m * n, summed=SumShape(m, n))
        peak = hw.peak_flops_per_s(dtype)
        predicted = predict_op(op, hw, dtype, peak, hw.bandwidth_bytes_per_s).time_s
        with _without_rounds():
            before = predict_op(replace(op, summed=None) if kind == LAYER_NORMS[0] else op,
                                hw, dtype, peak, hw.bandwidth_bytes_per_s).time_s
        return row["op"], predicted, before

    return _run_lines(_run_ratios(("layer-norm", "layer-norm-backward"), price),
                      ["GPU", "run", "op", "dtype", "ops", "within 1.25x", "range",
                       "before: within 1.25x", "range"], None, markdown)


@contextlib.contextmanager
def _without_rounds() -> Iterator[None]:
    """The layer norm backward's dX kernel priced as before its rounds were (its stream)."""
    from roofline.analysis import gpu_layer_norm

    kept = gpu_layer_norm.DX_FIRST_S, gpu_layer_norm.DX_ROUND_S
    gpu_layer_norm.DX_FIRST_S = gpu_layer_norm.DX_ROUND_S = 0.0
    try:
        yield
    finally:
        gpu_layer_norm.DX_FIRST_S, gpu_layer_norm.DX_ROUND_S = kept


def conv_sum_lines(markdown: bool) -> list[str]:
    """A convolution's bias gradient, ``x.sum((0, 2, 3))`` over ResNet-50's maps at batches 8
    and 64 in NCHW and channels_last (data/h1?0_live_smallsums*.csv), each call's kernels
    against the captured ``bias-backward``'s prediction (``SumShape`` as the capture makes it:
    NCHW an indexed sum along each channel's N runs, channels_last a sum over N H W rows; the
    indexed constants fitted on the first H100 run's NCHW sums, nothing else) and as a stream
    alone, by GPU, run, layout and dtype."""
    from dataclasses import replace

    from roofline.analysis.gpu_ops import predict_op
    from roofline.model.dtypes import itemsize
    from roofline.model.ops import ELEMENTWISE, Op, SumShape

    flops, reads, writes = ELEMENTWISE["bias-backward"]

    def price(hw: Any, row: dict[str, str]) -> tuple[str, float, float]:
        n, c, h, w = (int(x) for x in row["shape"].split("x"))
        dtype, values = row["dtype"], n * c * h * w
        summed = (SumShape(n * h * w, c) if row["op"] == "sum-nhwc"
                  else SumShape(c, n * h * w, along_rows=True, indexed=n > 1))
        op = Op("OP1", "conv", "backward", "bias-backward", flops * values,
                (reads + writes) * values * itemsize(dtype) + c, follows="conv", summed=summed)
        peak = hw.peak_flops_per_s(dtype)
        predicted = predict_op(op, hw, dtype, peak, hw.bandwidth_bytes_per_s).time_s
        stream = predict_op(replace(op, summed=None), hw, dtype, peak,
                            hw.bandwidth_bytes_per_s).time_s
        return ("NCHW" if row["op"] == "sum-nchw" else "channels_last"), predicted, stream

    return _run_lines(_run_ratios(("sum-nchw", "sum-nhwc"), price),
                      ["GPU", "run", "layout", "dtype", "fitted", "sums", "within 1.25x",
                       "range", "as a stream: within 1.25x", "range"],
                      ("H100", "first", "NCHW"), markdown)


#: (GPU, hwdb entry, file) of the captured convolutions' bias gradients
CONV_BIAS_RUNS = (("H100", "h100-sxm5-80gb", "h100_live_convbias.csv"),
                  ("H200", "h200-sxm-141gb", "h200_live_convbias.csv"))


def conv_bias_step_lines(markdown: bool) -> list[str]:
    """A Conv2d with a bias as a user trains it (data/h1?0_live_convbias.csv: its three gradients
    through autograd, bf16, NCHW and channels_last), the reduce kernel the profile lists
    against the ``bias-backward`` op ``roofline.torch.capture`` records for the same module and
    input (needs torch; captured on the meta device, predicted on the GPU's datasheet entry),
    the same layer in a model.yaml (``conv2d`` with ``bias: true``: its gradient priced as a
    channels-last map's rows whichever layout ran) and the captured op as a stream. Never
    fitted."""
    from dataclasses import replace

    import torch

    from roofline.analysis.gpu_ops import predict_op
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware
    from roofline.model.network import network_from_dict
    from roofline.torch import capture

    body = []
    for gpu, entry, name in CONV_BIAS_RUNS:
        if not (HERE / name).exists():
            continue
        hw = load_hardware(entry)
        with open(HERE / name, newline="") as f:
            for row in csv.DictReader(f):
                if row.get("error"):
                    continue
                n, cin, cout, side, k = (int(x) for x in row["shape"].split("x"))
                conv = torch.nn.Conv2d(cin, cout, k, padding=k // 2).to(torch.bfloat16)
                x = torch.randn(n, cin, side, side, dtype=torch.bfloat16)
                if row["layout"] == "channels_last":
                    conv = conv.to(memory_format=torch.channels_last)
                    x = x.contiguous(memory_format=torch.channels_last)
                report = analyze(capture(conv, x, mode="train"), hw)
                (grad,) = [r for r in report.ops if r.op.kind == "bias-backward"]
                stream = predict_op(replace(grad.op, summed=None), hw, "bf16",
                                    hw.peak_flops_per_s("bf16"),
                                    hw.bandwidth_bytes_per_s).time_s
                layer = {"type": "conv2d", "in_channels": cin, "out_channels": cout,
                         "kernel": k, "padding": k // 2, "bias": True}
                yaml = network_from_dict({"batch": n, "dtype": "bf16", "mode": "train",
                                          "input": {"channels": cin, "height": side,
                                                    "width": side}, "layers": [layer]},
                                         "<bench>")
                (described,) = [r for r in analyze(yaml, hw).ops
                                if r.op.kind == "bias-backward"]
                measured = float(row["reduce_ms"]) * 1e-3
                body.append([gpu, row["shape"], row["layout"], f"{measured * 1e6:.1f} us",
                             f"{grad.predicted_time_s * 1e6:.1f} us",
                             f"{measured / grad.predicted_time_s:.2f}",
                             f"{measured / described.predicted_time_s:.2f}",
                             f"{measured / stream:.2f}"])
    return table_lines(["GPU", "N x Cin x Cout x side x k", "layout", "bias gradient",
                        "predicted", "ratio", "model.yaml", "as a stream"], body, markdown)


#: the sums' ops: over a matrix's rows (a bias gradient), along them (x.sum(-1), x.mean(-1))
SUM_OPS = {"sum-rows": False, "sum-columns": True, "mean-columns": True}


def colsum_lines(markdown: bool) -> list[str]:
    """Sums over a matrix's rows (a Linear's bias gradient, as autograd computes it:
    ``aten.sum`` keeping the last dimension) and along them (``x.sum(-1)``; a decode step's
    RMSNorm mean, ``x.mean(-1)``), each call's kernels (the reduce and, where it stages partial
    sums, its memset) against the captured op's prediction (``Op.summed``, analysis.gpu_reduce),
    by GPU, run, op and dtype: how many came within 1.25x, their range, and as a stream alone."""
    from dataclasses import replace

    from roofline.analysis.gpu_ops import predict_op
    from roofline.model.dtypes import itemsize
    from roofline.model.ops import Op, SumShape

    def price(hw: Any, row: dict[str, str]) -> tuple[str, float, float]:
        m, n = (int(x) for x in row["shape"].split("x"))
        along, dtype = SUM_OPS[row["op"]], row["dtype"]
        op = Op("OP1", "x", "backward", "aten.sum", m * n,
                (m * n + (m if along else n)) * itemsize(dtype),
                summed=SumShape(m, n, along_rows=along))
        peak = hw.peak_flops_per_s(dtype)
        predicted = predict_op(op, hw, dtype, peak, hw.bandwidth_bytes_per_s).time_s
        stream = predict_op(replace(op, summed=None), hw, dtype, peak,
                            hw.bandwidth_bytes_per_s).time_s
        return row["op"], predicted, stream

    return _run_lines(_run_ratios(SUM_OPS, price, SUM_RUNS),
                      ["GPU", "run", "sum", "dtype", "fitted", "sums", "within 1.25x", "range",
                       "as a stream: within 1.25x", "range"],
                      ("H100", "first", "sum-rows"), markdown, SUM_RUNS)


def _within(ratios: list[float]) -> str:
    return f"{sum(1 / 1.25 <= r <= 1.25 for r in ratios)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    print("\n".join([*lines(args.markdown), "", "Rows of 32-50,257 values "
                      "(data/h1?0_live_rows.csv):", *lines(args.markdown, ROWS), "",
                      *sweep_lines(args.markdown), "", *backward_lines(args.markdown), "",
                      *loss_lines(args.markdown), "",
                      *liger_lines(args.markdown), "",
                      "Layer norms over 1-512 rows of 768 and 4,096 (data/h1?0_live_smallsums*"
                      ".csv): their kernels / the captured op's prediction (their rounds of "
                      "loads, gpu_layer_norm.row_rounds_s, fitted on the first H100 run) and "
                      "before (the forward's row passes, dX's stream):",
                      *small_norm_lines(args.markdown), "",
                      "Sums over a matrix's rows (a bias gradient) and along them (x.sum(-1), "
                      "an RMSNorm's x.mean(-1)) through torch's reduce kernel "
                      "(analysis.gpu_reduce, fitted on the first H100 run's sums over rows) on "
                      "two H100s and two H200s (data/h1?0_live_colsums*.csv, "
                      "h1?0_live_smallsums*.csv): kernels / the captured op's prediction:",
                      *colsum_lines(args.markdown), "",
                      "A convolution's bias gradient, x.sum((0, 2, 3)) over ResNet-50's maps "
                      "at batches 8 and 64 (data/h1?0_live_smallsums*.csv): kernels / the "
                      "captured bias-backward's prediction (NCHW an indexed sum, fitted on the "
                      "first H100 run; channels_last a sum over N H W rows) and as a stream:",
                      *conv_sum_lines(args.markdown), "",
                      "A Conv2d with a bias trained as a user does it (data/h1?0_live_convbias"
                      ".csv): its bias gradient's reduce kernel / the captured bias-backward's "
                      "prediction, the model.yaml conv2d's (as channels_last) and as a stream, "
                      "never fitted:", *conv_bias_step_lines(args.markdown)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
