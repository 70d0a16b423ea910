"""``{type: batchnorm, activation, branch, name}``: batch normalization over a feature map (a
CNN's BatchNorm2d), N.C.H.W values with C channels from the previous layer.

Training: the forward reads x and writes y, and saves the batch's mean and inverse deviation
(2 C fp32 values, for the backward); the backward reads dY, x and the saved statistics and
writes dX (the 2 C parameter gradients are negligible and left out). Per value, as ``ops``
counts a layernorm: 8 FLOPs forward, 12 backward. Compulsory traffic: x read once (a kernel
that cannot keep the map in cache reads it twice, for the statistics and to normalize). On a
GPU both ops run the channels-last batch-norm kernels (``NormShape``: the layout the
convolutions' GEMMs are priced in; ``analysis.gpu_batch_norm``).

Inference: folded. With fixed statistics batch norm is an affine map per channel, which
inference engines fold into the preceding convolution (scale into its weights, shift into a
bias applied in the GEMM's epilogue): no op, no bytes. The parameters (2 C: scale and shift) are
counted either way. ``activation`` (relu, gelu, silu) adds the activation after the norm, and
its gradient, over the same N.C.H.W values (in inference as well: it is not folded).
``branch: true`` normalizes the side branch just before it (a projection shortcut's output)
and leaves the chain where it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..ops import NormShape, OpShape, elementwise
from .linear import ACTIVATIONS
from .spatial import OnMap, Shape
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "activation", "branch", "repeat"})
STAT_BYTES = 4  # the saved mean and inverse deviation are fp32, one of each per channel


@dataclass(frozen=True)
class BatchNorm(OnMap):
    name: str
    activation: str = "none"
    branch: bool = False
    shape: Shape | None = None  # the map it normalizes, once the previous layer gives it
    has_weights = True

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> BatchNorm:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"bn{index + 1}"),
                   activation=fields.choice("activation", ACTIVATIONS, "none"),
                   branch=fields.boolean("branch", False))

    def with_input(self, given: Shape | None, fields: Fields) -> BatchNorm:
        if given is None:
            raise fields.fail("type", f"{self.name!r} normalizes a feature map: put it after "
                                      f"a layer that gives one")
        return replace(self, shape=given)

    @property
    def out_shape(self) -> Shape | None:
        return self.shape

    @property
    def parameters(self) -> int:
        return 2 * self.shape.channels if self.shape else 0

    def _activation(self, pass_: str, elements: int, e: int) -> list[OpShape]:
        if self.activation == "none":
            return []
        kind = self.activation if pass_ == "forward" else f"{self.activation}-backward"
        return [elementwise(self.name, pass_, kind, elements, e)]

    def _norm(self, step: Step) -> NormShape:
        """The map as a GPU's batch-norm kernels take it (``NormShape``): channels-last, the
        layout the convolutions' GEMMs are priced in (no transposes), with fp32 weights under
        a 16-bit map (mixed precision's, which sends an fp16 one to cuDNN)."""
        channels = self.map.channels
        return NormShape(channels, step.batch * self.map.elements // channels,
                         channels_last=True, mixed=step.e == 2)

    def forward(self, step: Step) -> list[OpShape]:
        elements = step.batch * self.map.elements
        items = []
        if step.phase == "train":  # inference: folded into the convolution before it
            norm = elementwise(self.name, "forward", "batchnorm", elements, step.e)
            stats = 2 * self.map.channels * STAT_BYTES
            items.append(norm._replace(bytes=norm.bytes + stats, norm=self._norm(step)))
        return items + self._activation("forward", elements, step.e)

    def backward(self, step: Step, data_grad: bool) -> list[OpShape]:
        elements = step.batch * self.map.elements
        norm = elementwise(self.name, "backward", "batchnorm-backward", elements, step.e)
        stats = 2 * self.map.channels * STAT_BYTES
        return self._activation("backward", elements, step.e) + [
            norm._replace(bytes=norm.bytes + stats, norm=self._norm(step))]
