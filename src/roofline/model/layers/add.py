"""``{type: add, activation, name}``: a residual addition, y = main + shortcut, over the feature
map the previous layer gives (N.C.H.W values): a ResNet block's last layer, after its last
convolution (and batch norm) and its shortcut branch, if any (an identity shortcut is the
block's input).

Forward: op ``residual`` (reads both maps, writes y: 1 FLOP, 3 values moved per element).
Backward (only when an earlier layer has weights): the gradient passes to both paths
unchanged, and where the two paths fork (the block's input) their gradients are summed: op
``residual-backward`` (reads two, writes one), counted over the fork's map: the input of the
side branch just before (a projection shortcut's convolution, ``fork``), else the add's own
map (an identity shortcut: the block's input is the add's size). ``activation`` (the ReLU
after a ResNet block's add) adds its op and gradient over the add's map. No weights.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..ops import OpShape, elementwise
from .linear import ACTIVATIONS
from .spatial import OnMap, Shape
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "activation"})


@dataclass(frozen=True)
class Add(OnMap):
    name: str
    activation: str = "none"
    shape: Shape | None = None
    fork: Shape | None = None  # the map a projection shortcut forked from (None: identity)
    has_weights = False
    parameters = 0

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Add:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"add{index + 1}"),
                   activation=fields.choice("activation", ACTIVATIONS, "none"))

    def with_fork(self, fork: Shape | None) -> Add:
        """This add joining a shortcut that forked at ``fork`` (None: an identity shortcut)."""
        return replace(self, fork=fork)

    def with_input(self, given: Shape | None, fields: Fields) -> Add:
        if given is None:
            raise fields.fail("type", f"{self.name!r} adds feature maps: put it after a layer "
                                      f"that gives one")
        return replace(self, shape=given)

    @property
    def out_shape(self) -> Shape | None:
        return self.shape

    def forward(self, step: Step) -> list[OpShape]:
        elements = step.batch * self.map.elements
        items = [elementwise(self.name, "forward", "residual", elements, step.e)]
        if self.activation != "none":
            items.append(elementwise(self.name, "forward", self.activation, elements, step.e))
        return items

    def backward(self, step: Step, data_grad: bool) -> list[OpShape]:
        if not data_grad:
            return []
        elements = step.batch * self.map.elements
        items = []
        if self.activation != "none":
            items.append(elementwise(self.name, "backward", f"{self.activation}-backward",
                                     elements, step.e))
        fork = step.batch * (self.fork or self.map).elements
        return items + [elementwise(self.name, "backward", "residual-backward", fork, step.e)]
