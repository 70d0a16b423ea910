"""``{type: linear, in, out, bias, activation, tied, name}``: a fully connected layer, Y = X.W.

GEMMs with T rows (the batch; batch x seq when the model has ``seq``: a linear layer acts on
every token), M x N x K with C(M, N) = A(M, K) . B(K, N):

- forward          Y  = X . W        M = T,   N = out, K = in
- backward-data    dX = dY . W^T     M = T,   N = in,  K = out   (only when an earlier layer
                                                                   has weights)
- backward-weight  dW = X^T . dY     M = in,  N = out, K = T

``bias: true`` adds a bias add (forward) and its row-sum gradient (backward); ``activation``
(relu, gelu, silu) adds the activation and its gradient, elementwise over T x out. ``tied:
true`` says the weight is another layer's (an output layer tied to the embedding): its GEMMs
are the same, its parameters are not counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..gemm import GemmShape
from ..ops import OpShape, elementwise
from .step import Step

if TYPE_CHECKING:
    from ..fields import Fields

ACTIVATIONS = ("none", "relu", "gelu", "silu")
_KEYS = frozenset({"type", "in", "out", "name", "bias", "activation", "tied", "repeat"})


@dataclass(frozen=True)
class Linear:
    """A fully connected layer: ``in_features`` inputs, ``out_features`` outputs."""

    name: str
    in_features: int
    out_features: int
    bias: bool = False
    activation: str = "none"
    tied: bool = False
    has_weights = True

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Linear:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"fc{index + 1}"),
                   in_features=fields.positive_int("in"),
                   out_features=fields.positive_int("out"),
                   bias=fields.boolean("bias", False),
                   activation=fields.choice("activation", ACTIVATIONS, "none"),
                   tied=fields.boolean("tied", False))

    @property
    def parameters(self) -> int:
        weight = 0 if self.tied else self.in_features * self.out_features
        return weight + (self.out_features if self.bias else 0)

    @property
    def in_width(self) -> int:
        return self.in_features

    @property
    def out_width(self) -> int:
        return self.out_features

    def forward(self, step: Step) -> list[GemmShape | OpShape]:
        rows, f, role = step.tokens, step.per_sample, step.row_role
        items: list[GemmShape | OpShape] = [GemmShape(
            self.name, "forward", rows, self.out_features, self.in_features, (role, "out", "in"),
            (f, 0, 0))]
        elements = rows * self.out_features
        if self.bias:
            items.append(elementwise(self.name, "forward", "bias", elements, step.e))
        if self.activation != "none":
            items.append(elementwise(self.name, "forward", self.activation, elements, step.e))
        return items

    def backward(self, step: Step, data_grad: bool) -> list[GemmShape | OpShape]:
        rows, f, role = step.tokens, step.per_sample, step.row_role
        elements = rows * self.out_features
        items: list[GemmShape | OpShape] = []
        if self.activation != "none":
            items.append(elementwise(self.name, "backward", f"{self.activation}-backward",
                                     elements, step.e))
        if self.bias:
            items.append(elementwise(self.name, "backward", "bias-backward", elements, step.e))
        if data_grad:
            items.append(GemmShape(self.name, "backward-data", rows, self.in_features,
                                   self.out_features, (role, "in", "out"), (f, 0, 0)))
        items.append(GemmShape(self.name, "backward-weight", self.in_features, self.out_features,
                               rows, ("in", "out", role), (0, 0, f)))
        return items
