"""One aten op as the GEMMs and ops it is (``_items``): a GEMM (``capture_gemms``), a
convolution (``capture_convs``), a view or free op, which moves nothing, a scatter
(``capture_indexed``), else an op of the step (``_op``), its bytes its tensors and its FLOPs
from ``capture_tables``, a copy of a source laid out unlike its output ``strided``
(``_permutes``), with the shapes its pricing reads (``capture_shapes``) and a loss's passes
(``capture_losses``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .capture_convs import _convolution
from .capture_gemms import GEMM_OPS, _gemm, _root, _tf32
from .capture_indexed import GATHERS, ZERO_FILLS, _gathered, _scattered
from .capture_losses import _loss_passes
from .capture_recorder import _Recorder
from .capture_shapes import _norm_shape, _softmax_row, _sum_shape
from .capture_tables import COPIES, FLOPS_PER_ELEMENT, FREE_OPS, REDUCTIONS, SHAPE_ONLY_ARGS
from .capture_tensors import _counted, _flatten, _own_dtype
from .layers.captured import CapturedOp, Item
from .ops import NormShape, SumShape


def _items(op: str, args: Sequence[Any], out: Any, backward: bool, owner: str,
           rec: _Recorder, kwargs: dict[str, Any] | None = None,
           view: bool = False) -> list[Item]:
    import torch

    pass_ = "backward" if backward else "forward"
    shape_only = SHAPE_ONLY_ARGS.get(op)
    gathered = GATHERS.get(op, ((), None))[0]
    read = [a for i, a in enumerate(args) if i != shape_only and i not in gathered]
    tensors = [a for a in _flatten(read) if isinstance(a, torch.Tensor)]
    outs = [o for o in _flatten(out) if isinstance(o, torch.Tensor)]
    if op in GEMM_OPS:
        return _tf32(_gemm(op, args, tensors, outs, kwargs or {}, backward, owner, rec),
                     tensors[0] if tensors else None, torch.backends.cuda.matmul.allow_tf32)
    if op in ("convolution", "convolution_backward"):
        return _tf32(_convolution(op, args, outs, pass_, owner, rec), args[op != "convolution"],
                     torch.backends.cudnn.allow_tf32)
    if op in FREE_OPS or view:
        if any(id(t) in rec.weights for t in tensors):  # a view of a weight is a weight
            rec.weights.update((id(o), o) for o in outs)
        return []
    if not outs and op.endswith("_") and args:  # in place, returning nothing (_foreach_add_):
        outs = [t for t in _flatten([args[0]]) if isinstance(t, torch.Tensor)]  # writes self
    if op == "native_batch_norm" and len(args) > 5 and args[5] is False:
        # an eval-mode batch norm scales and shifts with the running statistics, computing none:
        # named as torch's eval-only form of it, so that its cost follows from its name
        op = "_native_batch_norm_legit_no_training"
    if op in ZERO_FILLS and outs:  # a backward formula may scatter into them (``_scattered``)
        rec.zeroed[id(outs[0])] = outs[0]
    if op == "embedding" and args and id(args[0]) in rec.weights:  # a table, not a matrix
        rec.tables.add(id(_root(args[0])))
    items = (_scattered(op, args, kwargs or {}, pass_, owner, rec)
             or _op(op, tensors, outs, pass_, owner, rec, _softmax_row(op, args),
                    _gathered(op, args, outs), _norm_shape(op, args, rec.conv_nhwc),
                    _sum_shape(op, args)))
    return _loss_passes(op, args, items, rec)


def _op(op: str, tensors: list[Any], outs: list[Any], pass_: str, owner: str,
        rec: _Recorder, row: int = 0, gathered: tuple[list[Any], int] | None = None,
        norm: NormShape | None = None, summed: SumShape | None = None) -> list[Item]:
    """A non-GEMM op: its tensors' bytes (``tensors`` read in full, ``outs`` written, and
    ``gathered``'s tensors one value per index, ``_gathered``), its FLOPs from
    ``FLOPS_PER_ELEMENT`` (a ``_foreach_`` op as its elementwise op over every tensor of its
    lists); ``row``: a softmax's (``_softmax_row``); ``norm``: a batch norm's map
    (``_norm_shape``); ``summed``: a sum over rows' (``_sum_shape``). Values of the model's
    dtype are elements, which take the step's element size; any other tensor's are bytes at its
    own (``_scales``), and the op's ``dtype`` is its own where it ran in another
    (``_own_dtype``)."""
    sources, indices = gathered if gathered is not None else ([], 0)
    # every tensor in full, and a gather's sources a value per index (a table's rows it returns)
    elements, other = _counted([*((t, t.numel()) for t in [*tensors, *outs]),
                                *((t, indices) for t in sources)], rec)
    if elements == other == 0:  # empty tensors only (Llama's rotary backward makes some)
        return []
    base = op.removeprefix("_foreach_").rstrip("_")  # add_: add in place
    per = FLOPS_PER_ELEMENT.get(base)
    if per is None:
        rec.uncosted[f"aten.{op}"] = rec.uncosted.get(f"aten.{op}", 0) + 1
        per = 0
    # an op's FLOPs are per output element, a reduction's per input element (a bias gradient
    # sums every row of dY: one add a value read, not one a value written), an op that reads
    # by index per index (``GATHERS``: the loss after a log-softmax, per target)
    sizes = ([indices] if gathered is not None else
             [t.numel() for t in (tensors if base in REDUCTIONS else outs)])
    flops = per * (sum(sizes) if op.startswith("_foreach_") else max(sizes, default=0))
    strided = base in COPIES and _permutes(tensors, outs)
    return [CapturedOp(owner, pass_, f"aten.{op}", flops, elements, other, strided=strided,
                       row=row, dtype=_own_dtype([*outs, *tensors, *sources], rec.dtype),
                       norm=norm, summed=summed)]


def _permutes(tensors: list[Any], outs: list[Any]) -> bool:
    """Whether a copy reads a floating-point source laid out unlike its output: another shape
    (broadcast) or, along a dimension longer than 1, another stride (a transposed or permuted
    view copied into a contiguous tensor). Operands laid out alike are one contiguous run, as
    torch's elementwise loop sees them (its ``TensorIterator`` merges their dimensions); a
    permuted source is not (``analysis.gpu_ops``: such a copy is not a stream)."""
    if not outs:
        return False
    out = outs[0]
    for t in tensors:
        if t is out or not t.is_floating_point():
            continue
        if tuple(t.shape) != tuple(out.shape):
            return True
        if any(a != b for a, b, n in zip(t.stride(), out.stride(), out.shape) if n > 1):
            return True
    return False
