"""Convolutions as GEMMs: ``convolution`` and ``convolution_backward`` as the GEMMs the conv2d
layer gives (``_convolution``, ``_conv``, ``_conv_gemms``), a transposed one as the conv2d of
the same filters whose data gradient it is (``_conv_transposed``, ``TRANSPOSED_PASSES``,
``TRANSPOSED_ROLES``), a 1-D one (Conv1d, ConvTranspose1d) as the 2-D one of height 1
(``_as_2d``), a 3-D one (Conv3d, ConvTranspose3d) by the same rules a dimension more
(``_conv3d``); the values cuDNN transposes around each GEMM on NCHW maps (``_transposed``), the
layout a convolution runs in (``_channels_last``, ``_nchw_16bit``), and its bias op and the sum
its bias gradient is (``_conv_bias``, ``_conv_bias_sums``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

from ..errors import CaptureError
from .capture_gemms import _bias_op, _weight_kind
from .capture_recorder import _Recorder
from .capture_shapes import _channel_sums
from .gemm import PASS_ROWS, GemmShape
from .layers.captured import Item
from .layers.conv2d import Conv2d, ConvGemms, touched
from .layers.spatial import window_out
from .ops import SumShape


class _ConvArgs(NamedTuple):
    """A convolution's stride, padding and dilation, (height, width) each ((depth, height,
    width) for a 3-D one), and its groups."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int


#: A transposed convolution's GEMM roles by its conv2d's (``_conv_transposed``): its channels
#: are that convolution's the other way round, and its input map is that one's output
TRANSPOSED_ROLES = {"batch x P x Q": "batch x H x W", "in_channels": "out_channels",
                    "out_channels": "in_channels", "in_channels x R x S": "out_channels x R x S",
                    "out_channels x R x S": "in_channels x R x S"}
#: The pass of a transposed convolution's GEMM by its conv2d's GEMM (``_conv_transposed``)
TRANSPOSED_PASSES = {"backward-data": "forward", "forward": "backward-data",
                     "backward-weight": "backward-weight"}


def _convolution(op: str, args: Sequence[Any], outs: list[Any], pass_: str, owner: str,
                 rec: _Recorder) -> list[Item]:
    """A ``convolution`` (input, weight, bias, stride, padding, dilation, transposed,
    output_padding, groups) or ``convolution_backward`` (grad_output, input, weight, bias_sizes,
    then the same five, then output_mask) as its GEMMs and its bias op (``_conv_bias``): a 2-D
    one as the conv2d layer gives them (``_conv``), a transposed one as the conv2d whose data
    gradient it is (``_conv_transposed``), a 1-D one (Conv1d, ConvTranspose1d) as the 2-D one it
    is with a height of 1 (``_as_2d``: torch's own convolution views it so), a 3-D one by the
    same rules a dimension more (``_conv3d``)."""
    backward = op == "convolution_backward"
    x, w = args[int(backward)], args[1 + int(backward)]
    where = f"module {owner!r}" if owner else f"the top-level module ({rec.root})"
    if x.dim() not in (3, 4, 5):
        raise CaptureError(f"{where}: only 1-D, 2-D and 3-D convolutions are captured, this "
                           f"one has {x.dim() - 2} spatial dimensions")
    at = 4 if backward else 3  # stride, padding, dilation, transposed, output_padding, groups
    stride, padding, dilation, transposed, padded, groups = args[at:at + 6]
    axes = max(x.dim() - 2, 2)
    conv = _ConvArgs(_as_axes(stride, 1, axes), _as_axes(padding, 0, axes),
                     _as_axes(dilation, 1, axes), int(groups))
    output_padding = _as_axes(padded, 0, axes)
    if transposed and any(o >= s for o, s in zip(output_padding, conv.stride)):
        # torch allows it under a larger dilation: output rows (columns) no input reaches
        raise CaptureError(f"{where}: a transposed convolution whose output padding "
                           f"{'x'.join(map(str, output_padding))} is its stride "
                           f"{'x'.join(map(str, conv.stride))} or more is not captured")
    x4, w4 = _as_2d(x), _as_2d(w)
    nhwc = _channels_last(x4) or _channels_last(w4)
    mask = tuple(bool(m) for m in args[10]) if backward else None
    if mask is None:
        rec.nchw_convs += _nchw_16bit(x4, w4)
        rec.conv_nhwc = nhwc
        if nhwc and x.dim() == 5 and not transposed and conv.groups > 1 and w.shape[1] == 1:
            rec.channels_last_depthwise[owner or rec.root] = None
        _weight_kind(w, rec)  # its filters are a matrix of the step, as conv2d's
    y = _as_2d(args[0] if backward else outs[0])  # the output (its gradient backward)
    gemms = (_conv_transposed(x4, w4, y, conv, owner, mask, nhwc) if transposed
             else _conv(x4, w4, conv, owner, mask, nhwc))
    bias = bool(mask[2]) if mask is not None else args[2] is not None
    return [*gemms, *_conv_bias(y, pass_, owner, bias, nhwc)]


