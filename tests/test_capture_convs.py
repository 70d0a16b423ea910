"""Transposed, 1-D and 3-D convolutions captured as GEMMs (model.capture_convs._convolution): a
transposed convolution as the data gradient of the conv2d of the same filters, a 1-D one as the
2-D one of height 1, a 3-D one by the conv2d rules a dimension more. FLOPs against torch's FlopCounterMode on the same modules, shapes and
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
    # 3-D (a video model's): Conv3d(3, 8, 1) on 2 x 3 x 4 x 6 x 6, 2 N K C D H W = 2 x 2 x 8 x 3
    # x 144 = 13,824; Conv3d(8, 16, 3, stride 2, padding 1) to 2 x 3 x 3 (D' = (4 + 2 - 2 - 1)
    # // 2 + 1, P = Q = (6 + 2 - 2 - 1) // 2 + 1): 2 x 2 x 16 x 8 x 27 x 18 = 248,832; 262,656
    # forward; train + 13,824 (the first's weight gradient) + 2 x 248,832 = 774,144
    "3-d": (lambda: nn.Sequential(nn.Conv3d(3, 8, 1), nn.Conv3d(8, 16, 3, stride=2,
                                                                  padding=1)),
            (2, 3, 4, 6, 6), 262_656, 774_144),
    # ConvTranspose3d(8, 4, 2, stride 2) on 2 x 8 x 2 x 3 x 3: 2 x N x prod(w) x prod(input
    # spatial) = 2 x 2 x 256 x 18 = 18,432, the 1 x 1 x 1 one before it 2 x 2 x 8 x 3 x 18 =
    # 1,728: 20,160; train + 1,728 + 2 x 18,432 = 58,752
    "3-d-transposed": (lambda: nn.Sequential(nn.Conv3d(3, 8, 1),
                                             nn.ConvTranspose3d(8, 4, 2, stride=2)),
                       (2, 3, 2, 3, 3), 20_160, 58_752),
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


def test_a_3d_convolutions_gemms_and_bytes_by_hand():
    """Conv3d(8, 16, 3, stride 2, padding 1) on 2 x 8 x 4 x 6 x 6, fp32, by the conv2d rules a
    dimension more: output 2 x 16 x 2 x 3 x 3 (D'P'Q' = 18); forward M = N D'P'Q' = 36, N = 16,
    K = C T R S = 8 x 27 = 216; every input position is read (depth: windows o = 0, 1 read rows
    2 o - 1 .. 2 o + 1, so 0..3; height and width 0..5): X 2 x 8 x 144 = 2,304, W 16 x 8 x 27 =
    3,456, Y 2 x 16 x 18 = 576 values, (2,304 + 3,456 + 576) x 4 = 25,344 B each pass. The
    data gradient M = 36, N = 8, K = 16 x 27 = 432; the weight gradient M = 216, N = 16, K = 36.
    """
    module = nn.Sequential(nn.Conv3d(3, 8, 1), nn.Conv3d(8, 16, 3, stride=2, padding=1),
                           nn.Conv3d(16, 4, 1, stride=2))
    net = capture(module, torch.randn(2, 3, 4, 6, 6), mode="train")
    conv = {g.pass_: g for g in net.gemms() if g.layer == "1"}
    assert {p: (g.m, g.n, g.k, g.tensors, g.bytes) for p, g in conv.items()} == {
        "forward": (36, 16, 216, (2_304, 3_456, 576), 25_344),
        "backward-data": (36, 8, 432, (576, 3_456, 2_304), 25_344),
        "backward-weight": (216, 16, 36, (2_304, 576, 3_456), 25_344)}
    assert conv["forward"].roles == ("batch x D x P x Q", "out_channels",
                                     "in_channels x T x R x S")
    assert conv["forward"].align == (0, 1, 27)  # K = C x 27: the channels checked
    # NCDHW: cuDNN transposes X (2,304), W (3,456) and Y (576) around each pass, as in 2-D
    assert {g.transposed for g in conv.values()} == {2_304 + 3_456 + 576}
    # a stride-2 1 x 1 x 1 one on the 2 x 16 x 2 x 3 x 3 output: 1 x 2 x 2 out (D' = (2 - 1) //
    # 2 + 1 = 1, P = Q = (3 - 1) // 2 + 1 = 2), reading every other plane, row and column: X
    # as read 2 x 16 x 1 x 2 x 2 = 128 of its 576 values
    strided = next(g for g in net.gemms() if g.layer == "2" and g.pass_ == "forward")
    assert (strided.m, strided.n, strided.k, strided.tensors[0]) == (8, 4, 16, 128)
    # the first, 1 x 1 x 1: M = 2 x 144 = 288, N = 8, K = 3; X 864, W 24, Y 2,304
    one = next(g for g in net.gemms() if g.layer == "0" and g.pass_ == "forward")
    assert (one.m, one.n, one.k, one.tensors) == (288, 8, 3, (864, 24, 2_304))
    # a transposed one: the data gradient of Conv3d(4, 8, 2, stride 2) over its 4 x 6 x 6
    # output: M = N D H W = 2 x 18 = 36 (its input's positions), N = 4, K = 8 x 8 = 64; its
    # roles the 3-D axes, its channels the other way round
    up = capture(nn.Sequential(nn.Conv3d(3, 8, 1), nn.ConvTranspose3d(8, 4, 2, stride=2)),
                 torch.randn(2, 3, 2, 3, 3), mode="inference")
    forward = next(g for g in up.gemms() if g.layer == "1")
    assert (forward.m, forward.n, forward.k) == (36, 4, 64)
    assert forward.roles == ("batch x D x H x W", "out_channels", "in_channels x T x R x S")


def test_a_4d_convolution_is_refused_naming_the_module():
    with pytest.raises(CaptureError, match=r"^module 'enc\.0': only 1-D, 2-D and 3-D "
                                           r"convolutions are captured, this one has 4 spatial"):
        capture(_Enc(), torch.randn(1, 3, 4, 4, 4, 4))


class _Conv4d(nn.Module):
    """A convolution over four spatial dimensions, which no nn module makes:
    ``torch.convolution`` itself takes it."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3, 1, 1, 1, 1))

    def forward(self, x):
        return torch.convolution(x, self.weight, None, [1] * 4, [0] * 4, [1] * 4, False,
                                 [0] * 4, 1)


class _Enc(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(_Conv4d())

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


def test_3d_pooling_is_costed_as_the_2d_pooling():
    """MaxPool3d(2) on 1 x 2 x 4 x 4 x 4 fp32 (after a convolution, so its gradient is asked
    for): forward reads X (128 values, 512 B) and writes Y and the argmax indices (16 values,
    64 B + 16 int64, 128 B): 704 B, no FLOPs (comparisons); backward reads dY (64 B) and the
    indices (128 B), not X (its shape only), and writes dX (512 B): 704 B. AvgPool3d(2) forward:
    1 FLOP a value written, as avg_pool2d's (``FLOPS_PER_ELEMENT``): 16, X and Y, 576 B. Their
    FLOPs were unknown (bytes only) and the CPU's pooling rate not applied."""
    net = capture(nn.Sequential(nn.Conv3d(2, 2, 1), nn.MaxPool3d(2)),
                  torch.randn(1, 2, 4, 4, 4), mode="train")
    pools = {o.pass_: (o.flops, o.bytes) for o in net.ops() if o.layer == "1"}
    assert pools == {"forward": (0, 704), "backward": (0, 704)}
    assert not net.uncosted
    avg = capture(nn.Sequential(nn.Conv3d(2, 2, 1), nn.AvgPool3d(2)),
                  torch.randn(1, 2, 4, 4, 4), mode="inference")
    assert [(o.flops, o.bytes) for o in avg.ops() if o.layer == "1"] == [(16, 576)]


def test_a_weight_norm_is_costed():
    """nn.utils.parametrizations.weight_norm on Conv1d(4, 8, 3) (HiFi-GAN's convolutions): v 8 x
    4 x 3 = 96 values, g 8. Forward (aten._weight_norm_interface): each channel's norm, a
    multiply and an add a value, then w = v g / norm, a multiply: 3 x 96 = 288 FLOPs; it reads v
    and g and writes w and the 8 norms, (96 + 8 + 96 + 8) x 4 = 832 B. Backward: grad_g =
    sum(grad_w v) / norm (2 a value) and grad_v = g / norm (grad_w - v grad_g / norm) (3): 480
    FLOPs; grad_w, v, g, the norms in, grad_v and grad_g out: (96 + 96 + 8 + 8 + 96 + 8) x 4 =
    1,248 B. Both were uncosted ops, their FLOPs unknown."""
    conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(4, 8, 3))
    net = capture(nn.Sequential(nn.Conv1d(4, 4, 1), conv), torch.randn(2, 4, 16), mode="train")
    norms = {o.kind: (o.flops, o.bytes) for o in net.ops() if "weight_norm" in o.kind}
    assert norms == {"aten._weight_norm_interface": (288, 832),
                     "aten._weight_norm_interface_backward": (480, 1_248)}
    assert not net.uncosted


def test_an_unbatched_input_is_a_batch_of_one():
    # torch runs a convolution on an unbatched (C, D, H, W) or (C, L) input at a batch of 1
    # (it unsqueezes one): the capture read the channels as the batch ("batch 3", "batch 80").
    # By hand: Conv3d(3, 8, 3) over 3 x 8 x 16 x 16, M = 1 x 6 x 14 x 14 = 1,176, N = 8,
    # K = 3 x 27 = 81; Conv1d(80, 64, 3) over 80 x 1000, M = 1 x 998, N = 64, K = 80 x 3 = 240
    for module, x, shape in ((nn.Conv3d(3, 8, 3), torch.randn(3, 8, 16, 16), (1176, 8, 81)),
                             (nn.Conv1d(80, 64, 3), torch.randn(80, 1000), (998, 64, 240))):
        network = capture(module, x, mode="inference")
        assert network.batch == 1
        (gemm,) = network.gemms()
        assert (gemm.m, gemm.n, gemm.k) == shape
        assert gemm.flops == _torch_flops(module, x, "inference")
    # batched, the leading dimension stays the batch
    assert capture(nn.Conv3d(3, 8, 3), torch.randn(2, 3, 8, 16, 16)).batch == 2


def test_a_top_level_modules_gemms_and_ops_take_its_name():
    # a bare Conv3d has no qualified name: its GEMMs and its bias ops were recorded under "", so
    # the table's layer column was empty and the advice read "channels 3 (.in_channels)"; its
    # layer is named by its class, and now so are they
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware

    network = capture(nn.Conv3d(3, 8, 3), torch.randn(2, 3, 8, 16, 16), mode="train")
    assert [layer.name for layer in network.layers] == ["Conv3d"]
    assert {g.layer for g in network.gemms()} == {"Conv3d"}
    assert {o.layer for o in network.ops()} == {"Conv3d"}
    from roofline.output.report import notes_by_tier

    report = analyze(network, load_hardware("h100-sxm5-80gb"))
    (warning,) = [w for w in notes_by_tier(report.results, report)["warning"] if "channels 3" in w]
    assert warning.startswith("channels 3 (Conv3d.in_channels): MM1, MM2: pad to 4")


def test_a_stem_priced_at_the_cuda_core_rate_says_so():
    # R3D-18's stem at batch 2, fp32 (TF32 on an H100), trained: its forward and weight
    # gradient, 2 x (2 x 16 x 56 x 56) x 64 x (3 x 147) = 5,664,669,696 FLOPs each, are held to
    # the CUDA cores' 67 TFLOP/s x 1.83 / 1.98 GHz x 0.868 = 53.751 TFLOP/s (3 input channels,
    # fewer than 16): nothing said so, the forward predicted at 126 us against the roof's
    # 11.5 us unexplained. With 16 channels, or on a V100 (fp32 on CUDA cores already), nothing
    from roofline.analysis.report import analyze
    from roofline.hardware.catalog import load_hardware

    def stem(c):
        return capture(nn.Conv3d(c, 64, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3),
                                 bias=False), torch.randn(2, c, 16, 112, 112), mode="train")

    network = stem(3)
    assert [g.flops for g in network.gemms()] == [5_664_669_696] * 2
    (warning,) = [w for w in analyze(network, load_hardware("h100-sxm5-80gb")).warnings
                  if "CUDA cores" in w]
    assert warning.startswith("MM1, MM2 (Conv3d: 3 input channels): fewer than 16 input "
                              "channels are predicted no faster than the GPU's CUDA cores")
    assert f"{67 * 1.83 / 1.98 * 0.868:.3g}" == "53.8"
    assert "sustained share: 53.8 TFLOP/s" in warning
    assert "h100_live_convs_align.csv" in warning
    assert not [w for w in analyze(stem(16), load_hardware("h100-sxm5-80gb")).warnings
                if "CUDA cores" in w]
    assert not [w for w in analyze(network, load_hardware("v100-sxm2-32gb")).warnings
                if "CUDA cores" in w]
