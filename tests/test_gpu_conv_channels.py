"""A convolution whose input channels miss the 16 bytes a Tensor-Core kernel loads (a 3-channel
stem) runs no faster than the GPU's CUDA cores (analysis.gpu_conv_channels). Expected times are
worked by hand from the H100 entry's datasheet figures and the model's CUDA-core fraction; one
test holds the rule against the stems a lent H100 profiled."""

from __future__ import annotations

import csv
from pathlib import Path
from unittest import mock

import pytest

from roofline.analysis.gpu_conv_channels import input_channels, narrow_channels
from roofline.analysis.predict import predict_gemm
from roofline.hardware.catalog import load_hardware
from roofline.model.gemm import Gemm
from roofline.model.layers.conv2d import ConvGemms

DATA = Path(__file__).resolve().parent.parent / "benchmarks" / "data"
# the H100's fp32 CUDA-core peak as the model runs it: 67 TFLOP/s at 1.83 / 1.98 GHz (its
# Tensor-Core clock), x 0.868 (gpu_gemm.FITTED.cuda_core_fraction) = 53.751 TFLOP/s
CUDA_CORE = 67e12 * 1.83 / 1.98 * 0.868
#: kernels around a convolution's own: cuDNN's layout transposes and conversions, its channel
#: padding, memsets
LAYOUT_KERNELS = ("nchwToNhwc", "nhwcToNchw", "convertTensor", "AddPadding", "Memset")


def _stem(c: int, dtype: str, pass_: str = "forward") -> Gemm:
    # R3D-18's stem at batch 8: 3 x 7 x 7 taps, 16 x 56 x 56 output positions, 64 filters
    shapes = ConvGemms("stem", 8, c, 64, 147, 16 * 56 * 56, 1, (0, 0, 0, 0), "D x P x Q",
                       "T x R x S")
    shape = {"forward": shapes.forward, "backward-data": shapes.backward_data,
             "backward-weight": shapes.backward_weight}[pass_]()
    return Gemm("MM1", "stem", pass_, shape.m, shape.n, shape.k, dtype, roles=shape.roles,
                align=shape.align)


def test_the_input_channels_of_each_pass():
    # forward K = C x 147, the data gradient's N = C, the weight gradient's M = C x 147
    for pass_ in ("forward", "backward-data", "backward-weight"):
        assert input_channels(_stem(3, "bf16", pass_)) == 3
    assert input_channels(Gemm("MM1", "fc", "forward", 64, 64, 3, "bf16")) is None


def test_fewer_than_16_channels_is_the_line():
    # 3, 4, 8 and 15 input channels are held in any dtype (4 TF32 and 8 bf16 channels fill 16
    # bytes, and ran at CUDA-core rates all the same); 16 are not
    for c in (3, 4, 8, 15):
        assert narrow_channels(_stem(c, "bf16")) and narrow_channels(_stem(c, "tf32"))
    assert not narrow_channels(_stem(16, "bf16")) and not narrow_channels(_stem(16, "tf32"))
    assert not narrow_channels(Gemm("MM1", "fc", "forward", 64, 64, 3, "bf16"))


def test_a_3_channel_stem_runs_at_the_cuda_core_rate():
    # 2 x 401,408 x 64 x 441 = 22,658,678,784 FLOPs / 53.751 TFLOP/s = 421.55 us, where the
    # Tensor-Core model gave it about 47 us of main loop; with 16 channels the floor is gone
    h100 = load_hardware("h100-sxm5-80gb")
    stem = predict_gemm(_stem(3, "bf16"), h100)
    assert stem.time_s == pytest.approx(22_658_678_784 / CUDA_CORE, rel=1e-4)
    assert stem.time_s == pytest.approx(421.55e-6, rel=1e-4)
    # the term is what the bound adds to the Tensor-Core price (what `--measure`'s bare GEMM
    # leaves out): that price's main loop alone is 22.66 GFLOP at 989.5 TFLOP/s, 22.9 us
    with mock.patch("roofline.analysis.gpu_conv_channels.narrow_channels", return_value=False):
        tensor_core = predict_gemm(_stem(3, "bf16"), h100).time_s
    assert tensor_core >= 22_658_678_784 / 989.5e12
    assert stem.terms["narrow_channels_s"] == pytest.approx(stem.time_s - tensor_core, rel=1e-9)
    assert "narrow_channels_s" not in predict_gemm(_stem(16, "bf16"), h100).terms
    # the same in TF32, and for the weight gradient
    assert predict_gemm(_stem(3, "tf32", "backward-weight"), h100).time_s == pytest.approx(
        421.55e-6, rel=1e-4)


def test_no_floor_on_cuda_cores_or_a_cpu():
    # fp32 on a V100 runs on CUDA cores already: the model's own price stands; a CPU has none
    v100 = load_hardware("v100-sxm2-32gb")
    assert "narrow_channels_s" not in predict_gemm(_stem(3, "fp32"), v100).terms
    cpu = load_hardware("xeon-platinum-8480plus")
    assert "narrow_channels_s" not in predict_gemm(_stem(3, "bf16"), cpu).terms


