"""A captured convolution on NCHW maps carries the values cuDNN transposes around each of its
GEMMs (``GemmShape.transposed``, model.capture_convs._transposed), worked out by hand from the
maps; none in channels_last or for a 1 x 1 stride-1 convolution; the warning that says what they
add reads every GEMM, in the streamed JSON too.

Needs torch (the `torch` extra)."""

from __future__ import annotations

import json

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.analysis.report import analyze  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
from roofline.torch import capture  # noqa: E402


def _net(channels_last: bool = False, dtype=torch.float32):
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
                                 torch.nn.Conv2d(8, 16, 1, bias=False),
                                 torch.nn.Conv2d(16, 16, 1, stride=2, bias=False)).to(dtype)
    x = torch.randn(2, 3, 8, 8, dtype=dtype)
    if channels_last:
        module = module.to(memory_format=torch.channels_last)
        x = x.to(memory_format=torch.channels_last)
    return capture(module, x, mode="train")


def test_each_gemm_carries_the_values_cudnn_transposes_around_it():
    # the 3 x 3 convolution: X 2 x 3 x 64 = 384, W 8 x 3 x 9 = 216, Y 2 x 8 x 64 = 1,024:
    # forward X + W + Y = 1,624, its weight gradient dY + X + dW the same (no data gradient:
    # the input needs none); the 1 x 1 stride-1 one nothing; the strided 1 x 1 one X 2 x 16 x
    # 64 = 2,048, Y 2 x 16 x 16 = 512, its W the same in both layouts: 2,560 in each pass
    got = {(g.layer, g.pass_): g.transposed for g in _net().gemms()}
    assert got == {("0", "forward"): 1624, ("0", "backward-weight"): 1624,
                   ("1", "forward"): 0, ("1", "backward-data"): 0, ("1", "backward-weight"): 0,
                   ("2", "forward"): 2560, ("2", "backward-data"): 2560,
                   ("2", "backward-weight"): 2560}
    assert all(g.transposed == 0 for g in _net(channels_last=True).gemms())


def test_the_layout_warning_counts_every_gemm_in_the_streamed_json_too(capsys):
    from roofline.cli import _stream_json

    report = analyze(_net(), load_hardware("a100"))  # fp32 convolutions in TF32
    (warning,) = [w for w in report.warnings if "NCHW" in w]
    assert warning.startswith("2 convolutions ran in fp32 (TF32) on NCHW tensors")
    _stream_json(report)
    assert json.loads(capsys.readouterr().out)["warnings"] == list(report.warnings)
    # on a V100 (no TF32: CUDA cores) no transposes are added and nothing is said
    assert not [w for w in analyze(_net(), load_hardware("v100")).warnings if "NCHW" in w]


def _net3d(channels_last: bool = False, dtype=torch.float32):
    module = torch.nn.Sequential(torch.nn.Conv3d(4, 8, 3, padding=1, bias=False),
                                 torch.nn.Conv3d(8, 8, 1, bias=False),
                                 torch.nn.Conv3d(8, 16, 1, stride=2, bias=False)).to(dtype)
    x = torch.randn(2, 4, 4, 6, 6, dtype=dtype)
    if channels_last:
        module = module.to(memory_format=torch.channels_last_3d)
        x = x.to(memory_format=torch.channels_last_3d)
    return capture(module, x, mode="train")


def test_a_3d_convolution_carries_its_transposes_by_the_same_rule():
    # the 3 x 3 x 3 one: X 2 x 4 x 144 = 1,152, W 8 x 4 x 27 = 864, Y 2 x 8 x 144 = 2,304:
    # forward and weight gradient 4,320 each (the input needs no gradient); the 1 x 1 x 1
    # stride-1 one nothing; the strided 1 x 1 x 1 one X 2 x 8 x 144 = 2,304, Y 2 x 16 x 2 x 3 x
    # 3 = 576, its W the same in both layouts: 2,880 in each pass
    got = {(g.layer, g.pass_): g.transposed for g in _net3d().gemms()}
    assert got == {("0", "forward"): 4320, ("0", "backward-weight"): 4320,
                   ("1", "forward"): 0, ("1", "backward-data"): 0, ("1", "backward-weight"): 0,
                   ("2", "forward"): 2880, ("2", "backward-data"): 2880,
                   ("2", "backward-weight"): 2880}
    # channels_last_3d: none, the strided 1 x 1 x 1 filter too (its K x C x 1 x 1 x 1 strides
    # read NCDHW's to torch.empty_like, which a meta copy had taken)
    assert all(g.transposed == 0 for g in _net3d(channels_last=True).gemms())


def test_the_layout_warning_names_channels_last_3d_for_3d_maps():
    h100 = load_hardware("h100-sxm5-80gb")
    (warning,) = [w for w in analyze(_net3d(dtype=torch.bfloat16), h100).warnings
                  if "NCDHW" in w]
    assert warning.startswith("3 convolutions ran in bf16 on NCDHW tensors")
    assert ("module.to(memory_format=torch.channels_last_3d), and the input likewise, runs "
            "them in NDHWC") in warning
    (warning,) = [w for w in analyze(_net(dtype=torch.bfloat16), h100).warnings if "NCHW" in w]
    assert "torch.channels_last), and the input likewise, runs them in NHWC" in warning


