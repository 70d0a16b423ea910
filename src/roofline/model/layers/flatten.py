"""``{type: flatten, name}``: a feature map C x H x W read as C.H.W features (a view: no op, no
weights), so that a ``linear`` can follow a convolution or a pooling layer; its ``in`` must
equal C.H.W."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .spatial import OnMap, Shape, input_shape
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "channels", "height", "width"})


@dataclass(frozen=True)
class Flatten(OnMap):
    name: str
    shape: Shape | None = None
    has_weights = False
    parameters = 0

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Flatten:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"flatten{index + 1}"))

    def with_input(self, given: Shape | None, fields: Fields) -> Flatten:
        return replace(self, shape=input_shape(fields, given, self.name,
                                               fields.positive_int("channels", None)))

    @property
    def out_width(self) -> int | None:
        return self.shape.elements if self.shape else None

    out_shape = None  # what follows reads features, not a map

    def input_bytes(self, step: Step) -> int:
        return step.batch * self.map.elements * step.e

    def saved_bytes(self, step: Step, recompute: str) -> int:
        return 0  # a view of the previous layer's map: nothing of its own

    def live_bytes(self, step: Step) -> int:
        return 0

    def forward(self, step: Step) -> list:
        return []

    def backward(self, step: Step, data_grad: bool) -> list:
        return []
