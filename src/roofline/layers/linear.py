"""``{type: linear, in, out, name}``: a fully connected layer, Y = X . W.

GEMMs with batch B (M x N x K, C(M, N) = A(M, K) . B(K, N)):

- forward          Y  = X . W        M = B,   N = out, K = in
- backward-data    dX = dY . W^T     M = B,   N = in,  K = out   (only when an earlier layer
                                                                   has weights)
- backward-weight  dW = X^T . dY     M = in,  N = out, K = B
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..gemm import GemmShape

if TYPE_CHECKING:
    from ..fields import Fields

_KEYS = frozenset({"type", "in", "out", "name"})


@dataclass(frozen=True)
class Linear:
    """A fully connected layer: ``in_features`` inputs, ``out_features`` outputs."""

    name: str
    in_features: int
    out_features: int
    has_weights = True

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Linear:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"fc{index + 1}"),
                   in_features=fields.positive_int("in"),
                   out_features=fields.positive_int("out"))

    def forward(self, batch: int) -> list[GemmShape]:
        return [GemmShape(self.name, "forward", batch, self.out_features, self.in_features,
                          ("batch", "out", "in"), (1, 0, 0))]

    def backward(self, batch: int, data_grad: bool) -> list[GemmShape]:
        weight = GemmShape(self.name, "backward-weight", self.in_features, self.out_features,
                           batch, ("in", "out", "batch"), (0, 0, 1))
        if not data_grad:
            return [weight]
        data = GemmShape(self.name, "backward-data", batch, self.in_features, self.out_features,
                         ("batch", "in", "out"), (1, 0, 0))
        return [data, weight]
