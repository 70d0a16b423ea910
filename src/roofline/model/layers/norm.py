"""``{type: norm, dim, norm: layernorm|rmsnorm, name}``: a normalization on its own, such as the
final norm of a language model. An elementwise op over T x dim values (forward and backward);
parameters: dim (rmsnorm) or 2 x dim (layernorm: scale and shift)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ops import OpShape, elementwise
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "dim", "norm"})


@dataclass(frozen=True)
class Norm:
    name: str
    dim: int
    norm: str = "layernorm"
    has_weights = True

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Norm:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"norm{index + 1}"),
                   dim=fields.positive_int("dim"),
                   norm=fields.choice("norm", ("layernorm", "rmsnorm"), "layernorm"))

    @property
    def parameters(self) -> int:
        return self.dim * (2 if self.norm == "layernorm" else 1)

    @property
    def in_width(self) -> int:
        return self.dim

    out_width = in_width

    def forward(self, step: Step) -> list[OpShape]:
        return [elementwise(self.name, "forward", self.norm, step.tokens * self.dim, step.e)]

    def backward(self, step: Step, data_grad: bool) -> list[OpShape]:
        return [elementwise(self.name, "backward", f"{self.norm}-backward",
                            step.tokens * self.dim, step.e)]