def test_the_h100s_profiled_stems_hold_against_the_floor():
    # the 2-D (ResNet-50's, batch 64) and 3-D (R3D-18's, batch 8) 3-channel stems a lent H100
    # profiled, their main kernel (the layout transposes and padding kept out): measured over
    # the prediction, the floor put them within 0.8-1.7x but the 3-D bf16 forward, which cuDNN
    # runs on CUDA cores at 14 TFLOP/s (3.8x); the Tensor-Core price had the 3-D ones at 5-30x
    h100 = load_hardware("h100-sxm5-80gb")
    ratios = {}
    for name, dims in (("h100_live_convkernels.csv", 2), ("h100_live_convs3d.csv", 3)):
        with open(DATA / name, newline="") as f:
            for r in csv.DictReader(f):
                if r["c"] != "3" or r["layout"] not in ("nchw", "ndhwc"):
                    continue
                main = max(float(k.rsplit("=", 1)[1].split("x")[0])
                           for k in r["kernels"].split(";") if not any(
                               s in k for s in LAYOUT_KERNELS))
                # X (every value read), W, Y and dX: 64 x 3 x 224^2, 64 x 3 x 49, 64 x 64 x
                # 112^2; 8 x 3 x 16 x 112^2, 64 x 3 x 147, 8 x 64 x 16 x 56^2
                n, positions, taps, tensors = (
                    (64, 112 * 112, 49, (9_633_792, 9_408, 51_380_224, 9_633_792)) if dims == 2
                    else (8, 16 * 56 * 56, 147, (4_816_896, 28_224, 25_690_112, 4_816_896)))
                shapes = ConvGemms("stem", n, 3, 64, taps, positions, 1, tensors)
                shape = shapes.forward() if r["mode"] == "forward" else shapes.backward_weight()
                dtype = "bf16" if r["dtype"] == "bf16" else "tf32"
                gemm = Gemm("MM1", "stem", shape.pass_, shape.m, shape.n, shape.k, dtype,
                            roles=shape.roles, align=shape.align, tensors=shape.tensors)
                ratios[(dims, r["dtype"], r["mode"])] = main * 1e-6 / predict_gemm(
                    gemm, h100).time_s
    assert len(ratios) == 8
    slow = ratios.pop((3, "bf16", "forward"))
    assert 3.5 <= slow <= 4.0, slow
    assert all(0.8 <= v <= 1.7 for v in ratios.values()), ratios


def test_measure_compares_a_stems_bare_gemm_without_the_bound():
    # `analyze --measure` times the stem's GEMM as a plain matrix product, which the CUDA-core
    # bound does not hold: its meas/pred leaves the bound's share out, and the text says so
    import dataclasses
    from types import SimpleNamespace

    from roofline.analysis import measure
    from roofline.analysis.report import GemmResult
    from roofline.output.times import measured_untimed_lines

    h100 = load_hardware("h100-sxm5-80gb")
    gemm = _stem(3, "bf16")
    prediction = predict_gemm(gemm, h100)
    result = GemmResult(gemm, "compute", 989.5e12, 1e-5, False, None,
                        predicted_time_s=prediction.time_s)
    report = SimpleNamespace(hardware=h100)
    timed = measure.Measurement(50e-6, 51e-6, 0.02, "torch")
    compared = measure._untimed(timed, result, report)
    assert compared.untimed_s == pytest.approx(prediction.terms["narrow_channels_s"], rel=1e-9)
    (line,) = measured_untimed_lines(SimpleNamespace(
        results=[dataclasses.replace(result, measured=compared)], hardware=h100))
    assert line.startswith("measured: 1 convolution GEMM timed bare: its meas/pred is against "
                           "the GEMM's own prediction, without the ")
    assert line.endswith(" of the CUDA cores' rate for fewer than 16 input channels that the "
                         "predicted step adds")


def test_the_h100s_stems_of_3_4_and_8_channels_ran_at_cuda_core_rates():
    # the rule's evidence: the 48 stem rows of h100_live_convs_align.csv (3, 4 and 8 channels,
    # 2-D and 3-D, TF32 and bf16, both layouts; a forward, or a backward that is the weight's
    # gradient alone), their kernels but the layout ones, 2 x (N.positions) x 64 x (C.taps)
    # FLOPs each: every one at 14-171 TFLOP/s, none near the TF32 Tensor-Core peak (494.5), the
    # 16-byte ones (4 TF32, 8 bf16 channels) among them
    rates = {}
    with open(DATA / "h100_live_convs_align.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r.get("set") != "align" or int(r["c"]) > 8 or r.get("error"):
                continue
            kernel, stride, pad = ([int(v) for v in r[x].split("x")]
                                   for x in ("kernel", "stride", "pad"))
            sizes = ([int(r["frames"])] if r["op"] == "conv3d" else []) + [int(r["side"])] * 2
            positions = taps = 1
            for size, t, st, p in zip(sizes, kernel, stride, pad):
                positions *= (size + 2 * p - t) // st + 1
                taps *= t
            flops = 2 * int(r["n"]) * positions * int(r["k"]) * int(r["c"]) * taps
            main = sum(float(k.rsplit("=", 1)[1].split("x")[0]) for k in r["kernels"].split(";")
                       if not any(s in k for s in LAYOUT_KERNELS)) * 1e-6
            rates[(r["op"], r["c"], r["dtype"], r["layout"], r["mode"])] = flops / main / 1e12
    assert len(rates) == 48
    assert all(14 <= v <= 175 for v in rates.values()), rates
    assert max(v for (_, c, d, _, _), v in rates.items()
               if (c, d) in (("4", "fp32"), ("8", "bf16"))) < 175
