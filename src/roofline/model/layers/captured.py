"""A module's work as PyTorch ran it (``roofline.torch.capture``): not read from model.yaml, but
recorded, GEMM by GEMM and op by op, at the batch of the example inputs.

A captured GEMM keeps its shape; its bytes follow the step's dtype like any GEMM's. A captured
op keeps its FLOPs and splits its bytes into floating-point elements of the model's dtype (which
take the step's activation element size, so ``dtype`` overrides change them) and other bytes
(integer indices, boolean masks, and values in a floating-point dtype of their own, an upcast
the model's code makes, at that dtype's size). The capture ran at one batch: a step at another
batch would need another capture, and ``forward`` says so instead of answering for a batch that
never ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ...errors import InputError
from ..gemm import GemmShape
from ..ops import AttentionShape, NormShape, OpShape, SumShape
from .step import Step


class CapturedOp(NamedTuple):
    """A non-GEMM op as recorded: ``elements`` floating-point values of the model's dtype read
    and written, plus ``other_bytes`` of integer or boolean tensors and of floating-point ones
    in another dtype; ``dtype``: the one it ran in where that is not the model's (its first
    floating-point output's, else input's), "" where it is."""

    layer: str
    pass_: str
    kind: str
    flops: int
    elements: int
    other_bytes: int
    attention: AttentionShape | None = None  # a fused attention op's shape
    follows: str = ""  # a bias add's product (OpShape's)
    strided: bool = False  # a permuted copy (OpShape's)
    row: int = 0  # a softmax's values a row (OpShape's)
    dtype: str = ""  # its own dtype, "" for the model's (OpShape's)
    norm: NormShape | None = None  # a batch norm's map (OpShape's)
    summed: SumShape | None = None  # a sum over a matrix's rows (OpShape's)

    def at(self, e: int) -> OpShape:
        return OpShape(self.layer, self.pass_, self.kind, self.flops,
                       self.elements * e + self.other_bytes, self.attention, self.follows,
                       self.strided, self.row, self.dtype, self.norm, self.summed)


Item = GemmShape | CapturedOp


@dataclass(frozen=True)
class Captured:
    """One module (``name``: its qualified name) with what it ran, in the order it ran."""

    name: str
    batch: int
    forward_items: tuple[Item, ...]
    backward_items: tuple[Item, ...]
    parameters: int
    source: str = "<torch>"
    #: of its own ``parameters``, those its step's GEMMs read as their B operand: the matrices a
    #: weight format stores (``--weights int4``), the rest (norms, biases, a table an embedding
    #: gathers from, tied to an output layer or not) at the model's dtype (``analysis.memory``)
    matrix_parameters: int = 0
    in_width = None
    out_width = None

    @property
    def has_weights(self) -> bool:
        return self.parameters > 0

    def _items(self, step: Step, items: tuple[Item, ...]) -> list[GemmShape | OpShape]:
        if step.batch != self.batch:
            raise InputError(self.source, "batch", f"captured at batch {self.batch}; a batch of "
                             f"{step.batch} needs a capture with inputs of that batch (a "
                             f"factory with a batch parameter is called with it)")
        return [item.at(step.e) if isinstance(item, CapturedOp) else item for item in items]

    def forward(self, step: Step) -> list[GemmShape | OpShape]:
        return self._items(step, self.forward_items)

    def backward(self, step: Step, data_grad: bool) -> list[GemmShape | OpShape]:
        """What autograd ran for this module (it computed the gradients torch needed: no data
        gradient where nothing before needs one, whatever ``data_grad`` says)."""
        return self._items(step, self.backward_items)
