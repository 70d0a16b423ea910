"""Transposed and 1-D convolutions captured as GEMMs (model.capture_convs._convolution): a
transposed convolution as the data gradient of the conv2d of the same filters, a 1-D one as the
2-D one of height 1. FLOPs against torch's FlopCounterMode on the same modules, shapes and
bytes by hand.

Needs torch (the `torch` extra)."""

from __future__ import annotations

import pytest
from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from roofline.model.capture import CaptureError  # noqa: E402
from roofline.torch import capture  # noqa: E402


def _torch_flops(module, x, mode):
    """torch's own count of the same step: 2 x N x prod(weight) x prod(output spatial) for a
    convolution, x prod(input spatial) for a transposed one."""
    with FlopCounterMode(display=False) as counter:
        out = module(x)
        if mode == "train":
            out.sum().backward()
    return counter.get_total_flops()


def _flops(net):
    return sum(g.flops for g in net.gemms())


class Dec(nn.Module):
    """A decoder stage: a convolution, a 2 x upsampling transposed one, a group norm."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        return self.norm(self.up(self.conv(x)))


# each transposed convolution after a convolution, so that its data gradient is asked for
CASES = {
    # the user's decoder: x 2 x 8 x 16 x 16. conv 2 N H W K C R S = 2 x 2 x 256 x 16 x 8 x 9 =
    # 1,179,648; up 2 x N x prod(w) x H x W = 2 x 2 x 512 x 256 = 524,288: 1,703,936 forward;
    # train adds conv's weight gradient and up's two gradients: 3,932,160 (both FlopCounterMode's
    # too; the transposed convolution was 0 FLOPs and an uncosted op)
    "decoder": (Dec, (2, 8, 16, 16), 1_703_936, 3_932_160),
    # not strided: 3 x 3, padding 1
    "stride-1": (lambda: nn.Sequential(nn.Conv2d(4, 16, 1), nn.ConvTranspose2d(16, 8, 3,
                                                                               padding=1)),
                 (2, 4, 6, 6), 175_104, 516_096),
    # strided with an output padding: 5 x 7 -> 10 x 14
    "output-padding": (lambda: nn.Sequential(
        nn.Conv2d(4, 16, 1), nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1,
                                                output_padding=1)),
        (2, 4, 5, 7), 170_240, 501_760),
    # 1-D (Whisper's and wav2vec2's front ends) and a transposed one: Conv1d 40 -> 20, 2 N P K
    # C R = 2 x 2 x 20 x 8 x 4 x 3 = 7,680; ConvTranspose1d 20 -> 40, 2 x 2 x 128 x 20 = 10,240:
    # 17,920; train + 7,680 + 2 x 10,240 = 46,080
    "1-d": (lambda: nn.Sequential(nn.Conv1d(4, 8, 3, stride=2, padding=1), nn.GELU(),
                                  nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1,
                                                     output_padding=1)),
            (2, 4, 40), 17_920, 46_080),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mode", ["inference", "train"])
def test_transposed_and_1d_convolutions_count_flopcountermodes_flops(case, mode):
    make, shape, inference, train = CASES[case]
    x = torch.randn(*shape)
    net = capture(make(), x, mode=mode)
    expected = inference if mode == "inference" else train
    assert _torch_flops(make(), x, mode) == expected
    assert _flops(net) == expected
    assert not [op for op in net.uncosted if "convolution" in op]


def test_a_grouped_dilated_transposed_convolution():
    # ConvTranspose2d(8, 16, 3, stride (2, 3), padding 2, dilation 2, groups 4, output padding
    # (1, 2)) on 2 x 8 x 5 x 7: weight 8 x 4 x 3 x 3, each pass 2 N H W C_in (C_out / g) R S =
    # 2 x 2 x 35 x 8 x 4 x 9 = 40,320 FLOPs; the 1 x 1 convolution before it 2 x 2 x 35 x 8 x 4
    # = 4,480 forward and as much for its weight gradient
    def make():
        return nn.Sequential(nn.Conv2d(4, 8, 1), nn.ConvTranspose2d(
            8, 16, 3, stride=(2, 3), padding=2, dilation=2, groups=4, output_padding=(1, 2)))

    x = torch.randn(2, 4, 5, 7)
    assert _flops(capture(make(), x, mode="inference")) == _torch_flops(make(), x,
                                                                         "inference") == 44_800
    net = capture(make(), x, mode="train")
    up = {g.pass_: g for g in net.gemms() if g.layer == "1"}
    # output 10 x 20 (H_o = 4 x 2 - 4 + 4 + 1 + 1), whose conv2d gives back 5 x 7: M = N H W = 70
    assert {p: (g.m, g.n, g.k, g.batch_count) for p, g in up.items()} == {
        "forward": (70, 4, 18, 4), "backward-data": (70, 2, 36, 4),
        "backward-weight": (36, 2, 70, 4)}
    assert {g.flops for g in up.values()} == {40_320}
    assert _flops(net) == 2 * 4_480 + 3 * 40_320  # 129,920
    # FlopCounterMode counts a grouped weight gradient g times (its conv_backward_flop swaps
    # batch and channels and leaves the groups out): 3 x 40,320 more
    assert _torch_flops(make(), x, "train") == 129_920 + 3 * 40_320
    assert all(g.transposed == 0 for g in up.values())  # grouped: cuDNN transposes none


def test_a_transposed_convolutions_gemms_and_bytes_by_hand():
    # the decoder's up, ConvTranspose2d(16, 8, 2, stride 2) on 2 x 16 x 16 x 16 to 2 x 8 x 32 x
    # 32, fp32: the data gradient of the conv2d from 8 channels to 16, 2 x 2 stride 2 over 32 x
    # 32. X 2 x 16 x 256 = 8,192, W 16 x 8 x 4 = 512, Y 2 x 8 x 1,024 = 16,384 values.
    # forward (that conv2d's data gradient): M = N H W = 512, N = 8, K = 16 x 4 = 64, A = X,
    # B = W, C = Y: (8,192 + 512 + 16,384) x 4 B = 100,352 B; data gradient (its forward): M =
    # 512, N = 16, K = 8 x 4 = 32, dY read whole (the windows tile it), dX written; weight
    # gradient: M = 8 x 4 = 32, N = 16, K = 512
    net = capture(Dec(), torch.randn(2, 8, 16, 16), mode="train")
    up = {g.pass_: g for g in net.gemms() if g.layer == "up"}
    assert {p: (g.m, g.n, g.k, g.tensors, g.bytes) for p, g in up.items()} == {
        "forward": (512, 8, 64, (8_192, 512, 16_384), 100_352),
        "backward-data": (512, 16, 32, (16_384, 512, 8_192), 100_352),
        "backward-weight": (32, 16, 512, (16_384, 8_192, 512), 100_352)}
    assert up["forward"].roles == ("batch x H x W", "out_channels", "in_channels x R x S")
    assert up["forward"].b_operand == "weight"
    # cuDNN's NCHW <-> NHWC transposes around each: X + W + Y = 25,088 values
    assert {g.transposed for g in up.values()} == {25_088}
    # its bias: the add over Y's 16,384 values, Y written and read and 8 biases read, (2 x
    # 16,384 + 8) x 4 = 131,104 B; backward the sum of dY per channel, (16,384 + 8) x 4 = 65,568
    bias = {o.kind: (o.flops, o.bytes, o.follows) for o in net.ops() if o.layer == "up"}
    assert bias == {"bias": (16_384, 131_104, "conv"),
                    "bias-backward": (16_384, 65_568, "conv")}


def test_a_1d_convolution_is_the_2d_one_of_height_1():
    # Conv1d(4, 8, 3, stride 2, padding 1, dilation 2) on 2 x 4 x 40: P = (40 + 2 - 4 - 1) // 2
    # + 1 = 19; M = 2 x 19 = 38, N = 8, K = 4 x 3 = 12. Its taps read positions 2 o + {-1, 1, 3}:
    # only the 20 odd ones, so X as read is 2 x 4 x 20 = 160 values; W 8 x 4 x 3 = 96, Y 2 x 8 x
    # 19 = 304: (160 + 96 + 304) x 4 B = 2,240 B. cuDNN's transposes: all of X (320) + W + Y = 720
    (g,) = capture(nn.Conv1d(4, 8, 3, stride=2, padding=1, dilation=2, bias=False),
                   torch.randn(2, 4, 40), mode="inference").gemms()
    assert (g.m, g.n, g.k, g.tensors, g.bytes, g.transposed) == (38, 8, 12, (160, 96, 304),
                                                                 2_240, 720)
    assert g.flops == 2 * 38 * 8 * 12  # FlopCounterMode: 2 x 2 x 96 x 19 = 7,296

    def key(net):
        return [(g.pass_, g.m, g.n, g.k, g.batch_count, g.tensors, g.transposed)
                for g in net.gemms()]

    # the 2-D convolution of height 1 it is, forward and backward, grouped too
    one = nn.Sequential(nn.Conv1d(4, 8, 3, padding=1), nn.Conv1d(8, 8, 5, stride=2, groups=2))
    two = nn.Sequential(nn.Conv2d(4, 8, (1, 3), padding=(0, 1)),
                        nn.Conv2d(8, 8, (1, 5), stride=(1, 2), groups=2))
    one_net = capture(one, torch.randn(2, 4, 40), mode="train")
    two_net = capture(two, torch.randn(2, 4, 1, 40), mode="train")
    assert key(one_net) == key(two_net)
    # and its bias ops (the gradient's sum laid out as the 2-D map's) and activations in memory
    assert [(o.layer, o.pass_, o.kind, o.flops, o.bytes, o.summed) for o in one_net.ops()] == [
        (o.layer, o.pass_, o.kind, o.flops, o.bytes, o.summed) for o in two_net.ops()]
    assert one_net.captured_live == two_net.captured_live


def test_a_3d_convolution_is_refused_naming_the_module_or_its_class():
    with pytest.raises(CaptureError, match=r"^the top-level module \(Conv3d\): only 1-D and "
                                           r"2-D convolutions are captured, this one has 3 "
                                           r"spatial dimensions$"):
        capture(nn.Conv3d(3, 4, 3), torch.randn(1, 3, 4, 4, 4))
    with pytest.raises(CaptureError, match=r"^module 'enc\.0': only 1-D and 2-D"):
        capture(_Enc(), torch.randn(1, 3, 4, 4, 4))


class _Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv3d(3, 4, 3))

    def forward(self, x):
        return self.enc(x)


def test_an_output_padding_past_the_stride_is_refused():
    # torch allows an output padding of the stride or more under a larger dilation: output rows
    # no input reaches, which the conv2d it is the data gradient of does not give back
    module = nn.Sequential(nn.Unflatten(1, (3, 2, 2)),
                           nn.ConvTranspose2d(3, 4, 3, dilation=2, output_padding=1))
    with pytest.raises(CaptureError, match=r"^module '1': a transposed convolution whose output "
                                           r"padding 1x1 is its stride 1x1 or more"):
        capture(module, torch.randn(2, 12))
