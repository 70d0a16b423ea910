"""Do torch's and cuDNN's batch-norm kernels on an H100 take the time roofline predicts for a
captured batch norm? On demand (no test; no GPU: it reads what ``benchmarks/gpu_measure.py
--parts bnorms`` profiled on a lent H100 SXM5 and H200, benchmarks/data/h1?0_live_bnorms.csv and
h1?0_live_convkernels.csv):

    .venv/bin/python benchmarks/bench_gpu_bnorms.py [--markdown]

Each row is one ``F.batch_norm`` over one of ResNet-50's maps (N x C x H x W, fp32, bf16 with
bf16 weights, bf16 with fp32 weights), NCHW or channels_last, training forward, eval forward or
backward, its CUDA kernels' profiled time against the prediction for the op
``roofline.torch.capture`` records (``aten.native_batch_norm``,
``aten._native_batch_norm_legit_no_training``, ``aten.native_batch_norm_backward``: the map read
and written, its dY too backward; ``Op.norm``) on the datasheet entry: through the kernels
(``analysis.gpu_batch_norm``, basis ``batch-norm-kernels``) and as the stream it was priced as
before. The H100's batch 64 is what the kernels' rates were fitted on; its 16 and 256, and every
H200 row, check them. Then
ResNet-50's batch norms summed by their count in the network, per batch, and the rates refitted
from the file (what ``BATCH_NORM_VALUES_PER_SM_CLOCK`` holds). Then the convolutions' share in
cuDNN's NCHW layout transposes (not modelled).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from _tables import table_lines

HERE = Path(__file__).resolve().parent / "data"
#: (label, datasheet entry, batch norms, convolutions): the H100's fitted the rates, the H200's
#: (the same SMs and clock, 1.43x the bandwidth) never did
DEVICES = (("H100", "h100-sxm5-80gb", HERE / "h100_live_bnorms.csv",
            HERE / "h100_live_convkernels.csv"),
           ("H200", "h200-sxm-141gb", HERE / "h200_live_bnorms.csv",
            HERE / "h200_live_convkernels.csv"))
ENTRY = "h100-sxm5-80gb"
FIT_BATCH = 64
#: gpu_measure's mode -> the op the capture records
KINDS = {"train": "aten.native_batch_norm", "eval": "aten._native_batch_norm_legit_no_training",
         "backward": "aten.native_batch_norm_backward"}
#: kernel name fragments -> BATCH_NORM_VALUES_PER_SM_CLOCK's names (the refit)
FAMILIES = (("bn_fw_tr_1C11", "cudnn-nchw-train"),
            ("bn_fw_inf_1C11_kernel_NCHW", "cudnn-nchw-eval"),
            ("bn_bw_1C11", "cudnn-nchw-backward"), ("batchnorm_fwtr_nhwc", "cudnn-nhwc-train"),
            ("bn_fw_inf_1C11_kernel_NHWC", "cudnn-nhwc-eval"),
            ("batchnorm_bwtr_nhwc", "cudnn-nhwc-backward"),
            ("collect_statistics_channels_last", "torch-nhwc-statistics"),
            ("transform_input_channels_last", "torch-nhwc-transform"),
            ("backward_reduce_channels_last", "torch-nhwc-backward-reduce"),
            ("backward_elemt_channels_last", "torch-nhwc-backward-elementwise"),
            ("batch_norm_collect_statistics_kernel", "torch-nchw-statistics"),
            ("batch_norm_transform_input_kernel", "torch-nchw-transform"),
            ("batch_norm_backward_kernel", "torch-nchw-backward"))


def op_of(row: dict[str, str]) -> object:
    """The op the capture records for a row: its map read (and dY backward) and written at the
    row's element size, the per-channel vectors beside them, and its ``NormShape``."""
    from roofline.model.ops import NormShape, Op

    n, c, side = int(row["n"]), int(row["c"]), int(row["side"])
    values, size = n * c * side * side, 4 if row["dtype"] == "fp32" else 2
    tensors = 3 if row["mode"] == "backward" else 2
    flops = {"train": 8, "eval": 2, "backward": 12}[row["mode"]] * values
    return Op("OP1", "bn", "backward" if row["mode"] == "backward" else "forward",
              KINDS[row["mode"]], flops, tensors * values * size + 6 * 4 * c,
              norm=NormShape(c, values // c, row["layout"] == "nhwc"))


def predictions(row: dict[str, str], entry: str = ENTRY) -> tuple[float, float]:
    """Seconds predicted for a row's op through the kernels, and as the stream it was before
    (the same op without its map)."""
    from dataclasses import replace

    from roofline.analysis.gpu_ops import predict_op
    from roofline.hardware.catalog import load_hardware

    spec = load_hardware(entry)
    op = op_of(row)
    dtype = "fp32" if row["dtype"] == "fp32" else "bf16"
    args = (spec, dtype, spec.peak_flops_per_s(dtype), spec.bandwidth_bytes_per_s)
    return (predict_op(op, *args).time_s,  # type: ignore[arg-type]
            predict_op(replace(op, norm=None), *args).time_s)  # type: ignore[type-var]


def spread(ratios: list[float]) -> list[str]:
    r = sorted(ratios)
    within = sum(1 / 1.25 <= x <= 1.25 for x in r) / len(r)
    return [f"{statistics.median(r):.2f}", f"{r[0]:.2f}-{r[-1]:.2f}", f"{within:.0%}"]


def op_lines(rows: list[dict[str, str]], entry: str, markdown: bool) -> list[str]:
    groups: dict[tuple[str, ...], list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        measured = float(row["kernel_us"]) * 1e-6
        now, before = predictions(row, entry)
        use = ("fit" if int(row["n"]) == FIT_BATCH else "check") if entry == ENTRY else "check"
        groups[(row["mode"], row["dtype"], row["layout"], use)].append(
            (measured / now, measured / before))
    body = [[*key, str(len(v)), *spread([a for a, _ in v]), *spread([b for _, b in v])]
            for key, v in sorted(groups.items())]
    for use in ("fit", "check"):
        pairs = [p for key, v in groups.items() if key[3] == use for p in v]
        if pairs:
            body.append(["all", "", "", use, str(len(pairs)), *spread([a for a, _ in pairs]),
                         *spread([b for _, b in pairs])])
    return table_lines(["pass", "dtype", "layout", "batch", "ops", "median", "range",
                        "within 1.25x", "as a stream: median", "range", "within 1.25x"],
                       body, markdown)


def total_lines(rows: list[dict[str, str]], entry: str, markdown: bool) -> list[str]:
    sums: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for row in rows:
        count = int(row["count"])
        now, before = predictions(row, entry)
        s = sums[(row["n"], row["mode"], row["dtype"], row["layout"])]
        s[0] += count * float(row["kernel_us"]) * 1e-6
        s[1] += count * now
        s[2] += count * before
    body = [[n, mode, dtype, layout, f"{m * 1e3:.2f} ms", f"{p * 1e3:.2f} ms", f"{m / p:.2f}",
             f"{b * 1e3:.2f} ms", f"{m / b:.2f}"]
            for (n, mode, dtype, layout), (m, p, b) in sorted(
                sums.items(), key=lambda kv: (int(kv[0][0]), kv[0][1:]))]
    return table_lines(["batch", "pass", "dtype", "layout", "measured", "predicted",
                        "measured / predicted", "as a stream", "measured / stream"], body,
                       markdown)


def refit_lines(rows: list[dict[str, str]], markdown: bool) -> list[str]:
    from roofline.analysis.gpu_batch_norm import BATCH_NORM_VALUES_PER_SM_CLOCK, PER_CHANNEL
    from roofline.analysis.gpu_ops import sm_clocks_per_s
    from roofline.analysis.predict import LAUNCH_LATENCY_S
    from roofline.hardware.catalog import load_hardware

    spec = load_hardware(ENTRY)
    assert spec.gpu is not None
    sms, per_sm = spec.gpu.sms, sm_clocks_per_s(spec) / spec.gpu.sms
    logs: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if int(row["n"]) != FIT_BATCH:
            continue
        n, c, side = int(row["n"]), int(row["c"]), int(row["side"])
        values = n * c * side * side
        times: dict[str, float] = defaultdict(float)
        for kernel in filter(None, row["kernels"].split(";")):
            name, _, t = kernel.rpartition("=")
            us, calls = (float(x) for x in t.split("x"))
            family = next((f for s, f in FAMILIES if s in name), None)
            if family is not None:
                times[family] += us * calls
        for family, us in times.items():
            busy = min(c, sms) if family in PER_CHANNEL else sms
            seconds = us * 1e-6 - LAUNCH_LATENCY_S
            logs[family].append(math.log(values / (seconds * busy * per_sm)))
    body = [[f, f"{math.exp(statistics.fmean(v)):.3f}",
             f"{BATCH_NORM_VALUES_PER_SM_CLOCK[f]:.3f}", str(len(v))]
            for f, v in sorted(logs.items())]
    return table_lines(["kernel", "refitted values / SM clock", "in the model", "ops"], body,
                       markdown)


def transpose_lines(path: Path, markdown: bool) -> list[str]:
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if not r.get("error")]
    sums: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        s = sums[(r["dtype"], r["layout"], r["mode"])]
        s[0] += int(r["count"]) * float(r["kernel_us"])
        s[1] += int(r["count"]) * float(r["transpose_us"])
    body = [[*key, f"{k / 1e3:.2f} ms", f"{t / 1e3:.2f} ms", f"{t / k:.0%}"]
            for key, (k, t) in sorted(sums.items())]
    return table_lines(["dtype", "layout", "pass", "convolution kernels", "of it transposes",
                        "share"], body, markdown)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    out: list[str] = []
    for label, entry, norms, convs in DEVICES:
        with open(norms, newline="") as f:
            rows = [r for r in csv.DictReader(f) if not r.get("error")]
        fitted = "fitted at batch 64" if entry == ENTRY else "never fitted"
        out += [f"{label}: batch norms, kernel by kernel ({norms.name}, {len(rows)} ops; the "
                f"datasheet entry {entry}, {fitted}):", *op_lines(rows, entry, args.markdown), "",
                f"{label}: ResNet-50's batch norms summed (each map times its count):",
                *total_lines(rows, entry, args.markdown), ""]
        if entry == ENTRY:
            out += [f"The kernels' rates refitted from batch {FIT_BATCH}:",
                    *refit_lines(rows, args.markdown), ""]
        out += [f"{label}: ResNet-50's convolutions at batch 64 ({convs.name}), summed by count:",
                *transpose_lines(convs, args.markdown), ""]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