def test_a_3d_layout_warning_speaks_of_3d_maps_and_r3d18():
    # a 3-D step's warning says NDHWC / NCDHW and 1 x 1 x 1 (it read "take NHWC and transpose
    # NCHW around them", "1 x 1 stride-1", "14 x 14" and ResNet-50's 2-D step), and cites the lent
    # H100's R3D-18 bf16 training step: its best time and channels_last_3d kernels' sum read here
    # from the measurement itself (17.41 ms, 15.00 ms), the 2.48 ms of transposes and the 13.35 /
    # 10.59 ms predictions bench_gpu_video.py's last table printed for them
    from pathlib import Path

    steps = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "data"
                        / "h100_live_video_steps.json").read_text())
    ran = {(s["dtype"], s["layout"], s["step"]): s for s in steps}
    assert round(ran["bf16", "ncdhw", "r3d18-train"]["best_s"] * 1e3, 2) == 17.41
    assert round(ran["bf16", "ndhwc", "r3d18-train"]["kernel_s"] * 1e3, 2) == 15.0
    h100 = load_hardware("h100-sxm5-80gb")
    (warning,) = [w for w in analyze(_net3d(dtype=torch.bfloat16), h100).warnings
                  if "NCDHW" in w]
    assert "take NDHWC and transpose NCDHW around them" in warning
    assert "not around 1 x 1 x 1 stride-1 ones" in warning
    assert "NHWC" not in warning.replace("NDHWC", "") and "14 x 14" not in warning
    assert ("a lent H100's R3D-18 bf16 training step at batch 8 took 17.41 ms against 13.35 "
            "predicted, 2.48 ms of it in transposes; in channels_last_3d its kernels took 15 ms "
            "against 10.59") in warning


def test_no_layout_warning_where_no_16bit_convolution_is_transposed():
    # bf16 on NCHW / NCDHW maps, but cuDNN transposes around none of them (a 1 x 1 stride-1
    # convolution moves 0 values, a depthwise one and a grouped 1 x 1 x 1 one 0 by
    # capture_convs._transposed, and there is no batch norm): the warning said "2 convolutions
    # ran in bf16 on NCHW tensors ... (0 s of the predicted step ...)"; the fp32 (TF32) path
    # already said nothing. (A grouped 3 x 3 x 3 one's backward is counted since:
    # test_layout3d.py.)
    h100 = load_hardware("h100-sxm5-80gb")
    flat = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1), torch.nn.Conv2d(16, 8, 1))
    deep = torch.nn.Sequential(torch.nn.Conv3d(16, 16, 3, padding=1, groups=16),
                               torch.nn.Conv3d(16, 32, 1, groups=4))
    for module, x in ((flat, torch.randn(2, 8, 8, 8)), (deep, torch.randn(2, 16, 4, 8, 8))):
        network = capture(module.to(torch.bfloat16), x.to(torch.bfloat16), mode="train")
        assert network.nchw_convs == 2
        assert sum(g.transposed for g in network.gemms()) == 0
        assert not [w for w in analyze(network, h100).warnings if "NCHW" in w or "NCDHW" in w]



def test_an_input_made_channels_last_alone_runs_every_convolution_channels_last():
    # torch runs a convolution channels last where its input or its weight is
    # (cudnn_conv_suggest_memory_format) and gives its output that layout, so an NCHW module fed
    # a channels_last input runs every convolution in NHWC: no transposes, no NCHW convolution.
    # The meta device returns a contiguous output, which made the second and third read as NCHW:
    # the strided 1 x 1 one (X 2 x 16 x 64 = 2,048, Y 2 x 16 x 16 = 512) charged 2,560 values
    # a pass, and in bf16 the step counted 2 convolutions on NCHW maps.
    for dtype in (torch.float32, torch.bfloat16):
        module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
                                     torch.nn.Conv2d(8, 16, 1, bias=False),
                                     torch.nn.Conv2d(16, 16, 1, stride=2, bias=False)).to(dtype)
        x = torch.randn(2, 3, 8, 8, dtype=dtype).to(memory_format=torch.channels_last)
        net = capture(module, x, mode="train")
        assert {g.transposed for g in net.gemms()} == {0}
        assert net.nchw_convs == 0
    # a channels_last_3d input alike (3-D, bf16)
    with torch.device("meta"):
        module = torch.nn.Sequential(torch.nn.Conv3d(3, 8, 3, padding=1, bias=False),
                                     torch.nn.Conv3d(8, 8, 3, padding=1, bias=False)).to(
            torch.bfloat16)
        x = torch.empty(2, 3, 4, 8, 8, dtype=torch.bfloat16).to(
            memory_format=torch.channels_last_3d)
    net = capture(module, x, mode="train")
    assert {g.transposed for g in net.gemms()} == {0} and net.nchw_convs == 0
