"""The shapes a captured sum, norm or softmax keeps for its pricing on a GPU: a sum or mean
over a contiguous input's leading dimensions, its trailing ones or all but its channels, its
rows and columns (``_sum_shape``, ``ROW_SUMS``, ``_channel_sums``: ``SumShape``); a layer
norm's rows forward and its weight gradients' backward (``_layer_norm_rows``,
``_layer_norm_sums``); a softmax's row over its last dimension (``_softmax_row``,
``SOFTMAXES``: ``Op.row``); a batch norm's map and layout (``_norm_shape``, ``BATCH_NORMS``:
``NormShape``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .capture_tensors import _numel
from .ops import NormShape, SumShape

#: Reductions by their dimensions (their second argument: ``sum.dim_IntList``, ``mean.dim``; none:
#: every dimension) that torch runs through its reduce kernel, a ``SumShape`` where those are a
#: contiguous input's leading or trailing dimensions (``_sum_shape``)
ROW_SUMS = frozenset({"sum", "mean"})
#: Softmaxes and their backwards, by the position of their ``dim`` argument
#: (``_softmax(self, dim, half_to_float)``, ``_softmax_backward_data(grad_output, output, dim,
#: input_dtype)``): a ``CapturedOp`` of one over the last dimension keeps that dimension's
#: length as its ``row`` (``analysis.gpu_softmax`` prices torch's softmax kernels by it).
SOFTMAXES = {"_softmax": 1, "_log_softmax": 1, "_softmax_backward_data": 2,
             "_log_softmax_backward_data": 2}
#: batch norms (as ``_record`` names them) and the arguments (by position) holding their input
#: and their weight
BATCH_NORMS = {"native_batch_norm": (0, 1), "_native_batch_norm_legit": (0, 1),
               "_native_batch_norm_legit_no_training": (0, 1),
               "native_batch_norm_backward": (1, 2)}


def _sum_shape(op: str, args: Sequence[Any]) -> SumShape | None:
    """A sum (or mean) of a contiguous input over its leading dimensions, its rows and columns
    (``SumShape``: a Linear's bias gradient, dY of (tokens, features) summed over its tokens),
    or over its trailing ones (``SumShape.along_rows``: an RMSNorm's mean over each token's
    features; every dimension: one row), or over all but its second (each channel of an NCHW
    map, ``_channel_sums``), a layer norm backward's weight gradients' (``_layer_norm_sums``)
    and a layer norm forward's rows (``_layer_norm_rows``); None for any other op, for a sum
    over other scattered dimensions and for a strided input."""
    import torch

    if op == "native_layer_norm_backward":
        return _layer_norm_sums(args)
    if op == "native_layer_norm":  # its rows and the values it normalizes in each
        return _layer_norm_rows(args)
    if op not in ROW_SUMS or not args or not isinstance(args[0], torch.Tensor):
        return None
    x = args[0]
    dims = args[1] if len(args) > 1 and args[1] is not None else list(range(x.dim()))
    dims = [dims] if isinstance(dims, int) else dims
    if (not isinstance(dims, (list, tuple)) or x.dim() < 1 or not x.is_contiguous()
            or x.numel() == 0):
        return None
    reduced = sorted({int(d) % x.dim() for d in dims} or range(x.dim()))  # []: every one
    kept = x.dim() - len(reduced)
    if reduced == list(range(kept, x.dim())):  # trailing (or every) dimension: along rows
        columns = _numel(tuple(int(d) for d in x.shape[kept:]))
        return SumShape(x.numel() // columns, columns, along_rows=True)
    if x.dim() >= 3 and reduced == [0, *range(2, x.dim())]:  # all but the channels, as NCHW's
        return _channel_sums(tuple(int(d) for d in x.shape))
    if reduced != list(range(len(reduced))):
        return None
    rows = _numel(tuple(int(d) for d in x.shape[:len(reduced)]))
    return SumShape(rows, x.numel() // rows)


def _layer_norm_rows(args: Sequence[Any]) -> SumShape | None:
    """A layer norm forward's rows and the values of each
    (``native_layer_norm(input, normalized_shape, weight, bias, eps)``), whose rounds of loads
    set its time over a few rows on a GPU (``analysis.gpu_layer_norm.row_rounds_s``)."""
    import torch

    if len(args) < 2 or not isinstance(args[0], torch.Tensor):
        return None
    return _normalized_rows(args[0], args[1])


def _layer_norm_sums(args: Sequence[Any]) -> SumShape | None:
    """The rows and columns a layer norm backward's weight gradients sum over
    (``native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
    output_mask)``: the normalized shape's values a row), torch's gradient kernel's work
    (``analysis.gpu_layer_norm``); None where neither weight's gradient is asked for."""
    import torch

    if len(args) < 8 or not isinstance(args[1], torch.Tensor) or not any(args[7][1:]):
        return None
    return _normalized_rows(args[1], args[2])


def _normalized_rows(x: Any, normalized_shape: Sequence[int]) -> SumShape | None:
    """The rows of ``x`` a layer norm over its last ``normalized_shape`` dimensions runs and the
    values of each; None for an empty one."""
    columns = _numel(tuple(int(d) for d in normalized_shape))
    if columns == 0 or x.numel() == 0:
        return None
    return SumShape(x.numel() // columns, columns)


def _channel_sums(shape: tuple[int, ...]) -> SumShape:
    """A contiguous N x C x ... tensor summed over all but its channels: each channel's N runs of
    the rest (``SumShape.indexed``: torch computes each value's offset), or one run where N is 1,
    or N rows of C channels where the rest is 1."""
    n, c, rest = shape[0], shape[1], _numel(shape[2:])
    if rest == 1:
        return SumShape(n, c)
    return SumShape(c, n * rest, along_rows=True, indexed=n > 1)


def _softmax_row(op: str, args: Sequence[Any]) -> int:
    """The values a row of a softmax or its backward (``SOFTMAXES``) normalizes where that
    dimension is the last of its first tensor (the input; the backward's output gradient, of the
    output's shape), the rows torch's kernel runs one warp or block each; 0 for any other op or
    dimension (torch's kernel across rows is another)."""
    if op not in SOFTMAXES or len(args) <= SOFTMAXES[op] or not hasattr(args[0], "dim"):
        return 0
    x, dim = args[0], args[SOFTMAXES[op]]
    if x.dim() == 0 or dim not in (-1, x.dim() - 1):
        return 0
    return int(x.shape[-1])


def _norm_shape(op: str, args: Sequence[Any], conv_nhwc: bool) -> NormShape | None:
    """A batch norm's map (``NormShape``) where its input has three dimensions or more, with the
    layout torch picks its kernels by: channels_last where the input is laid out so (a 4-D map
    only) and not also contiguous, or where the latest convolution ran channels last
    (``conv_nhwc``: torch gives its output that layout, as it does the ops after it; the meta
    device's convolution does too since ``capture._laid_out``), and whether its weights are
    fp32 under a 16-bit input (autocast's, ``mixed``); None for any other op. A module that
    mixes layouts between a convolution and its batch norm is read by the convolution's."""
    import torch

    if op not in BATCH_NORMS or len(args) <= max(BATCH_NORMS[op]):
        return None
    x, w = (args[i] for i in BATCH_NORMS[op])
    if not isinstance(x, torch.Tensor) or x.dim() < 3 or x.shape[1] == 0:
        return None
    last = x.dim() == 4 and (conv_nhwc or (not x.is_contiguous() and x.is_contiguous(
        memory_format=torch.channels_last)))
    mixed = (isinstance(w, torch.Tensor) and w.dtype == torch.float32
             and x.dtype in (torch.float16, torch.bfloat16))
    return NormShape(int(x.shape[1]), x.numel() // int(x.shape[1]), last, mixed)
