"""A captured batch norm on a GPU (analysis.gpu_batch_norm): torch's and cuDNN's kernels, each at
its fitted values per busy SM and clock, a channel to a block where the kernel runs so. Every
expected time below is worked by hand from the constants the module cites; one test holds the
model against the H100's batch norms at the batches it was not fitted on, and the H200's."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from roofline.analysis.gpu_ops import predict_op
from roofline.hardware.catalog import load_hardware
from roofline.model.ops import NormShape, Op

H100 = "h100-sxm5-80gb"  # 132 SMs at 1.98 GHz, 3.35 TB/s
DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _bn(kind: str, n: int, c: int, side: int, size: int, last: bool = False,
        tensors: int = 2) -> Op:
    values = n * c * side * side
    return Op("OP1", "bn", "forward", kind, 8 * values, tensors * values * size,
              norm=NormShape(c, n * side * side, last))


def _predict(op: Op, dtype: str, hw: str = H100):
    spec = load_hardware(hw)
    return predict_op(op, spec, dtype, spec.peak_flops_per_s(dtype), spec.bandwidth_bytes_per_s)


def test_a_bf16_nchw_training_batch_norm_runs_torchs_two_kernels():
    # ResNet-50's first stage at batch 64: 64 x 64 x 56 x 56 = 12,845,056 values in bf16.
    # torch's statistics kernel, a channel to a block: on 64 of the 132 SMs at 0.917 values a
    # clock: 12,845,056 / (0.917 x 64 x 1.98e9) = 110.543 us; its transform on all 132 at 1.099:
    # 12,845,056 / (1.099 x 132 x 1.98e9) = 44.720 us; 3 kernels (with the running statistics'
    # update) x 0.9 us. The stream, 51,380,224 B / (0.88 x 3.35e12) = 17.43 us, binds less.
    # 2.7 + 110.543 + 44.720 = 157.963 us (the lent H100 took 197.5 us; as a stream 18.3 us)
    got = _predict(_bn("aten.native_batch_norm", 64, 64, 56, 2), "bf16")
    assert got.basis == "batch-norm-kernels"
    assert got.time_s == pytest.approx(157.963e-6, rel=1e-4)


def test_an_fp32_nchw_backward_runs_cudnns_kernel_a_channel_to_a_block():
    # 64 x 512 x 28 x 28 = 25,690,112 values: 512 channels fill all 132 SMs at 0.446:
    # 25,690,112 / (0.446 x 132 x 1.98e9) = 220.385 us; + one launch = 221.285 us
    # (the stream: 3 x 4 B a value, 308,281,344 B / 2.948e12 = 104.6 us; measured 190.3 us)
    op = _bn("aten.native_batch_norm_backward", 64, 512, 28, 4, tensors=3)
    assert _predict(op, "fp32").time_s == pytest.approx(221.285e-6, rel=1e-4)
    # 32 channels of the same values: 32 SMs busy, 132 / 32 = 4.125 x the work
    few = _bn("aten.native_batch_norm_backward", 64, 32, 112, 4, tensors=3)
    assert few.norm is not None and few.norm.channels * few.norm.values == 25_690_112
    assert _predict(few, "fp32").time_s == pytest.approx(0.9e-6 + 4.125 * 220.385e-6, rel=1e-4)


def test_a_channels_last_eval_batch_norm_runs_torchs_nhwc_transform():
    # 64 x 2048 x 7 x 7 = 6,422,528 bf16 values in channels_last: the transform at 2.391 on
    # every SM: 6,422,528 / (2.391 x 132 x 1.98e9) = 10.277 us, above the stream's
    # 25,690,112 B / 2.948e12 = 8.714 us; 3 kernels: 2.7 + 10.277 = 12.977 us (measured 10.6)
    op = _bn("aten._native_batch_norm_legit_no_training", 64, 2048, 7, 2, last=True)
    assert _predict(op, "bf16").time_s == pytest.approx(12.977e-6, rel=1e-4)


def test_a_batch_norm_without_its_map_streams_and_a_cpu_keeps_the_roofline():
    # a BatchNorm1d carries no map: one kernel at 88% of DRAM
    plain = Op("OP1", "bn", "forward", "aten.native_batch_norm", 8 * 2**20, 4 * 2**21)
    got = _predict(plain, "fp32")
    assert got.basis == "streaming"
    assert got.time_s == pytest.approx(0.9e-6 + 4 * 2**21 / (0.88 * 3.35e12), rel=1e-6)
    cpu = _predict(_bn("aten.native_batch_norm", 64, 64, 56, 4), "fp32", "xeon-platinum-8480plus")
    assert cpu.basis == "roofline"


@pytest.mark.parametrize("data, entry, skip, low, groups", [
    # the H100's batch 16 and 256 (fitted at 64): within 0.8-1.3x (as a stream: 1.3-6.3x)
    ("h100_live_bnorms.csv", H100, "64", 0.8, 24),
    # the H200, never fitted (the same SMs and clock, 1.43x the bandwidth): within 0.75-1.25x
    # (cuDNN's fp32 NHWC kernels ran 20-25% faster there: they draw on the bandwidth too)
    ("h200_live_bnorms.csv", "h200-sxm-141gb", "", 0.74, 42)])
def test_resnet50s_batch_norms_hold_where_never_fitted(data, entry, skip, low, groups):
    # ResNet-50's batch norms summed by their count, per batch, pass, dtype and layout
    sums: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0])
    with open(DATA / data, newline="") as f:
        for row in csv.DictReader(f):
            if row["n"] == skip:
                continue
            n, c, side = int(row["n"]), int(row["c"]), int(row["side"])
            size = 4 if row["dtype"] == "fp32" else 2
            kind = {"train": "aten.native_batch_norm",
                    "eval": "aten._native_batch_norm_legit_no_training",
                    "backward": "aten.native_batch_norm_backward"}[row["mode"]]
            op = _bn(kind, n, c, side, size, row["layout"] == "nhwc",
                     3 if row["mode"] == "backward" else 2)
            s = sums[(row["n"], row["mode"], row["dtype"], row["layout"])]
            s[0] += int(row["count"]) * float(row["kernel_us"]) * 1e-6
            s[1] += int(row["count"]) * _predict(op, "fp32" if size == 4 else "bf16",
                                                 entry).time_s
    assert len(sums) == groups
    ratios = {k: m / p for k, (m, p) in sums.items()}
    assert all(low <= r <= 1.3 for r in ratios.values()), ratios


def test_every_gpu_op_basis_but_the_plain_ones_is_said_in_words():
    # a report's line on how its ops were predicted names each basis it used (none dropped)
    from roofline.analysis.gpu_ops import OP_BASES
    from roofline.output.times import _BASIS_TEXT

    assert set(OP_BASES) - set(_BASIS_TEXT) == {"roofline", "streaming"}


def test_an_fp16_map_under_fp32_weights_runs_cudnns_kernel_and_under_fp16_weights_torchs():
    # 64 x 256 x 56 x 56 = 51,380,224 fp16 values, training forward. fp32 weights (autocast's):
    # cuDNN's NCHW kernel, a channel to a block on all 132 SMs at 0.803: 51,380,224 /
    # (0.803 x 132 x 1.98e9) = 244.82 us + a launch = 245.72 us (measured 217.6 us). fp16
    # weights: torch's statistics at 0.917 (214.39 us) and transform at 1.099 (178.88 us), 3
    # kernels: 395.97 us (measured 334.5 us)
    mixed = Op("OP1", "bn", "forward", "aten.native_batch_norm", 8 * 51_380_224,
               2 * 2 * 51_380_224, norm=NormShape(256, 64 * 56 * 56, False, True))
    assert _predict(mixed, "fp16").time_s == pytest.approx(245.72e-6, rel=1e-4)
    plain = Op("OP1", "bn", "forward", "aten.native_batch_norm", 8 * 51_380_224,
               2 * 2 * 51_380_224, norm=NormShape(256, 64 * 56 * 56))
    assert _predict(plain, "fp16").time_s == pytest.approx(395.97e-6, rel=1e-4)


def test_a_model_yaml_batch_norm_runs_the_channels_last_kernels():
    # a model.yaml batchnorm after a 64-channel conv at 56 x 56, batch 8: its map taken
    # channels-last (the layout the convs are priced in), 8 x 56 x 56 = 25,088 values a channel,
    # 1,605,632 in all. bf16, training: torch's NHWC statistics at 1.101 and transform at 2.391
    # values an SM-clock on all 132 SMs: 1,605,632 / (1.101 x 132 x 1.98e9) = 5.580 us and
    # 1,605,632 / (2.391 x 132 x 1.98e9) = 2.569 us, over the stream; 2 + 2 small kernels:
    # 3.6 + 8.149 = 11.749 us. Backward: the reduce at 1.624 (3.783 us) and elementwise at
    # 1.748 (3.515 us), 3 kernels: 2.7 + 7.298 = 9.998 us. Before 0.9.0 a stream (1.9 us).
    from roofline.analysis.report import analyze
    from roofline.model.network import network_from_yaml

    text = ("batch: 8\ndtype: {}\nmode: train\ninput: {{channels: 3, height: 56, width: 56}}\n"
            "layers:\n  - {{type: conv2d, out_channels: 64, kernel: 3, padding: 1}}\n"
            "  - {{type: batchnorm}}\n")
    report = analyze(network_from_yaml(text.format("bf16")), load_hardware(H100))
    forward, backward = [r for r in report.ops if r.op.kind.startswith("batchnorm")]
    assert forward.op.norm == NormShape(64, 25088, channels_last=True, mixed=True)
    assert forward.predicted_basis == "batch-norm-kernels"
    assert forward.predicted_time_s == pytest.approx(11.749e-6, rel=1e-4)
    assert backward.predicted_time_s == pytest.approx(9.998e-6, rel=1e-4)
    # fp16 under fp32 weights (mixed precision) and tf32 (fp32 maps) run cuDNN's NHWC kernels:
    # training at 0.787 and a memset, 1,605,632 / (0.787 x 261.36e9) = 7.806 us + 1.8 us
    for dtype in ("fp16", "tf32"):
        report = analyze(network_from_yaml(text.format(dtype)), load_hardware(H100))
        first = next(r for r in report.ops if r.op.kind == "batchnorm")
        assert first.predicted_time_s == pytest.approx(9.606e-6, rel=1e-4), dtype
