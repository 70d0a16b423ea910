"""conv2d as an implicit GEMM (NVIDIA's convention), pooling, flatten, and the ResNet-50
example: shapes computed by hand in the comments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline.analysis.report import analyze
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.model.network import load_network, network_from_yaml

EXAMPLES = Path(__file__).parent.parent / "examples"


def _net(layers: str, batch: int = 8, mode: str = "train", top: str = "") -> object:
    return network_from_yaml(f"batch: {batch}\ndtype: fp16\nmode: {mode}\n{top}layers:\n{layers}")


def _shapes(net) -> list[tuple]:
    return [(g.layer, g.pass_, g.m, g.n, g.k, g.batch_count) for g in net.gemms()]


def test_resnet50_first_convolution_forward_and_both_gradients():
    # 7x7, stride 2, padding 3, 3 -> 64 channels, 224x224 -> P = Q = (224 + 6 - 6 - 1) // 2 + 1 = 112
    # forward  M = N.P.Q = 8 x 112 x 112 = 100352, N = K = 64, K = C.R.S = 3 x 7 x 7 = 147
    # data     M = N.P.Q = 100352, N = C = 3,  K = K.R.S = 64 x 49 = 3136 (scatter form: the
    #          forward's FLOPs, as torch counts a strided convolution's input gradient)
    # weight   M = C.R.S = 147,                    N = K = 64, K = N.P.Q = 100352
    # (the data gradient exists only because a weighted layer comes before: a 1x1 stem here)
    net = _net("  - {type: conv2d, name: stem, in_channels: 3, out_channels: 3, kernel: 1, "
               "height: 224, width: 224}\n"
               "  - {type: conv2d, name: conv1, out_channels: 64, kernel: 7, stride: 2, "
               "padding: 3}\n")
    conv1 = [s for s in _shapes(net) if s[0] == "conv1"]
    assert conv1 == [("conv1", "forward", 100352, 64, 147, 1),
                     ("conv1", "backward-data", 100352, 3, 3136, 1),
                     ("conv1", "backward-weight", 147, 64, 100352, 1)]
    assert net.layers[1].out_shape == (64, 112, 112)
    # parameters: 64 x 3 x 7 x 7 = 9408 (+ the stem's 3 x 3 = 9)
    assert net.parameters == 9408 + 9


def test_bottleneck_3x3_convolution_and_its_batch_dimensions():
    # res3's 3x3: 128 -> 128 channels on 28x28, stride 1, padding 1: P = Q = 28
    # forward  M = 8 x 28 x 28 = 6272, N = 128, K = 128 x 9 = 1152
    # data     M = 8 x 28 x 28 = 6272 (N.P.Q), N = 128, K = 128 x 9 = 1152
    # weight   M = 1152, N = 128, K = 6272
    net = _net("  - {type: conv2d, name: a, out_channels: 128, kernel: 1}\n"
               "  - {type: conv2d, name: b, out_channels: 128, kernel: 3, padding: 1}\n",
               top="input: {channels: 128, height: 28, width: 28}\n")
    gemms = [g for g in net.gemms() if g.layer == "b"]
    assert [(g.m, g.n, g.k) for g in gemms] == [(6272, 128, 1152), (6272, 128, 1152),
                                                 (1152, 128, 6272)]
    # M = N.P.Q grows with the batch by P.Q = 784; the weight gradient's K likewise
    assert [g.batch_dims for g in gemms] == [(784, 0, 0), (784, 0, 0), (0, 0, 784)]
    assert gemms[0].dims_at_batch(16) == (12544, 128, 1152)
    # alignment: C from K = C.R.S (unit R.S = 9), never N.P.Q
    assert [g.align for g in gemms] == [(0, 1, 9), (0, 1, 9), (9, 1, 0)]


def test_stride_dilation_and_rectangular_kernels():
    # H = 32, W = 20; kernel [3, 5], stride [2, 1], padding [1, 2], dilation 2:
    # P = (32 + 2 - 2 x 2 - 1) // 2 + 1 = 15; Q = (20 + 4 - 2 x 4 - 1) // 1 + 1 = 16
    net = _net("  - {type: conv2d, out_channels: 16, kernel: [3, 5], stride: [2, 1], "
               "padding: [1, 2], dilation: 2}\n", top="input: {channels: 8, height: 32, width: 20}\n")
    assert net.layers[0].out_shape == (16, 15, 16)
    (fwd, wgt) = net.gemms()
    assert (fwd.m, fwd.n, fwd.k) == (8 * 15 * 16, 16, 8 * 15)


def test_grouped_and_depthwise_convolutions_are_batched_gemms():
    # groups 4, 64 -> 128 channels, 3x3 on 14x14 (padding 1): per group C = 16, K = 32
    # forward: 4 x (M = 8 x 196 = 1568, N = 32, K = 16 x 9 = 144)
    net = _net("  - {type: conv2d, out_channels: 128, kernel: 3, padding: 1, groups: 4}\n"
               "  - {type: conv2d, out_channels: 128, kernel: 3, padding: 1, groups: 128}\n",
               top="input: {channels: 64, height: 14, width: 14}\n")
    shapes = _shapes(net)
    assert shapes[0] == ("conv1", "forward", 1568, 32, 144, 4)
    # depthwise: groups = channels = 128: 128 x (M = 1568, N = 1, K = 9)
    assert shapes[1] == ("conv2", "forward", 1568, 1, 9, 128)
    # FLOPs include the batch count: 2 x 1568 x 32 x 144 x 4
    assert net.gemms()[0].flops == 2 * 1568 * 32 * 144 * 4
    # parameters: 128 x 16 x 9 + 128 x 1 x 9
    assert net.parameters == 128 * 16 * 9 + 128 * 9


def test_alignment_is_on_channels_not_on_batch_or_image_size():
    # NVIDIA: channels multiples of 8 for fp16; the batch and image size need not be.
    # 3 input channels: K = 3 x 49 = 147 is checked as C = 3 -> pad channels to 8;
    # M = N.P.Q = 7 x 112 x 112 is odd but never flagged.
    net = _net("  - {type: conv2d, name: conv1, out_channels: 64, kernel: 7, stride: 2, "
               "padding: 3}\n", batch=7, mode="inference",
               top="input: {channels: 3, height: 224, width: 224}\n")
    result = analyze(net, load_hardware("v100-sxm2-32gb")).results[0]
    assert [(n.dim, n.value, n.pad_to) for n in result.alignment] == [("K", 3, 8)]
    assert result.warnings[0].startswith("K=147 (in_channels x R x S): in_channels 3 is not a "
                                         "multiple of 8")


def test_maxpool_anchor_and_pooling_shapes():
    # NVIDIA: a 3x3 max pool with unit stride is 2.25 FLOP/B in fp16: 9 FLOPs per output
    # over 2 bytes read + 2 written (stride 1, padding 1: as many outputs as inputs)
    net = _net("  - {type: maxpool2d, kernel: 3, stride: 1, padding: 1}\n", mode="inference",
               top="input: {channels: 64, height: 56, width: 56}\n")
    (op,) = net.ops()
    assert op.kind == "maxpool2d"
    assert op.intensity == pytest.approx(2.25)
    # ResNet's stem pool: 3x3, stride 2, padding 1: 112 -> (112 + 2 - 3) // 2 + 1 = 56
    net = _net("  - {type: maxpool2d, kernel: 3, stride: 2, padding: 1}\n"
               "  - {type: avgpool2d, kernel: 56}\n"
               "  - {type: flatten}\n  - {type: linear, in: 64, out: 10}\n",
               top="input: {channels: 64, height: 112, width: 112}\n")
    assert net.layers[0].out_shape == (64, 56, 56)
    assert net.layers[1].out_shape == (64, 1, 1)
    assert net.layers[2].out_width == 64


def test_flatten_carries_channels_times_height_times_width():
    net = _net("  - {type: conv2d, out_channels: 16, kernel: 3}\n  - {type: flatten}\n"
               "  - {type: linear, in: 576, out: 10}\n",
               top="input: {channels: 1, height: 8, width: 8}\n")
    # 8x8, kernel 3, no padding: 6x6; 16 x 6 x 6 = 576 features
    assert net.layers[1].out_width == 576
    with pytest.raises(InputError, match=r"layers\[2\].in: layer 'fc3' takes 500 inputs but the "
                                         r"previous layer 'flatten2' \(layers\[1\]\) gives 576"):
        _net("  - {type: conv2d, out_channels: 16, kernel: 3}\n  - {type: flatten}\n"
             "  - {type: linear, in: 500, out: 10}\n",
             top="input: {channels: 1, height: 8, width: 8}\n")


@pytest.mark.parametrize("layers, top, message", [
    ("  - {type: conv2d, out_channels: 8, kernel: 7}\n", "input: {channels: 3, height: 4, width: 4}\n",
     "'conv1': kernel 7x7 (dilation 1x1) exceeds the padded input 4x4"),
    ("  - {type: conv2d, out_channels: 8, kernel: 3, groups: 2}\n",
     "input: {channels: 3, height: 8, width: 8}\n", "groups 2 does not divide in_channels 3"),
    ("  - {type: conv2d, out_channels: 8, kernel: 3}\n", "",
     "'conv1' needs its input size: give height and width"),
    ("  - {type: conv2d, out_channels: 8, kernel: 3}\n  - {type: conv2d, in_channels: 4, "
     "out_channels: 8, kernel: 1}\n", "input: {channels: 3, height: 8, width: 8}\n",
     "'conv2' takes 4 channels but the previous layer 'conv1' (layers[0]) gives 8 channels"),
    ("  - {type: conv2d, out_channels: 8, kernel: 3}\n  - {type: linear, in: 8, out: 2}\n",
     "input: {channels: 3, height: 8, width: 8}\n", "put a flatten between them"),
    ("  - {type: conv2d, out_channels: 8, kernel: 3, padding: -1}\n",
     "input: {channels: 3, height: 8, width: 8}\n", "padding: expected an integer >= 0"),
    ("  - {type: conv2d, out_channels: 8, kernel: 3, stride: 2, repeat: 2}\n",
     "input: {channels: 8, height: 8, width: 8}\n", "only a layer that keeps its input's size"),
])
def test_bad_convolutions_are_one_line_errors(layers, top, message):
    with pytest.raises(InputError, match=re.escape(message)):
        _net(layers, top=top)


def test_resnet50_example_forward_multiply_adds():
    net = load_network(EXAMPLES / "resnet50.yaml")
    forward = [g for g in net.gemms() if g.pass_ == "forward"]
    # the sum over its layers (convolutions and the classifier) per image: 4.09 G multiply-adds,
    # torchvision's v1.5 figure (He et al. 2016, Table 1, list 3.8 x 10^9 for the original
    # layout, whose downsampling stride sits on the 1x1 convolution)
    macs = sum(g.flops for g in forward) / 2 / net.batch
    assert macs == 4_089_184_256
    # parameters: torchvision's resnet50 has 25,557,032 (batch norms included)
    assert net.parameters == 25_557_032
    # conv1, 16 blocks x 3, 4 shortcuts (each with its batch norm), 16 adds, the two pools,
    # flatten and fc
    assert len(net.layers) == 2 * (1 + 48 + 4) + 16 + 2 + 1 + 1


def test_a_convolutions_json_gives_no_operand_layout():
    """An implicit-GEMM convolution's matrices are views of cuDNN's tensors, in its own
    layouts: JSON's ``operand_rows`` is null for it, where a Linear's gives its rows."""
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware

    net = _net("  - {type: conv2d, out_channels: 16, kernel: 3, padding: 1}\n"
               "  - {type: flatten}\n  - {type: linear, in: 1024, out: 10}\n",
               top="input: {channels: 8, height: 8, width: 8}\n")
    gemms = analyze(net, load_hardware("h100-sxm5-80gb")).to_dict()["gemms"]
    conv = [g["operand_rows"] for g in gemms if g["layer"] == "conv1"]
    linear = [g["operand_rows"] for g in gemms if g["layer"] != "conv1"]
    assert conv and all(rows is None for rows in conv)
    assert linear and all(rows is not None for rows in linear)