def _as_2d(t: Any) -> Any:
    """A 1-D convolution's tensor (N x C x L, or a weight's K x C/g x R) as the 2-D one's with a
    height of 1 (N x C x 1 x L, K x C/g x 1 x R), a view keeping its strides, as torch's own
    convolution views it (``view4d``, aten/src/ATen/native/Convolution.cpp); a 2-D one's as
    it is."""
    return t.unsqueeze(2) if t.dim() == 3 else t


def _as_axes(values: Sequence[int], height: int, axes: int) -> tuple[int, ...]:
    """A convolution's stride, padding, dilation or output padding as one value a spatial
    axis, (height, width) or (depth, height, width): a 1-D one's single value as the width,
    ``height`` the height's (1 for a stride or a dilation, 0 for a padding)."""
    given = tuple(int(v) for v in values)
    return (height, given[0]) if len(given) == 1 else given[:axes]


def _conv_layer(owner: str, w: Any, conv: _ConvArgs, c: int, h: int, width: int) -> Conv2d:
    """The conv2d layer of filters ``w`` (K x C/g x R x S) over a C x H x W map."""
    return Conv2d(owner, int(w.shape[0]), (int(w.shape[2]), int(w.shape[3])),
                  (conv.stride[0], conv.stride[1]), (conv.padding[0], conv.padding[1]),
                  (conv.dilation[0], conv.dilation[1]), conv.groups, c, h, width)


def _conv_of(owner: str, w: Any, conv: _ConvArgs, n: int, c: int,
             spatial: Sequence[int]) -> tuple[ConvGemms, tuple[int, ...]]:
    """The implicit GEMMs of filters ``w`` over a batch of ``n`` maps of ``c`` channels and
    sizes ``spatial``, and the output's sizes: a 2-D map's as the conv2d layer gives them
    (``_conv_layer``), a 3-D one's by ``_conv3d``."""
    if len(spatial) == 3:
        return _conv3d(owner, w, conv, n, c, spatial)
    layer = _conv_layer(owner, w, conv, c, spatial[0], spatial[1])
    return layer.gemms(n), (layer.p, layer.q)


