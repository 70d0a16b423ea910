"""``{type: maxpool2d | avgpool2d, kernel, stride, padding, name}``: a pooling window over each
channel, no weights, no GEMM.

Output P = floor((H + 2 padding - kernel) / stride) + 1 (Q likewise); ``stride`` defaults to
``kernel``. One op per pass, counted per output value (N.C.P.Q of them): R.S FLOPs (compares or
adds), the input map read once and the output written once. Anchor (NVIDIA, *GPU Performance
Background*, "Understanding Performance"): a 3x3 max pool with unit stride is 2.25 FLOP/B in
FP16 (9 FLOPs over 2 + 2 bytes). Backward (only when an earlier layer has weights): max pool
reads dY and the input (to find each window's maximum) and writes dX; average pool reads dY and
writes dX; R.S FLOPs per output value either way. The channels pass through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from ..ops import OpShape
from .spatial import OnMap, Shape, input_shape, pair, window_out
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "kernel", "stride", "padding", "height", "width",
                   "channels"})


_P = TypeVar("_P", bound="_Pool2d")


@dataclass(frozen=True)
class _Pool2d(OnMap):
    name: str
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int] = (0, 0)
    shape: Shape | None = None  # the input map, once the previous layer gives it
    kind = ""
    has_weights = False

    @classmethod
    def from_fields(cls: type[_P], fields: Fields, index: int) -> _P:
        fields.reject_unknown(_KEYS)
        kernel = pair(fields, "kernel", None)
        return cls(name=fields.string("name", f"pool{index + 1}"), kernel=kernel,
                   stride=pair(fields, "stride", kernel) if fields.has("stride") else kernel,
                   padding=pair(fields, "padding", 0, minimum=0))

    def with_input(self: _P, given: Shape | None, fields: Fields) -> _P:
        shape = input_shape(fields, given, self.name, fields.positive_int("channels", None))
        bound = replace(self, shape=shape)
        if bound.out_shape.height < 1 or bound.out_shape.width < 1:
            raise fields.fail("kernel", f"{self.name!r}: kernel {self.kernel[0]}x"
                                        f"{self.kernel[1]} exceeds the padded input "
                                        f"{shape.height + 2 * self.padding[0]}x"
                                        f"{shape.width + 2 * self.padding[1]}")
        return bound

    @property
    def out_shape(self) -> Shape:
        (r, s), (sh, sw), (ph, pw) = self.kernel, self.stride, self.padding
        return Shape(self.map.channels, window_out(self.map.height, r, sh, ph),
                     window_out(self.map.width, s, sw, pw))

    parameters = 0

    def input_bytes(self, step: Step) -> int:
        return step.batch * self.map.elements * step.e

    def _sizes(self, step: Step) -> tuple[int, int, int]:
        """(input values, output values, FLOPs) of one pass."""
        outputs = step.batch * self.out_shape.elements
        return step.batch * self.map.elements, outputs, outputs * self.kernel[0] * self.kernel[1]

    def forward(self, step: Step) -> list[OpShape]:
        inputs, outputs, flops = self._sizes(step)
        return [OpShape(self.name, "forward", self.kind, flops, (inputs + outputs) * step.e)]

    def backward(self, step: Step, data_grad: bool) -> list[OpShape]:
        if not data_grad:
            return []
        inputs, outputs, flops = self._sizes(step)
        reads = outputs + (inputs if self.kind == "maxpool2d" else 0)  # dY (+ X for the argmax)
        return [OpShape(self.name, "backward", f"{self.kind}-backward", flops,
                        (reads + inputs) * step.e)]


class MaxPool2d(_Pool2d):
    kind = "maxpool2d"


class AvgPool2d(_Pool2d):
    kind = "avgpool2d"
