"""Ops that read or write a tensor by index: a gather reads one value of its source per index,
not all of it (``GATHERS``, ``_gathered``); an in-place scatter writes (and, where it
accumulates, reads) only the values it writes (``SCATTERS``, ``_scattered``,
``_scatter_counts``), its out-of-place form copying the tensor whole first
(``FUNCTIONAL_SCATTERS``), but not a backward formula's into the zeros it just made, which
torch runs in place (``ZERO_FILLS``, ``_in_place_on_zeros``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .capture_recorder import _Recorder
from .capture_tensors import _counted, _numel, _own_dtype
from .layers.captured import CapturedOp, Item

#: Ops that read a tensor by index, one value per index, not in full: by op, the arguments (by
#: position) so read and the argument whose elements are the indices (None: one index per value
#: written, a gather's). Their FLOPs count per index too (``FLOPS_PER_ELEMENT``).
#: - ``embedding(weight, indices)``, ``index_select(self, dim, index)``, ``gather(self, dim,
#:   index)``, ``index(self, indices)`` (and ``_unsafe_index``): the source's values they return,
#:   as torch's kernels walk the output and read the source at each index
#:   (aten/src/ATen/native/cuda/Indexing.cu, ``indexSelectLargeIndex``: one source value per
#:   output value; cuda/ScatterGatherKernel.cu, ``cuda_scatter_gather_base_kernel``: an
#:   iterator over the index, the source restrided to its shape; TensorAdvancedIndexing.cpp,
#:   ``index``: the source restrided to the result's shape, stride 0 along the indexed
#:   dimensions). ``log_softmax(x).gather(-1, labels)``, a per-token log-probability, reads N
#:   values of the N x V, not all of them.
#: - ``nll_loss_forward(self, target, weight, ...)`` (``nll_loss2d_forward`` for a 4-D input,
#:   and a 3-D one viewed so): per target, one value of ``self`` (the log-probabilities) at the
#:   target class and, given one, the class weight there; ``total_weight`` and the loss (a
#:   scalar, or one per target with reduction none) written (aten/src/ATen/native/cuda/Loss.cu,
#:   ``nll_loss_forward_reduce_cuda_kernel_2d``: ``input[i * ndim + t]``, ``weights[t]``;
#:   NLLLoss2d.cu, LossNLL.cpp, LossNLL2d.cpp alike).
#: - ``nll_loss_backward(grad_output, self, target, weight, ...)`` (and ``nll_loss2d_backward``):
#:   the class weight at each target (``self`` is shape-only: ``SHAPE_ONLY_ARGS``).
GATHERS: dict[str, tuple[tuple[int, ...], int | None]] = {
    **{name: ((0,), None) for name in ("embedding", "index_select", "gather", "index",
                                       "_unsafe_index")},
    "nll_loss_forward": ((0, 2), 1), "nll_loss2d_forward": ((0, 2), 1),
    "nll_loss_backward": ((3,), 2), "nll_loss2d_backward": ((3,), 2),
}
#: In-place ops that write a tensor by index (``self``, their first argument), touching only the
#: values they write, not all of it: torch iterates over the values written, the source (and
#: index) restrided to that shape, ``self`` restrided to it with stride 0 along the indexed
#: dimension (aten/src/ATen/native/TensorAdvancedIndexing.cpp: ``index_copy_`` through
#: ``index_copy_stub``, ``index_put_`` "element-wise over the broadcasted and restrided result,
#: x, ind_1, ind_2", ``scatter_`` and ``scatter_add_`` through ``scatter_stub``: cuda/
#: ScatterGatherKernel.cu, an iterator over the index; ``index_add_``, ``index_fill_`` alike).
#: So ``self`` is written once per value written (and read there too where the op accumulates:
#: ``index_add_``, ``scatter_add_``, ``scatter_reduce_``, ``scatter_`` with a reduction,
#: ``index_put_`` with accumulate, one add a value), the source read once per value written, the
#: index read once: a KV cache updated in place (Hugging Face's static cache:
#: ``keys.index_copy_(2, cache_position, key_states)``) moves the new token's keys, not the
#: cache. The out-of-place forms (``index_copy``, ``scatter``) copy ``self`` whole: counted in
#: full, as any op. By op: ``_scattered``.
SCATTERS = frozenset({"index_copy_", "index_add_", "index_fill_", "index_put_", "scatter_",
                      "scatter_add_", "scatter_reduce_"})
#: The out-of-place forms of ``SCATTERS``, by the in-place op they run after copying ``self``
#: (``index_put``: its ``self.clone().index_put_``, TensorAdvancedIndexing.cpp): ``self`` read
#: and written whole, then the values written as ``SCATTERS`` counts them; a backward formula's
#: on the zeros it just made runs in place on a device, so there without the copy
#: (``_in_place_on_zeros``).
FUNCTIONAL_SCATTERS = {name.rstrip("_"): name for name in SCATTERS}
#: Ops that make a tensor of zeros (their output a backward formula may scatter into).
ZERO_FILLS = frozenset({"zeros", "new_zeros", "zeros_like"})


def _gathered(op: str, args: Sequence[Any], outs: list[Any]) -> tuple[list[Any], int] | None:
    """The tensors ``op`` reads by index (``GATHERS``; an optional one not given left out) and
    how many indices it reads them by; None for an op that reads none so."""
    import torch

    if op not in GATHERS or not outs:
        return None
    positions, by = GATHERS[op]
    sources = [args[i] for i in positions if i < len(args) and isinstance(args[i], torch.Tensor)]
    indices = outs[0] if by is None else args[by]
    return sources, int(indices.numel())


def _scattered(op: str, args: Sequence[Any], kwargs: dict[str, Any], pass_: str, owner: str,
               rec: _Recorder) -> list[Item] | None:
    """An op that writes ``self`` by index (``SCATTERS``) as the values it writes: ``self`` at
    each (read there too where it accumulates; each of its values at most once, as the
    compulsory traffic of indices that repeat), the source's values there, the index once; an
    out-of-place form (``FUNCTIONAL_SCATTERS``) copies ``self`` whole first, read and written,
    but not in a backward on a tensor the step just zero-filled, which torch runs in place
    (``_in_place_on_zeros``). None for any other op, and where the count of values written
    depends on values (a boolean mask in ``index_put_``: ``_op`` then counts ``self`` in full, an
    upper bound)."""
    form = FUNCTIONAL_SCATTERS.get(op, op)
    counted = _scatter_counts(form, args, kwargs) if form in SCATTERS else None
    if counted is None:
        return None
    written, sources, accumulate = counted
    self = args[0]
    kind, copied = op, self.numel()
    if form == op or _in_place_on_zeros(rec, self, pass_):
        kind, copied = form, 0
    touched = min(written, self.numel()) * (2 if accumulate else 1) + 2 * copied
    elements, other = _counted([*sources, (self, touched)], rec)
    return [CapturedOp(owner, pass_, f"aten.{kind}", written if accumulate else 0, elements,
                       other, dtype=_own_dtype([self], rec.dtype))]


def _scatter_counts(op: str, args: Sequence[Any], kwargs: dict[str, Any]
                    ) -> tuple[int, list[tuple[Any, int]], bool] | None:
    """For an in-place op of ``SCATTERS``: the values it writes, the tensors it reads (the
    indices once, the source once per value written, at most its own values) with how many of
    their values, and whether it accumulates; None for ``index_put_`` with a boolean mask."""
    import torch

    self = args[0]
    if op == "index_put_":  # (self, indices, values, accumulate=False)
        indices = list(args[1])
        if any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in indices):
            return None
        # the indexed dimensions give way to the indices' broadcast shape (NumPy's rule)
        shape = torch.broadcast_shapes(*(tuple(i.shape) for i in indices if i is not None))
        kept = [self.shape[d] for d in range(self.dim())
                if d >= len(indices) or indices[d] is None]
        written = _numel((*shape, *kept))
        sources = [(i, i.numel()) for i in indices if i is not None]
        values = args[2]
        accumulate = bool(args[3] if len(args) > 3 else kwargs.get("accumulate", False))
    else:  # (self, dim, index, source | value, [reduce, ...])
        index, source = args[2], args[3]
        if op in ("index_copy_", "index_add_"):  # the source's values, each at its index
            written = source.numel()
        elif op == "index_fill_":  # whole slices of self along dim, one per index
            written = index.numel() * (self.numel() // max(1, self.shape[args[1]])
                                       if self.dim() else 1)
        else:  # scatter: one value per index
            written = index.numel()
        sources, values = [(index, index.numel())], source
        accumulate = op in ("index_add_", "scatter_add_", "scatter_reduce_") or (
            op == "scatter_" and (len(args) > 4 or "reduce" in kwargs))
    if isinstance(values, torch.Tensor):
        sources.append((values, min(values.numel(), written)))
    return written, sources, accumulate


def _in_place_on_zeros(rec: _Recorder, self: Any, pass_: str) -> bool:
    """Whether an out-of-place scatter (``FUNCTIONAL_SCATTERS``) is a backward formula's, run
    into the zeros it just made: torch's formulas write there in place (``gather_backward``:
    ``grad.new_zeros(...).scatter_add_``; ``index_backward``: ``_index_put_impl_``;
    ``index_select_backward``: ``index_add_``; ``value_selecting_reduction_backward``, the
    backward of ``topk``, ``max(dim)``, ``sort``: ``scatter_``), and take the out-of-place form
    only for a tensor-subclass-like tensor, which every meta tensor is
    (aten/src/ATen/TensorSubclassLikeUtils.h, ``isTensorSubclassLike``: ``MetaBit``, and any
    tensor under a dispatch mode). A CUDA step makes no copy of the zeros."""
    return pass_ == "backward" and rec.zeroed.get(id(self)) is self
