"""Losses torch computes in several passes inside the one op a capture sees (``LOSS_PASSES``,
``LOSS_WEIGHTS``): what those passes move beyond the op's tensors read and written once, and
their FLOPs (``_loss_passes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .capture_recorder import _Recorder
from .capture_tensors import _split
from .layers.captured import CapturedOp, Item

#: Losses torch computes in several passes inside the one op a capture sees (its kernels run
#: below the dispatch mode), by op: the position of its ``reduction`` argument (0 none, 1 mean,
#: 2 sum), its FLOPs a value (each arithmetic or transcendental step 1; a reduced forward one
#: more, the reduction's add), and the values a value it moves beyond its tensors read once and
#: its output written once, by reduction (none, mean, sum). From aten/src/ATen/native/Loss.cpp
#: and cuda/Loss.cu:
#: - ``mse_loss``, ``huber_loss``, ``smooth_l1_loss``: one elementwise kernel, into a temporary
#:   when reduced, which the mean or sum reads back (2 more: ``mse_loss``'s
#:   ``TensorIterator::borrowing_binary_op(loss, ...)``, then ``apply_loss_reduction``); their
#:   backward zero-fills the gradient (``zeros_like``: 1 more), then one kernel writes it.
#: - ``binary_cross_entropy``: the kernel into a temporary, reduced as above; its backward one
#:   kernel, then ``grad_input.div_(numel)`` for a mean (2 more).
#: - ``binary_cross_entropy_with_logits``: ``log_sigmoid(input)`` (input read, written), then
#:   ``(1 - target).mul_(input).sub_(log_sigmoid_input)``: 2, 3 and 3 values a value where its
#:   tensors once are 2 (3 unreduced), so 7 more, and a mean or sum reads the loss back (2).
#:   ``log_sigmoid`` as the CUDA kernel runs it (CPU's also writes a buffer of as many values).
#: A class ``weight`` multiplies the loss in place (``loss.mul_(weight)``: 2 more, 1 FLOP);
#: ``binary_cross_entropy_with_logits``' ``pos_weight`` makes a log weight
#: (``(pos_weight - 1).mul(target).add_(1)``) and multiplies the log-sigmoid by it (7 more a
#: value, 3 FLOPs, and its own values twice more: ``_loss_passes``).
LOSS_PASSES: dict[str, tuple[int, int, tuple[int, int, int]]] = {
    "mse_loss": (2, 2, (0, 2, 2)), "huber_loss": (2, 5, (0, 2, 2)),
    "smooth_l1_loss": (2, 5, (0, 2, 2)), "binary_cross_entropy": (3, 9, (0, 2, 2)),
    "binary_cross_entropy_with_logits": (4, 8, (7, 9, 9)),
    "mse_loss_backward": (3, 3, (1, 1, 1)), "huber_loss_backward": (3, 4, (1, 1, 1)),
    "smooth_l1_loss_backward": (3, 4, (1, 1, 1)),
    "binary_cross_entropy_backward": (4, 6, (0, 2, 0)),
}
#: Where a loss of ``LOSS_PASSES`` takes its class ``weight`` and (``pos_weight``) its positive
#: class weight, by position.
LOSS_WEIGHTS = {"binary_cross_entropy": (2, None), "binary_cross_entropy_backward": (3, None),
                "binary_cross_entropy_with_logits": (2, 3)}


def _loss_passes(op: str, args: Sequence[Any], items: list[Item], rec: _Recorder) -> list[Item]:
    """``items`` (one op's) with a loss's passes beyond its tensors (``LOSS_PASSES``) added to
    its bytes, in its input's dtype, and its FLOPs; any other op's as they are."""
    import torch

    if op not in LOSS_PASSES or len(items) != 1 or not isinstance(items[0], CapturedOp):
        return items
    position, flops, extra = LOSS_PASSES[op]
    # the input (a backward's first tensor is the output gradient, a scalar when reduced); a
    # loss over scalars has no passes beyond its tensors
    x = next((a for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()
              and a.dim() > 0), None)
    if x is None:
        return items
    n = x.numel()
    reduction = args[position] if len(args) > position else 1  # the mean, torch's default
    values = extra[reduction] * n
    flops += 1 if reduction and not op.endswith("_backward") else 0
    weight, pos_weight = (args[i] if i is not None and len(args) > i else None
                          for i in LOSS_WEIGHTS.get(op, (None, None)))
    if isinstance(weight, torch.Tensor):
        values, flops = values + 2 * n, flops + 1
    if isinstance(pos_weight, torch.Tensor):
        values, flops = values + 7 * n + 2 * pos_weight.numel(), flops + 3
    item = items[0]
    elements, other = _split(x, values, rec)
    return [item._replace(elements=item.elements + elements,
                          other_bytes=item.other_bytes + other, flops=flops * n)]