def _conv3d(owner: str, w: Any, conv: _ConvArgs, n: int, c: int,
            spatial: Sequence[int]) -> tuple[ConvGemms, tuple[int, ...]]:
    """A 3-D convolution's implicit GEMMs by the conv2d layer's rules (its module docstring) a
    dimension more: input N x C x D x H x W, filters K x C/g x T x R x S, output N x K x D' x P x
    Q, each output size by the window formula (``spatial.window_out``) and each input axis's
    positions some window reads by ``conv2d.touched``: forward M = N.D'.P.Q, N = K / g, K =
    C / g . T.R.S; the data gradient M = N.D'.P.Q, N = C / g, K = K / g . T.R.S; the weight
    gradient M = C / g . T.R.S, N = K / g, K = N.D'.P.Q, g of each; tensors X as read, W, Y
    and dX whole."""
    k = int(w.shape[0])
    kernel = [int(size) for size in w.shape[2:]]
    out = tuple(window_out(size, r, st, pad, dil) for size, r, st, pad, dil in zip(
        spatial, kernel, conv.stride, conv.padding, conv.dilation))
    read = math.prod(touched(size, r, st, pad, dil, o) for size, r, st, pad, dil, o in zip(
        spatial, kernel, conv.stride, conv.padding, conv.dilation, out))
    taps, positions = math.prod(kernel), math.prod(out)
    tensors = (n * c * read, k * (c // conv.groups) * taps, n * k * positions,
               n * c * math.prod(spatial))
    return ConvGemms(owner, n, c // conv.groups, k // conv.groups, taps, positions, conv.groups,
                     tensors, "D x P x Q", "T x R x S"), out


def _conv_gemms(gemms: ConvGemms, mask: tuple[bool, ...] | None,
                passes: tuple[str, ...] = ()) -> list[GemmShape]:
    """``gemms``' GEMMs: ``passes`` when given, else the forward (``mask`` None) or the
    gradients ``mask`` asks for (input, weight; the bias gradient is an op)."""
    if not passes:
        passes = ("forward",) if mask is None else (
            ("backward-data",) * mask[0] + ("backward-weight",) * mask[1])
    made = {"forward": gemms.forward, "backward-data": gemms.backward_data,
            "backward-weight": gemms.backward_weight}
    return [made[pass_]() for pass_ in passes]


def _conv(x: Any, w: Any, conv: _ConvArgs, owner: str, mask: tuple[bool, ...] | None,
          nhwc: bool) -> list[Item]:
    """A 2-D or 3-D convolution's GEMMs (``_conv_of``), each with the values cuDNN transposes
    around it (``_transposed``)."""
    n, c, *spatial = (int(s) for s in x.shape)
    gemms, out = _conv_of(owner, w, conv, n, c, spatial)
    moved = _transposed(x.numel(), w, conv, math.prod(out) * n * int(w.shape[0]), nhwc)
    return [i._replace(transposed=moved.get(i.pass_, 0)) for i in _conv_gemms(gemms, mask)]


def _conv_transposed(x: Any, w: Any, y: Any, conv: _ConvArgs, owner: str,
                     mask: tuple[bool, ...] | None, nhwc: bool) -> list[Item]:
    """A transposed convolution's GEMMs. With filters ``w`` (C_in x C_out/g x R x S) it maps an
    N x C_in x H x W input ``x`` onto the N x C_out x H_o x W_o output ``y`` as the data
    gradient of the conv2d of the same filters, stride, padding, dilation and groups from
    C_out channels to C_in over the H_o x W_o map (``ConvTranspose2d``'s own definition): its
    forward is that convolution's data-gradient GEMM (dY = x, dX = y), its data gradient that
    one's forward (X = dy, Y = dx) and its weight gradient that one's (the same filters). Each
    GEMM keeps that convolution's shape, tensors, layout in memory (``GemmShape.rows``) and
    cuDNN's transposes (cuDNN runs a transposed convolution as that data gradient, on the same
    kernels); its pass and its roles say the transposed convolution's. H_o = (H - 1) stride -
    2 padding + dilation (R - 1) + output_padding + 1, so the convolution's P = H + floor(
    output_padding / stride): H for an output padding below the stride (``_convolution``
    refuses any other)."""
    n, _, *spatial = (int(s) for s in x.shape)
    c_out, *spatial_out = (int(s) for s in y.shape[1:])
    gemms, out = _conv_of(owner, w, conv, n, c_out, spatial_out)
    assert out == tuple(spatial), "an output padding below the stride"
    moved = _transposed(y.numel(), w, conv, x.numel(), nhwc, transposed_conv=True)
    wanted = {new: old for old, new in TRANSPOSED_PASSES.items()}
    passes = (wanted["forward"],) if mask is None else (
        (wanted["backward-data"],) * mask[0] + (wanted["backward-weight"],) * mask[1])
    return [i._replace(pass_=TRANSPOSED_PASSES[i.pass_], rows=PASS_ROWS[i.pass_],
                       roles=cast(tuple[str, str, str],
                                  tuple(_transposed_role(r) for r in i.roles)),
                       transposed=moved.get(i.pass_, 0))
            for i in _conv_gemms(gemms, mask, passes)]


def _transposed_role(role: str) -> str:
    """A GEMM role of the conv2d (or 3-D convolution) whose data gradient a transposed one is,
    as the transposed convolution's (``TRANSPOSED_ROLES``; a 3-D one's axes alike)."""
    flat = role.replace("D x P x Q", "P x Q").replace("T x R x S", "R x S")
    if flat == role:
        return TRANSPOSED_ROLES.get(role, role)
    return TRANSPOSED_ROLES.get(flat, flat).replace("H x W", "D x H x W").replace(
        "R x S", "T x R x S")


def _transposed(x: int, w: Any, conv: _ConvArgs, y: int, nhwc: bool,
                transposed_conv: bool = False) -> dict[str, int]:
    """The values cuDNN moves between NCHW and NHWC around each GEMM of a convolution on NCHW
    (NCDHW) maps (``GemmShape.transposed``), by pass: its Tensor-Core kernels take NHWC, so it
    transposes what each GEMM reads into NHWC and what it writes back, the forward X and W in
    and Y out, the data gradient dY and W in and dX out, the weight gradient dY and X in and dW
    out; a 1 x 1 filter's W is the same in both layouts. A lent H100 (torch 2.11, cuDNN 9.19;
    benchmarks/data/h100_live_convkernels.csv) ran exactly those for ResNet-50's 3 x 3, 7 x 7
    and strided 1 x 1 convolutions and none for its 1 x 1 stride-1 ones at 28 x 28 and more
    (at 14 x 14 and 7 x 7 it transposed some of those too, left out here). A 3-D convolution
    likewise (h100_live_convs3d.csv, h100_live_video_steps.json: R3D-18's 3 x 3 x 3, 3 x 7 x 7
    and strided 1 x 1 x 1 ones, fp32 as TF32 one layer at a time, bf16 in the whole network;
    some forwards there wrote Y in NCDHW from the kernel itself, so Y's share is an upper
    bound); a 1 x 1 x 1 stride-1 one, which R3D-18 has not, as a 2-D one. ``x`` and ``y``: the
    input's and the output's values. None (an empty dict) where the maps are channels last
    (``nhwc``) and for a 1 x 1 stride-1 convolution; whether the GEMM runs on Tensor Cores is
    the device's business (``analysis.gpu_layout.transpose_s``).

    A grouped 3-D convolution (``conv.groups`` > 1) by the same rule where that H100 timed one
    (h100_live_convs_align.csv, ``bench_gpu_convs_align.py``: 3 x 3 x 3, stride 1, 8 groups of
    24 channels and 32 of 4 over 8 x 16 x 28 x 28 maps): wherever cuDNN ran a grouped GEMM on
    an NHWC Tensor-Core kernel it transposed exactly the rule's operands (9 of the 12 GEMMs),
    fp32 (TF32) 124 and 75 us forward, 246 and 77 backward, against 105, 70, 210 and 140 by the
    rule (``gpu_layout``); bf16 backward 245 and 103 against 180 and 120. None for a 16-bit
    forward (fp16, not timed, as bf16): cuDNN ran both bf16 forwards on CUDA cores over NCDHW
    directly (22x and 42x their GEMM's prediction), no transposes. Chosen on those rows (in
    sample), and one of them contradicts it: the 32 groups' fp32 data gradient also ran on CUDA
    cores (3.8 ms), so that backward moved the weight gradient's 77 us where the rule counts
    140. None for a depthwise
    convolution (a group's input channels 1: torch's own ``conv_depthwise3d`` kernels, no
    transposes, timed) and, never timed, for a grouped 1 x 1 x 1 one, a grouped 1-D or 2-D one
    and a grouped transposed one (``transposed_conv``); a strided grouped one, not timed either,
    is taken as the dense rule takes it."""
    taps = math.prod(int(size) for size in w.shape[2:])
    if nhwc or (taps == 1 and all(st == 1 for st in conv.stride)):
        return {}
    ws = w.numel() if taps > 1 else 0
    moved = {"forward": x + ws + y, "backward-data": y + ws + x, "backward-weight": y + x + ws}
    if conv.groups == 1:
        return moved
    if transposed_conv or w.dim() != 5 or int(w.shape[1]) == 1 or taps == 1:
        return {}  # grouped, and not as that H100 timed it (docstring)
    if w.element_size() == 2:
        del moved["forward"]  # a 16-bit grouped forward ran on CUDA cores over NCDHW
    return moved


def _conv_bias(out: Any, pass_: str, owner: str, bias: bool,
               nhwc: bool = False) -> list[Item]:
    """A convolution's bias, the op a conv2d layer's ``bias: true`` gives after its GEMM
    (``model.ops.bias_activation``): forward the add over ``out`` (``bias``: the convolution has
    one), backward the sum of ``out``, the output gradient, per channel (``bias``: its gradient
    is asked for; ``_conv_bias_sums``). Both run inside the one ``convolution`` /
    ``convolution_backward`` op a capture sees; which device runs the add as a kernel of its
    own is ``analysis``'s business (``follows`` "conv")."""
    if not bias:
        return []
    if pass_ == "forward":
        return [_bias_op(owner, pass_, "bias", out.numel(), out.shape[1], "conv")]
    return [_bias_op(owner, pass_, "bias-backward", out.numel(), out.shape[1], "conv",
                     _conv_bias_sums(out, nhwc))]


def _conv_bias_sums(grad: Any, nhwc: bool) -> SumShape | None:
    """What torch sums a 2-D convolution's bias gradient as (``grad.sum((0, 2, 3))``, as its
    ``convolution_backward`` does) over an output gradient of N x C x H x W: in channels_last
    (``nhwc``, the convolution's operands laid out so) N H W rows of C adjacent channels, else
    as ``_channel_sums``."""
    if grad.dim() not in (4, 5) or grad.numel() == 0:
        return None
    n, c, *spatial = (int(d) for d in grad.shape)
    h, w = math.prod(spatial[:-1]), spatial[-1]  # a 3-D map's depth and height as one
    return SumShape(n * h * w, c) if nhwc else _channel_sums((n, c, h, w))


def _nchw_16bit(x: Any, w: Any) -> bool:
    """Whether a 16-bit 2-D or 3-D convolution runs in NCHW (NCDHW): torch's CUDA convolution
    runs channels last when its input or its weight is (``cudnn_conv_suggest_memory_format``,
    aten/src/ATen/native/ConvUtils.h), so NCHW when neither is: the input's strides and the
    weight's, as torch reads them (``_channels_last``; the meta device's convolution outputs are
    laid out as torch's, ``capture._laid_out``)."""
    import torch

    return (x.dim() in (4, 5) and x.dtype in (torch.float16, torch.bfloat16)
            and not _channels_last(x) and not _channels_last(w))


def _channels_last(t: Any) -> bool:
    """Whether torch takes a 4-D (5-D) tensor for channels last (NHWC, NDHWC), as its
    ``suggest_memory_format`` does (c10's ``is_channels_last_strides_2d`` / ``_3d``): walking
    the channels, then the axes from the last to the first, then the batch, no stride is less
    than the span of those before it (a size-1 axis spans nothing), and the channels' stride is
    not the batch's. So a depthwise filter (K x 1 x T x R x S) in channels_last_3d is channels
    last by its channels' stride of 1 where NCDHW gives it T.R.S, though its one channel makes
    both layouts contiguous; a 1 x 1 filter's NCHW strides are not."""
    if t.dim() not in (4, 5) or t.stride(1) == 0:
        return False
    span = 0
    for axis in (1, *range(t.dim() - 1, 1, -1), 0):
        if t.shape[axis] == 0 or t.stride(axis) < span:
            return False
        if axis == 0 and span == t.stride(1):
            return False
        span = t.stride(axis) * (t.shape[axis] if t.shape[axis] > 1 else 1)
    return True
