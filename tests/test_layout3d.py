"""Depthwise and grouped 3-D convolutions as a lent H100 ran them (benchmarks/data/
h100_live_convs_align.csv): the values cuDNN transposes around a grouped one on NCDHW maps
(model.capture_convs._transposed), worked out by hand and held against the transposes' profiled
time.

Needs torch (the `torch` extra)."""

from __future__ import annotations

import csv
from pathlib import Path

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.analysis.gpu_layout import transpose_s  # noqa: E402
from roofline.analysis.report import analyze  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
from roofline.torch import capture  # noqa: E402

CSV = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "h100_live_convs_align.csv"


def _rows() -> dict[tuple[str, str, str, str], dict[str, str]]:
    with open(CSV, newline="") as f:
        return {(r["set"], r["dtype"], r["layout"], r["mode"]): r for r in csv.DictReader(f)}


class _Scaled(torch.nn.Module):
    """A convolution behind a trainable scale: its input's gradient is asked for, as the lent
    H100's backward took it (``benchmarks/_conv_rows.layer``)."""

    def __init__(self, conv: torch.nn.Module) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.conv = conv

    def forward(self, x):
        return self.conv(x * self.scale)


def _timed(c: int, groups: int, side: int, dtype, conv=torch.nn.Conv3d, mode: str = "train"):
    """The measured layer, on "meta": batch 8 of 16 frames, 3 x 3 x 3, padding 1."""
    with torch.device("meta"):
        module = _Scaled(conv(c, c, 3, padding=1, groups=groups, bias=False)).to(dtype)
        x = torch.empty(8, c, 16, side, side, dtype=dtype)
    return capture(module, x, mode=mode)


def _moved(network) -> dict[str, int]:
    return {g.pass_: g.transposed for g in network.gemms() if g.layer == "conv"}


def test_a_grouped_3d_convolution_carries_the_dense_rule_but_a_16bit_forward():
    # 8 groups of 24 channels over 8 x 16 x 28 x 28: X = 8 x 192 x 16 x 784 = 19,267,584, Y the
    # same, W = 192 x 24 x 27 = 124,416; forward X + W + Y, data gradient dY + W + dX, weight
    # gradient dY + X + dW: 38,659,584 each (it was 0: no grouped convolution counted)
    assert _moved(_timed(192, 8, 28, torch.float32)) == {
        "forward": 38_659_584, "backward-data": 38_659_584, "backward-weight": 38_659_584}
    # bf16: cuDNN ran both grouped forwards on CUDA cores over NCDHW, no transposes
    assert _moved(_timed(192, 8, 28, torch.bfloat16)) == {
        "forward": 0, "backward-data": 38_659_584, "backward-weight": 38_659_584}
    # 32 groups of 4: X = 8 x 128 x 16 x 784 = 12,845,056, W = 128 x 4 x 27 = 13,824: 25,703,936
    assert _moved(_timed(128, 32, 28, torch.float32)) == {
        "forward": 25_703_936, "backward-data": 25_703_936, "backward-weight": 25_703_936}
    # depthwise (a group's input channels 1: torch's own kernels), a grouped 2-D one and a
    # grouped transposed 3-D one (never timed): none
    assert set(_moved(_timed(96, 96, 56, torch.float32)).values()) == {0}
    with torch.device("meta"):
        flat = capture(_Scaled(torch.nn.Conv2d(192, 192, 3, padding=1, groups=8, bias=False)),
                       torch.empty(8, 192, 28, 28), mode="train")
    assert set(_moved(flat).values()) == {0}
    assert set(_moved(_timed(192, 8, 28, torch.float32, torch.nn.ConvTranspose3d)).values()) \
        == {0}


def test_the_grouped_transposes_price_near_what_cudnn_took():
    # the 8 groups' fp32 forward: 38,659,584 values, DRAM-bound on the H100 datasheet entry, as
    # gpu_layout prices a transpose: 2 reads-and-writes x 4 bytes x 38,659,584 / (0.88 x 3.35
    # TB/s) = 104.9 us (the SMs' bound, 38,659,584 / (1.64 x 132 SMs x 1.98 GHz) = 90.2 us, is
    # lower). cuDNN took 123.9 us there (nchwToNhwc 60.1 + nhwcToNchw 63.8): 1.18x
    h100 = load_hardware("h100-sxm5-80gb")
    (forward,) = [g for g in analyze(_timed(192, 8, 28, torch.float32, mode="inference"),
                                     h100).network.gemms() if g.layer == "conv"]
    rows = _rows()
    measured = float(rows["grouped", "fp32", "ncdhw", "forward"]["transpose_us"])
    assert abs(measured - 123.92) < 0.01
    hand = 2 * 4 * 38_659_584 / (0.88 * 3.35e12)
    assert abs(hand * 1e6 - 104.91) < 0.01
    priced = analyze(_timed(192, 8, 28, torch.float32, mode="inference"), h100)
    got = sum(transpose_s(r.gemm, h100) for r in priced.results)
    assert forward.transposed == 38_659_584 and abs(got - hand) < 1e-9
    # the row that contradicts the rule: the 32 groups' fp32 backward moved 76.7 us (only the
    # weight gradient's: its data gradient ran on CUDA cores, convolveNd_dgrad_float_engine)
    # where the rule counts both gradients, 2 x 25,703,936 values = 139.5 us
    backward = rows["grouped4", "fp32", "ncdhw", "backward"]
    assert "convolveNd_dgrad_float_engine" in backward["kernels"]
    assert round(float(backward["transpose_us"]), 1) == 76.7
    assert round(2 * 4 * 2 * 25_703_936 / (0.88 * 3.35e12) * 1e6, 1) == 139.5
