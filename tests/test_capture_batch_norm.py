"""A captured batch norm keeps its map (``Op.norm``): the channels, the values each holds and the
layout torch picks its GPU kernels by, which the meta device loses after a convolution (its
output is NCHW whatever its operands), so the latest convolution's layout is the map's; on a GPU
entry the op is priced through those kernels (analysis.gpu_batch_norm).

Needs torch (the `torch` extra)."""

from __future__ import annotations

from _extras import need

need("torch", extra="torch")
import torch  # noqa: E402

from roofline.analysis.report import analyze  # noqa: E402
from roofline.hardware.catalog import load_hardware  # noqa: E402
from roofline.model.ops import NormShape  # noqa: E402
from roofline.torch import capture  # noqa: E402


def _block() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
                               torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                               torch.nn.Conv2d(8, 16, 1, bias=False), torch.nn.BatchNorm2d(16))


def _norms(net) -> dict[str, NormShape | None]:
    return {f"{op.kind}:{op.layer}": op.norm for op in net.ops() if "batch_norm" in op.kind}


def test_an_nchw_module_keeps_each_batch_norms_channels_and_values():
    # batch 2 of 8 x 8 maps: 8 channels of 2 x 64 = 128 values, then 16 channels of 128
    norms = _norms(capture(_block(), torch.randn(2, 3, 8, 8), mode="train"))
    assert sorted(norms.values()) == sorted([NormShape(8, 128), NormShape(8, 128),
                                             NormShape(16, 128), NormShape(16, 128)])
    eval_ = capture(_block(), torch.randn(2, 3, 8, 8), mode="inference").ops()
    assert {op.kind for op in eval_ if op.norm} == {"aten._native_batch_norm_legit_no_training"}


def test_a_channels_last_module_runs_its_batch_norms_channels_last():
    module = _block().to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    norms = _norms(capture(module, x, mode="train"))
    assert len(norms) == 4 and all(n is not None and n.channels_last for n in norms.values())
    # a channels_last input alone, no convolution: its own strides say so
    alone = capture(torch.nn.BatchNorm2d(8), torch.randn(2, 8, 4, 4).to(
        memory_format=torch.channels_last), mode="inference").ops()
    assert [op.norm for op in alone] == [NormShape(8, 32, True)]


def test_a_1d_batch_norm_has_no_map_and_streams():
    ops = capture(torch.nn.BatchNorm1d(8), torch.randn(4, 8), mode="train").ops()
    assert [op.norm for op in ops if "batch_norm" in op.kind] == [None, None]


def test_a_captured_batch_norm_on_a_gpu_is_priced_through_its_kernels():
    net = capture(_block(), torch.randn(64, 3, 56, 56), mode="train")
    report = analyze(net, load_hardware("h100-sxm5-80gb"))
    bases = {r.op.kind: r.predicted_basis for r in report.ops if "batch_norm" in r.op.kind}
    assert bases == {"aten.native_batch_norm": "batch-norm-kernels",
                     "aten.native_batch_norm_backward": "batch-norm-kernels"}


def test_fp32_weights_under_a_16_bit_map_are_marked_mixed():
    # autocast leaves a batch norm's weights fp32 while its input is 16-bit: torch then runs an
    # fp16 one through cuDNN (benchmarks/data/h100_live_bnorms_fp16.csv); a module cast whole
    # has weights of its input's dtype
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
                                 torch.nn.BatchNorm2d(8))
    module[0].half()  # the convolution in fp16, the batch norm's weights left fp32
    norms = [op.norm for op in capture(module, torch.randn(2, 3, 8, 8).half(),
                                       mode="train").ops() if op.norm is not None]
    assert norms and all(n.mixed for n in norms)
    whole = [op.norm for op in capture(_block().half(), torch.randn(2, 3, 8, 8).half(),
                                       mode="train").ops() if op.norm is not None]
    assert whole and not any(n.mixed for n in whole)
