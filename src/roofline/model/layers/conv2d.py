"""``{type: conv2d, in_channels, out_channels, kernel, stride, padding, dilation, groups, height,
width, bias, activation, branch, repeat, name}``: a 2-D convolution as an implicit GEMM.

NVIDIA's convention (*Convolutional Layers User's Guide*, "Convolution Algorithms", the
implicit-GEMM table): input N x C x H x W, filter K x C x R x S, output N x K x P x Q with
``P = floor((H + 2 pad - dilation (R - 1) - 1) / stride) + 1`` (Q likewise from W and S):

- forward          M = N.P.Q,  N = K,  K = C.R.S   A = X, B = W, C = Y
- backward-data    M = N.P.Q,  N = C,  K = K.R.S   A = dY, B = W, C = dX   (only when an
                                                   earlier layer has weights)
- backward-weight  M = C.R.S,  N = K,  K = N.P.Q   A = X, B = dY, C = dW

The data gradient is written in its scatter form (each output position's K.R.S gradient values
times the filter give the C channels of the R.S input positions it read), not cuDNN's
gather form M = N.H.W, K = K.R.S: with a stride, only 1 / (stride_h stride_w) of the R.S taps
of an input position meet an output, so the gather form counts the zero taps of a zero-dilated
dY and puts a strided data gradient at stride_h stride_w times the forward's FLOPs; its exact
K would be K.R.S / (stride_h stride_w), not an integer in general. Every input-output pair is
one multiply-add, in the forward and in either gradient, so all three passes have the same
2 N.P.Q.K.C.R.S / g FLOPs (as torch's FlopCounterMode counts them).

Bytes are the compulsory traffic of the tensors, not of the unfolded matrices (an implicit
GEMM never writes the im2col matrix; ``GemmShape.tensors``): X is N.C.H'.W' elements, W is
K.(C / g).R.S, Y and dY N.K.P.Q, dX N.C.H.W (written whole: the positions no window reads get
zeros) and dW like W. H' and W' are the rows and columns some window reads: H and W unless the
stride skips some (a 1x1 convolution with stride 2 reads a quarter of its input).

``groups`` g splits the channels into g independent convolutions, run as one batched GEMM
(batch_count = g) with C and K divided by g; a depthwise convolution is groups = C. ``kernel``,
``stride``, ``padding`` and ``dilation`` take one integer or ``[height, width]``.

Batch: M = N.P.Q grows with the batch with the factor P.Q, so batch advice works on images.
Alignment (NVIDIA: for Tensor Cores the channels C and K should be multiples of 8 in FP16; the
batch and the image size need not be): each GEMM says which dimension is channels
(K = C.R.S counts C, R.S times), and N.P.Q is never checked.

``height`` / ``width`` (and ``in_channels``) may be left out when the previous layer, or the
top-level ``input:``, gives them. ``branch: true`` marks a side branch (a ResNet projection
shortcut): it reads its own ``in_channels``, ``height`` and ``width`` (the block's input), its
output is added back, and the next layer continues from the layer before it. ``bias`` and
``activation`` add elementwise ops over N.K.P.Q values, as in ``linear``; the bias gradient sums
N.P.Q rows of K channels, a channels-last map's (``SumShape``: the layout the GEMMs are priced
in, no transposes; a GPU prices it by torch's reduce kernel, ``analysis.gpu_reduce``). Parameters:
K . (C / g) . R . S (+ K with bias).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from ..gemm import GemmShape
from ..ops import OpShape, bias_activation
from .linear import ACTIVATIONS
from .spatial import Shape, bound, input_shape, pair, window_out
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "in_channels", "out_channels", "kernel", "stride", "padding",
                   "dilation", "groups", "height", "width", "bias", "activation", "branch",
                   "repeat"})


@dataclass(frozen=True)
class Conv2d:
    name: str
    out_channels: int
    kernel: tuple[int, int]
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    in_channels: int | None = None  # None until the previous layer gives it (with_input)
    height: int | None = None
    width: int | None = None
    bias: bool = False
    activation: str = "none"
    branch: bool = False
    has_weights = True

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Conv2d:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"conv{index + 1}"),
                   out_channels=fields.positive_int("out_channels"),
                   kernel=pair(fields, "kernel", None),
                   stride=pair(fields, "stride", 1),
                   padding=pair(fields, "padding", 0, minimum=0),
                   dilation=pair(fields, "dilation", 1),
                   groups=fields.positive_int("groups", 1),
                   in_channels=fields.positive_int("in_channels", None),
                   bias=fields.boolean("bias", False),
                   activation=fields.choice("activation", ACTIVATIONS, "none"),
                   branch=fields.boolean("branch", False))

    def with_input(self, given: Shape | None, fields: Fields) -> Conv2d:
        """This layer reading ``given`` (the previous layer's map; a branch reads its own)."""
        shape = input_shape(fields, None if self.branch else given, self.name, self.in_channels)
        channels = self.in_channels or shape.channels
        for key, value in (("in_channels", channels), ("out_channels", self.out_channels)):
            if value % self.groups:
                raise fields.fail("groups", f"{self.name!r}: groups {self.groups} does not "
                                            f"divide {key} {value}")
        bound_layer = replace(self, in_channels=channels, height=shape.height, width=shape.width)
        if bound_layer.p < 1 or bound_layer.q < 1:
            (r, s), (ph, pw) = self.kernel, self.padding
            raise fields.fail("kernel", f"{self.name!r}: kernel {r}x{s} (dilation "
                                        f"{self.dilation[0]}x{self.dilation[1]}) exceeds the "
                                        f"padded input {shape.height + 2 * ph}x"
                                        f"{shape.width + 2 * pw}")
        return bound_layer

    @property
    def in_shape(self) -> Shape:
        """The map one sample gives this layer (a branch's: the residual block's fork)."""
        return Shape(self.c, self.h, self.w)

    @property
    def c(self) -> int:
        """Input channels (known once the previous layer, or the file, gives them)."""
        return bound(self.in_channels, self.name)

    @property
    def h(self) -> int:
        return bound(self.height, self.name)

    @property
    def w(self) -> int:
        return bound(self.width, self.name)

    @property
    def p(self) -> int:
        return window_out(self.h, self.kernel[0], self.stride[0], self.padding[0],
                          self.dilation[0])

    @property
    def q(self) -> int:
        return window_out(self.w, self.kernel[1], self.stride[1], self.padding[1],
                          self.dilation[1])

    @property
    def out_shape(self) -> Shape:
        return Shape(self.out_channels, self.p, self.q)

    @property
    def in_width(self) -> int | None:
        return self.in_channels

    @property
    def out_width(self) -> int:
        return self.out_channels

    @property
    def parameters(self) -> int:
        r, s = self.kernel
        weight = self.out_channels * (self.c // self.groups) * r * s
        return weight + (self.out_channels if self.bias else 0)

    @property
    def matrix_parameters(self) -> int:
        """The filter, K x (C / g) x R x S: the GEMMs' B operand."""
        return self.parameters - (self.out_channels if self.bias else 0)

    def input_bytes(self, step: Step) -> int:
        """The input map of one step: N . C . H . W elements."""
        return step.batch * self.c * self.h * self.w * step.e

    def _dims(self) -> tuple[int, int, int, int]:
        """(C / g, K / g, R . S, P . Q)."""
        r, s = self.kernel
        return (self.c // self.groups, self.out_channels // self.groups, r * s,
                self.p * self.q)

    def _tensors(self, batch: int) -> tuple[int, int, int, int]:
        """Elements of (X as read, W, Y, dX): N.C.H'.W', K.(C / g).R.S, N.K.P.Q, N.C.H.W."""
        rows = touched(self.h, self.kernel[0], self.stride[0], self.padding[0],
                       self.dilation[0], self.p)
        cols = touched(self.w, self.kernel[1], self.stride[1], self.padding[1],
                       self.dilation[1], self.q)
        channels = batch * self.c
        return (channels * rows * cols, self.parameters - (self.out_channels if self.bias else 0),
                batch * self.out_channels * self.p * self.q, channels * self.h * self.w)

    def gemms(self, batch: int) -> ConvGemms:
        """This convolution's implicit GEMMs at ``batch``."""
        c, k, rs, pq = self._dims()
        return ConvGemms(self.name, batch, c, k, rs, pq, self.groups, self._tensors(batch))

    def forward(self, step: Step) -> list[GemmShape | OpShape]:
        elements = step.batch * self.out_channels * self.p * self.q
        return [self.gemms(step.batch).forward(), *bias_activation(
            self.name, "forward", elements, step.e, self.bias, self.activation, "conv")]

    def backward(self, step: Step, data_grad: bool) -> list[GemmShape | OpShape]:
        gemms = self.gemms(step.batch)
        elements = step.batch * self.out_channels * self.p * self.q
        # the bias gradient sums channels-last rows, the layout the GEMMs are priced in
        items: list[GemmShape | OpShape] = list(bias_activation(
            self.name, "backward", elements, step.e, self.bias, self.activation, "conv",
            self.out_channels))
        if data_grad:
            items.append(gemms.backward_data())
        items.append(gemms.backward_weight())
        return items


class ConvGemms(NamedTuple):
    """A convolution's three implicit GEMMs (the module docstring's table) from its sizes: a
    2-D one's (``Conv2d.gemms``) or a 3-D one's (``model.capture_convs``: D.P.Q output positions,
    T.R.S taps, the same rules a dimension more). ``c`` and ``k``: the input and output
    channels a group; ``taps``: R.S (T.R.S); ``positions``: P.Q (D.P.Q) a sample; ``tensors``:
    the elements of X as read, W, Y and dX."""

    layer: str
    batch: int
    c: int
    k: int
    taps: int
    positions: int
    groups: int
    tensors: tuple[int, int, int, int]
    axes: str = "P x Q"  # the output positions' axes, "D x P x Q" for a 3-D one
    kernel: str = "R x S"  # the filter's, "T x R x S"

    def forward(self) -> GemmShape:
        x, w, y, _ = self.tensors
        return GemmShape(self.layer, "forward", self.batch * self.positions, self.k,
                         self.c * self.taps, (f"batch x {self.axes}", "out_channels",
                                              f"in_channels x {self.kernel}"),
                         (self.positions, 0, 0), self.groups, (0, 1, self.taps), (x, w, y),
                         b_operand="weight")

    def backward_data(self) -> GemmShape:
        _, w, dy, dx = self.tensors
        return GemmShape(self.layer, "backward-data", self.batch * self.positions, self.c,
                         self.k * self.taps, (f"batch x {self.axes}", "in_channels",
                                              f"out_channels x {self.kernel}"),
                         (self.positions, 0, 0), self.groups, (0, 1, self.taps), (dy, w, dx),
                         b_operand="weight")

    def backward_weight(self) -> GemmShape:
        x, w, dy, _ = self.tensors
        return GemmShape(self.layer, "backward-weight", self.c * self.taps, self.k,
                         self.batch * self.positions, (f"in_channels x {self.kernel}",
                                                       "out_channels", f"batch x {self.axes}"),
                         (0, 0, self.positions), self.groups, (self.taps, 1, 0), (x, dy, w))


def touched(size: int, kernel: int, stride: int, padding: int, dilation: int, out: int) -> int:
    """How many of ``size`` input rows (or columns) some of the ``out`` windows reads.

    Tap r of window o reads ``o stride + r dilation - padding``. Taps whose offsets
    ``r dilation - padding`` agree modulo the stride read the same grid of rows, each an interval
    of ``out`` grid points; the answer is the size of the union of those intervals inside
    ``[0, size)``, found per residue without listing rows (``size`` may be large)."""
    if kernel > _MAX_TAPS:  # far beyond any real kernel: the span the windows cover, clipped
        first, last = -padding, (out - 1) * stride + (kernel - 1) * dilation - padding
        return max(0, min(last, size - 1) - max(first, 0) + 1)
    grids: dict[int, list[tuple[int, int]]] = {}
    for r in range(kernel):
        start = r * dilation - padding
        residue = start % stride
        first = (start - residue) // stride
        grids.setdefault(residue, []).append((first, first + out - 1))
    total = 0
    for residue, spans in grids.items():
        top = (size - 1 - residue) // stride  # the last grid point inside the input
        reach = -1
        for low, high in sorted(spans):
            low, high = max(low, 0, reach + 1), min(high, top)
            if high >= low:
                total += high - low + 1
                reach = high
    return total


_MAX_TAPS = 1 << 16
