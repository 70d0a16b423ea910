"""cuDNN's NCHW/NHWC transposes around a convolution's GEMMs on a GPU (analysis.gpu_layout):
added to the GEMM's predicted time where it runs on Tensor Cores, nowhere else. Expected times
are worked by hand from the module's constants; one test holds them against the transposes a
lent H100 and H200 profiled around ResNet-50's convolutions."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from roofline.analysis.gpu_layout import transpose_s
from roofline.analysis.predict import predict_gemm
from roofline.hardware.catalog import load_hardware
from roofline.model.gemm import Gemm

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _conv(dtype: str, transposed: int) -> Gemm:
    # ResNet-50's first 3 x 3 convolution at batch 64: M = 64 x 56 x 56, N = 64, K = 64 x 9
    return Gemm("MM1", "conv", "forward", 200704, 64, 576, dtype, transposed=transposed)


def test_transposes_add_their_values_at_the_fitted_rate_on_tensor_cores():
    # X and Y 12,845,056 values each, W 36,864: 25,726,976 values, each read and written once.
    # bf16 on an H100: 25,726,976 / (1.64 x 132 x 1.98e9) = 60.027 us; the stream
    # 2 x 25,726,976 x 2 B / (0.88 x 3.35e12) = 34.91 us binds less
    h100 = load_hardware("h100-sxm5-80gb")
    assert transpose_s(_conv("bf16", 25_726_976), h100) == pytest.approx(60.027e-6, rel=1e-4)
    plain = predict_gemm(_conv("bf16", 0), h100)
    moved = predict_gemm(_conv("bf16", 25_726_976), h100)
    assert moved.time_s == pytest.approx(plain.time_s + 60.027e-6, rel=1e-4)
    assert moved.terms["transpose_s"] == pytest.approx(60.027e-6, rel=1e-4)
    # TF32 (4 B): the stream binds, 205,815,808 B / (0.88 x 3.35e12) = 69.815 us
    assert transpose_s(_conv("tf32", 25_726_976), h100) == pytest.approx(69.815e-6, rel=1e-4)


def test_no_transposes_off_tensor_cores_or_off_a_gpu():
    # fp32 on a V100 (no TF32: CUDA cores) and any dtype on a CPU: nothing added; fp16 on the
    # V100's Tensor Cores: its 80 SMs at 1.53 GHz take 25,726,976 / (1.64 x 80 x 1.53e9) =
    # 128.16 us, its 900 GB/s 102,907,904 B / (0.88 x 900e9) = 129.93 us: the stream binds
    v100 = load_hardware("v100-sxm2-32gb")
    assert transpose_s(_conv("fp32", 25_726_976), v100) == 0.0
    assert transpose_s(_conv("fp16", 25_726_976), v100) == pytest.approx(129.934e-6, rel=1e-4)
    cpu = load_hardware("xeon-platinum-8480plus")
    assert transpose_s(_conv("bf16", 25_726_976), cpu) == 0.0


@pytest.mark.parametrize("data, entry, low, high", [
    ("h100_live_convkernels.csv", "h100-sxm5-80gb", 0.85, 1.2),  # bf16 fitted, fp32 not
    ("h200_live_convkernels.csv", "h200-sxm-141gb", 0.8, 1.2)])  # never fitted
def test_resnet50s_transposes_hold_against_the_profiled_kernels(data, entry, low, high):
    # the transposes around ResNet-50's 3 x 3, 7 x 7 and strided 1 x 1 convolutions at batch
    # 64, summed by count per dtype and pass, against the values the capture's rule gives them
    spec = load_hardware(entry)
    sums: dict[tuple[str, str], list[float]] = {}
    with open(DATA / data, newline="") as f:
        for r in csv.DictReader(f):
            n, c, side, k, size, stride = (int(r[x]) for x in ("n", "c", "side", "k", "r",
                                                                "stride"))
            if r["layout"] != "nchw" or (size == 1 and stride == 1):
                continue
            p = (side + 2 * int(r["pad"]) - size) // stride + 1
            x, y, w = n * c * side * side, n * k * p * p, (k * c * size * size if size > 1
                                                           else 0)
            values = x + w + y if r["mode"] == "forward" else (
                (y + w + x if c != 3 else 0) + (y + x + w))  # the stem: no data gradient
            dtype = "bf16" if r["dtype"] == "bf16" else "tf32"
            s = sums.setdefault((r["dtype"], r["mode"]), [0.0, 0.0])
            s[0] += int(r["count"]) * float(r["transpose_us"]) * 1e-6
            s[1] += int(r["count"]) * transpose_s(_conv(dtype, values), spec)
    ratios = {key: m / p for key, (m, p) in sums.items()}
    assert len(ratios) == 4 and all(low <= v <= high for v in ratios.values()), ratios


def test_measure_compares_a_bare_convolution_gemm_without_its_transposes():
    # `analyze --measure` times the GEMM alone, not cuDNN's transposes around it: its
    # meas/pred is against the prediction less those 60.027 us (bf16 on an H100, above), which
    # the JSON states as predicted_untimed_s; a GEMM without transposes is compared whole
    from types import SimpleNamespace

    from roofline.analysis import measure
    from roofline.analysis.report import GemmResult

    h100 = load_hardware("h100-sxm5-80gb")
    gemm = _conv("bf16", 25_726_976)
    predicted = predict_gemm(gemm, h100).time_s
    result = GemmResult(gemm, "compute", 989.5e12, 1e-5, True, None, predicted_time_s=predicted)
    timed = measure.Measurement(50e-6, 51e-6, 0.02, "torch")
    compared = measure._untimed(timed, result, SimpleNamespace(hardware=h100))
    assert compared.untimed_s == pytest.approx(60.027e-6, rel=1e-4)
    d = compared.to_dict(result)
    assert d["predicted_untimed_s"] == pytest.approx(60.027e-6, rel=1e-4)
    assert d["measured_over_predicted"] == pytest.approx(50e-6 / (predicted - 60.027e-6),
                                                         rel=1e-4)
    bare = GemmResult(_conv("bf16", 0), "compute", 989.5e12, 1e-5, True, None,
                      predicted_time_s=predicted)
    assert measure._untimed(timed, bare, SimpleNamespace(hardware=h100)) is timed
    assert timed.to_dict(bare)["predicted_untimed_s"] == 0.0
    # and the text says so under the measured table
    import dataclasses

    from roofline.output.times import measured_untimed_lines

    report = SimpleNamespace(results=[dataclasses.replace(result, measured=compared),
                                      dataclasses.replace(bare, measured=timed)],
                             hardware=h100)
    assert measured_untimed_lines(report) == [
        "measured: 1 NCHW convolution GEMM timed bare: its meas/pred is against the GEMM's "
        "own prediction, without the 60 us of cuDNN's transposes around it that the "
        "predicted step adds"]


def test_r3d18s_transposes_hold_against_the_profiled_kernels():
    # the transposes around R3D-18's 3 x 7 x 7, 3 x 3 x 3 and strided 1 x 1 x 1 convolutions at
    # batch 8 on 16 x 112 x 112 clips, fp32 (TF32) on NCDHW maps, summed by count per pass,
    # against the values the capture's 2-D rule gives them a dimension more: never fitted (the
    # rate is the 2-D bf16 one); forward 0.87, backward 1.13
    h100 = load_hardware("h100-sxm5-80gb")
    sums: dict[str, list[float]] = {}
    with open(DATA / "h100_live_convs3d.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["dtype"] != "fp32" or r["layout"] != "ncdhw" or r["op"] != "conv3d":
                continue
            n, c, k, d, side = (int(r[x]) for x in ("n", "c", "k", "frames", "side"))
            kernel, stride, pad = ([int(v) for v in r[x].split("x")]
                                   for x in ("kernel", "stride", "pad"))
            out = [(size + 2 * p - t) // s + 1
                   for size, p, t, s in zip((d, side, side), pad, kernel, stride)]
            taps = kernel[0] * kernel[1] * kernel[2]
            x, y = n * c * d * side * side, n * k * out[0] * out[1] * out[2]
            values = x + (k * c * taps if taps > 1 else 0) + y
            passes = 1 if r["mode"] == "forward" or c == 3 else 2  # the stem: no dX
            s = sums.setdefault(r["mode"], [0.0, 0.0])
            s[0] += int(r["count"]) * float(r["transpose_us"]) * 1e-6
            s[1] += int(r["count"]) * passes * transpose_s(_conv("tf32", values), h100)
    ratios = {key: m / p for key, (m, p) in sums.items()}
    assert len(ratios) == 2 and all(0.8 <= v <= 1.2 for v in ratios.values()), ratios
