"""Depthwise and grouped 3-D convolutions as a lent H100 ran them (benchmarks/data/
h100_live_convs_align.csv): the values cuDNN transposes around a grouped one on NCDHW maps
(model.capture_convs._transposed), worked out by hand and held against the transposes' profiled
time, and the layout warning's channels_last_3d advice qualified by what that layout did to them
(output.layout3d), its numbers read from the CSV.

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


def test_the_evidence_is_the_csv_and_depthwise_ran_slower_in_every_case():
    from roofline.output.layout3d import GROUPED_3D_EVIDENCE

    rows = _rows()
    sets = {"depthwise": "dw", "8 groups": "grouped", "32 groups": "grouped4"}
    for (kind, dtype, pass_), (ncdhw, ndhwc) in GROUPED_3D_EVIDENCE.items():
        assert float(rows[sets[kind], dtype, "ncdhw", pass_]["eager_us"]) == ncdhw
        assert float(rows[sets[kind], dtype, "ndhwc", pass_]["eager_us"]) == ndhwc
        # the wall clock the warning says "slower" of, and the kernels' sums agree in direction
        if kind == "depthwise":
            assert ndhwc > 3.9 * ncdhw
            assert (float(rows["dw", dtype, "ndhwc", pass_]["kernel_us"])
                    > 4 * float(rows["dw", dtype, "ncdhw", pass_]["kernel_us"]))
    assert len(GROUPED_3D_EVIDENCE) == 12


def _x3d(dtype, channels_last: bool = False, grouped: bool = True, mode: str = "train"):
    """A stem, a depthwise Conv3d and (``grouped``) one of 4 groups, as X3D and ResNeXt-3D have
    them."""
    layers = [torch.nn.Conv3d(3, 24, (1, 3, 3), padding=(0, 1, 1), bias=False),
              torch.nn.Conv3d(24, 24, 3, padding=1, groups=24, bias=False)]
    if grouped:
        layers.append(torch.nn.Conv3d(24, 24, 3, padding=1, groups=4, bias=False))
    module = torch.nn.Sequential(*layers).to(dtype)
    x = torch.randn(2, 3, 4, 8, 8, dtype=dtype)
    if channels_last:
        module = module.to(memory_format=torch.channels_last_3d)
        x = x.to(memory_format=torch.channels_last_3d)
    return capture(module, x, mode=mode)


def _warning(network) -> str:
    (warning,) = [w for w in analyze(network, load_hardware("h100-sxm5-80gb")).warnings
                  if "NCDHW" in w]
    return warning


def test_the_layout_warning_keeps_depthwise_3d_ones_ncdhw():
    # it said only "module.to(memory_format=torch.channels_last_3d), and the input likewise,
    # runs them in NDHWC", which ran the H100's depthwise Conv3d 4.43x slower forward in bf16
    # (3,230.592 against 728.608 us a call: 4.434) and 35.7x backward (112,944.450 against
    # 3,167.648: 35.66)
    warning = _warning(_x3d(torch.bfloat16))
    assert ("runs them in NDHWC, but not for every 3-D convolution: on a lent H100 "
            "(benchmarks/data/h100_live_convs_align.csv; a call's wall clock, bf16) a depthwise "
            "3 x 3 x 3 Conv3d of 96 channels ran slower in channels_last_3d than in NCDHW, where "
            "torch runs its own depthwise kernels, 4.43x forward (3.23 against 0.73 ms) and "
            "35.7x backward (112.94 against 3.17 ms), so keep this step's 1 depthwise 3-D "
            "convolution (1) in NCDHW, weight and input contiguous") in warning
    # grouped ones went either way, bf16: 8 groups 625.419 / 2,439.008 = 0.256 forward and
    # 1,346.256 / 815.792 = 1.65 backward; 32 groups 4,129.760 / 3,701.216 = 1.12 and
    # 310.848 / 406.668 = 0.764
    assert ("grouped ones of 8 groups of 24 channels and of 32 of 4 took 0.256x and 1.12x "
            "forward, 1.65x and 0.764x backward their NCDHW time in channels_last_3d, so time "
            "this step's 1 grouped 3-D convolution (2) both ways") in warning


def test_the_layout_warning_says_the_steps_dtype_and_passes_only():
    # fp32 (TF32) inference: the forward alone, 7,506.336 / 698.182 = 10.75 (depthwise),
    # 893.048 / 607.128 = 1.471 and 239.880 / 321.735 = 0.746 (grouped)
    warning = _warning(_x3d(torch.float32, mode="inference"))
    assert ("a call's wall clock, fp32 (TF32)) a depthwise 3 x 3 x 3 Conv3d of 96 channels "
            "ran slower in channels_last_3d than in NCDHW, where torch runs its own depthwise "
            "kernels, 10.8x forward (7.51 against 0.70 ms), so keep") in warning
    assert "took 1.47x and 0.746x forward their NCDHW time" in warning
    assert "backward" not in warning
    # fp32 training: backward 10,788.320 / 2,708.480 = 3.98; grouped 2,269.888 / 1,879.008 =
    # 1.21 and 3,845.568 / 3,653.568 = 1.05
    warning = _warning(_x3d(torch.float32))
    assert "and 3.98x backward (10.79 against 2.71 ms)" in warning
    assert "1.47x and 0.746x forward, 1.21x and 1.05x backward" in warning


def test_no_such_words_without_depthwise_or_grouped_3d_ones():
    # a dense 3-D step, and a 2-D one with a depthwise Conv2d (channels_last never timed for it)
    dense = torch.nn.Sequential(torch.nn.Conv3d(3, 24, 3, padding=1), torch.nn.Conv3d(24, 24, 3))
    assert "not for every" not in _warning(capture(dense.to(torch.bfloat16),
                                                   torch.randn(2, 3, 4, 8, 8).to(torch.bfloat16),
                                                   mode="train"))
    flat = torch.nn.Sequential(torch.nn.Conv2d(3, 24, 3, padding=1),
                               torch.nn.Conv2d(24, 24, 3, padding=1, groups=24))
    network = capture(flat.to(torch.bfloat16), torch.randn(2, 3, 8, 8).to(torch.bfloat16),
                      mode="train")
    (warning,) = [w for w in analyze(network, load_hardware("h100-sxm5-80gb")).warnings
                  if "NCHW" in w]
    assert "depthwise" not in warning and "not for every" not in warning


def test_a_grouped_convolutions_few_channels_get_no_stems_padding_advice():
    # 128 channels in 16 groups of 8 onto 1024 filters (3 x 3) at batch 32 of 56 x 56, bf16: each
    # group's GEMM K = 8 x 9 = 72, fewer than 16 input channels, so held to the CUDA cores'
    # 53.75 TFLOP/s (analysis.gpu_conv_channels). Before, the warning said what padding a stem to
    # 8 channels did on the H100, advice for a stem's 3 colour channels, not a group's 8; now it
    # names the groups and says what was timed of grouped ones there: 32 groups of 4 channels and
    # 96 of 1 (depthwise), each below that rate (h100_live_convs_align.csv: 0.6-20 and 1.4-3.0
    # TFLOP/s). A stem beside it keeps the padding sentence.
    from roofline.output.channels import narrow_channels_warning

    h100 = load_hardware("h100-sxm5-80gb")

    def warning(stem: bool) -> str:
        with torch.device("meta"):
            layers = [torch.nn.Conv2d(3, 128, 3, padding=1)] if stem else []
            module = torch.nn.Sequential(
                *layers, torch.nn.Conv2d(128, 1024, 3, padding=1, groups=16)).to(torch.bfloat16)
            x = torch.empty(32, 3 if stem else 128, 56, 56, dtype=torch.bfloat16)
        text = narrow_channels_warning(analyze(capture(module, x, mode="train"), h100))
        assert text is not None
        return text

    grouped = warning(stem=False)
    assert "(0: 8 input channels a group, 16 groups)" in grouped
    assert "Padded there" not in grouped
    assert grouped.endswith("timed there in 32 groups of 4 channels and 96 of 1 only, each "
                            "below that rate")
    both = warning(stem=True)
    assert "0: 3 input channels, 1: 8 input channels a group, 16 groups" in both
    assert "Padded there to the 16-byte rule's 4 (TF32) or 8 (bf16) channels" in both


def test_channels_last_is_read_as_torch_reads_it():
    # torch's own reading of a tensor's layout (torch._prims_common.suggest_memory_format, the
    # rule of c10's is_channels_last_strides_2d / _3d) is the reference: a depthwise filter
    # (96 x 1 x 3 x 3 x 3) in channels_last_3d has strides (27, 1, 9, 3, 1) and is channels
    # last, in NCDHW (27, 27, 9, 3, 1) it is not, though its one channel makes it contiguous both
    # ways; the old reading needed more than one channel and took both for NCDHW
    from torch._prims_common import suggest_memory_format

    from roofline.model.capture_convs import _channels_last

    shapes = [(96, 1, 3, 3, 3), (64, 32, 1, 1), (2, 3, 8, 8), (2, 1, 8, 8), (2, 64, 1, 1),
              (2, 96, 4, 8, 8), (8, 4, 1, 1, 1), (3, 1, 1, 5, 5), (2, 3, 1, 8), (1, 1, 1, 1)]
    for shape in shapes:
        last = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
        for layout in (torch.contiguous_format, last):
            t = torch.empty(shape, device="meta").to(memory_format=layout)
            assert _channels_last(t) == (suggest_memory_format(t) == last), (shape, t.stride())
    dw = torch.empty(96, 1, 3, 3, 3).to(memory_format=torch.channels_last_3d)
    assert dw.stride() == (27, 1, 9, 3, 1) and _channels_last(dw)


def _x3d_like(channels_last: bool):
    """bf16, batch 8 of 16 x 112 x 112 clips: a 3 x 7 x 7 / 1, 2, 2 stem to 96 channels, batch
    norm, a depthwise 3 x 3 x 3 Conv3d (as X3D's), batch norm; in channels_last_3d or not."""
    with torch.device("meta"):
        module = torch.nn.Sequential(
            torch.nn.Conv3d(3, 96, (3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
            torch.nn.BatchNorm3d(96),
            torch.nn.Conv3d(96, 96, 3, padding=1, groups=96, bias=False),
            torch.nn.BatchNorm3d(96)).to(torch.bfloat16)
        x = torch.empty(8, 3, 16, 112, 112, dtype=torch.bfloat16)
    if channels_last:
        module = module.to(memory_format=torch.channels_last_3d)
        x = x.to(memory_format=torch.channels_last_3d)
    return capture(module, x, mode="train")


def test_depthwise_3d_convolutions_in_channels_last_3d_are_warned_of():
    # A module already in channels_last_3d: its depthwise convolution (layer "2") ran cuDNN's
    # kernels, which the lent H100 ran (a call's wall clock, bf16) 3,230.592 / 728.608 = 4.43x
    # forward and 112,944.45 / 3,167.648 = 35.66x backward its NCDHW time; the prediction prices
    # its GEMMs. Before, nothing was said, and its depthwise filter, one channel, read as NCDHW:
    # the step counted a 16-bit convolution on NCDHW maps (the layout warning's), none ran.
    from roofline.output.layout3d import channels_last_depthwise_warning

    h100 = load_hardware("h100-sxm5-80gb")
    net = _x3d_like(channels_last=True)
    assert net.channels_last_depthwise_3d == ("2",) and net.nchw_convs == 0
    text = channels_last_depthwise_warning(analyze(net, h100))
    assert text is not None and text.startswith(
        "depthwise 3-D convolutions ran in channels_last_3d (2), priced as their GEMMs")
    assert "4.43x forward (3.23 against 0.73 ms) and 35.7x backward (112.94 against 3.17 ms)" \
        in text
    assert "keep those layers NCDHW" in text
    # and the layout warning, which told this module, all in channels_last_3d, that "1
    # convolution ran in bf16 on NCDHW tensors" (0 s of transposes) and to convert it, is gone
    from roofline.output.times import layout_warning

    assert layout_warning(analyze(net, h100)) is None
    # NCDHW, as torch's default: no such warning; its 2 convolutions on NCDHW maps counted
    plain = _x3d_like(channels_last=False)
    assert plain.channels_last_depthwise_3d == () and plain.nchw_convs == 2
    assert channels_last_depthwise_warning(analyze(plain, h100)) is None
    assert channels_last_depthwise_warning(analyze(net, load_hardware("xeon-platinum-8480plus"))) \
        is None


def test_a_3d_weight_gradient_to_few_output_channels_is_warned_of_at_the_h100s_rate():
    # The H100's RGB output layer (64 to 3 channels, 3 x 3 x 3, padding 1, batch 8 of 16 x 112
    # x 112): its weight gradient is 2 x (64 x 27) x 3 x (8 x 16 x 112 x 112) = 2 x 1,728 x 3 x
    # 1,605,632 = 16,647,192,576 FLOPs; the CSV's backward rows' wgrad kernels took 6,459.09 and
    # 6,484.67 us in TF32 (2.577 and 2.567 TFLOP/s), 34,667.36 and 37,524.38 us in bf16 (0.480,
    # 0.444). The same layer captured in bf16 is warned of with those times back, its FLOPs at
    # the bf16 rates: 34.7 ms to 37.5 ms. Before, nothing was said of it (its backward ran 25-40x
    # its prediction there).
    from roofline.output.channels import FEW_OUTPUTS_FLOPS, FEW_OUTPUTS_MS, few_outputs_warning

    flops = 2 * (64 * 27) * 3 * (8 * 16 * 112 * 112)
    assert flops == FEW_OUTPUTS_FLOPS == 16_647_192_576
    wgrad = {}
    with open(CSV, newline="") as f:
        for r in csv.DictReader(f):
            if (r["set"], r["op"], r["k"], r["mode"]) == ("align", "conv3d", "3", "backward"):
                wgrad[r["dtype"], r["layout"]] = next(
                    float(k.rsplit("=", 1)[1].split("x")[0]) / 1e3
                    for k in r["kernels"].split(";") if "wgrad" in k)
    assert sorted(FEW_OUTPUTS_MS["tf32"]) == sorted(
        (wgrad["fp32", "ncdhw"], wgrad["fp32", "ndhwc"]))
    assert sorted(FEW_OUTPUTS_MS["bf16"]) == sorted(
        (wgrad["bf16", "ncdhw"], wgrad["bf16", "ndhwc"]))

    def warned(out: int, conv=torch.nn.Conv3d, dtype=torch.bfloat16, hw="h100-sxm5-80gb",
               groups: int = 1, kernel: int = 3):
        with torch.device("meta"):
            module = conv(64, out, kernel, padding=kernel // 2, groups=groups).to(dtype)
            shape = (8, 64, 16, 112, 112) if conv is torch.nn.Conv3d else (8, 64, 112, 112)
            x = torch.empty(*shape, dtype=dtype)
        return few_outputs_warning(analyze(capture(module, x, mode="train"), load_hardware(hw)))

    text = warned(3)
    assert text is not None and text.startswith(
        "MM2 (Conv3d: 3 output channels): the weight gradient of a 3-D convolution to fewer "
        "than 16 output channels ran far below the GEMM model on a lent H100")
    assert "took 6.46 ms in TF32 (2.57 TFLOP/s) and 34.7-37.5 ms in bf16 (0.444-0.48 " \
           "TFLOP/s)" in text
    assert "At that bf16 rate this one would take 34.7 ms to 37.5 ms where" in text
    # in TF32 (fp32, as torch runs it): 16.647 GFLOP at 2.567-2.577 TFLOP/s, 6.46-6.48 ms, one
    assert "At that TF32 rate this one would take 6.46 ms where" in warned(3, dtype=torch.float32)
    # 16 output channels, a 2-D convolution (Tensor-Core kernels there) or a CPU: nothing said
    assert warned(16) is None and warned(3, conv=torch.nn.Conv2d) is None
    assert warned(3, hw="xeon-platinum-8480plus") is None
    # a depthwise one (one output channel a group), whose backward the H100 ran 1.07-2.46x its
    # prediction, is not this
    assert warned(64, groups=64) is None
    # nor a 1 x 1 x 1 one (a 3-D U-Net's usual last layer), whose weight gradient was never
    # timed: the one 3 x 3 x 3 layer's rate says nothing of it
    assert warned(3, kernel=1) is None
