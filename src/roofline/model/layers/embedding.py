"""``{type: embedding, vocab, dim, positions, types, name}``: a lookup table, no GEMM.

Input: the token ids, T int64 values (``INDEX_BYTES``: what torch's embedding takes and a
tokenizer returns), and as many token-type ids when there is a token-type table (BERT's
tokenizer hands ``token_type_ids`` in beside ``input_ids``); position ids are made on the
device (``arange``), never read from the host. This is the step's input (``--stream-input``)
when the model starts with an embedding. Memory counts none of it (``saved_bytes``,
``live_bytes``): the ids are T x 8 bytes against T x dim activations per layer.

Forward: a gather of T rows of ``dim`` values (T tokens; read the rows and the int64 token
ids, write the activations); learned position (``positions``) and token-type (``types``) tables
add a gather and an add each. Backward (training): a scatter-add of the T gradient rows into
the table's gradient (read dY, read and write the touched rows). Parameters: (vocab +
positions + types) x dim. It has weights, so every layer after it computes its data gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ops import INDEX_BYTES, OpShape, elementwise
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

_KEYS = frozenset({"type", "name", "vocab", "dim", "positions", "types"})


@dataclass(frozen=True)
class Embedding:
    name: str
    vocab: int
    dim: int
    positions: int = 0
    types: int = 0
    has_weights = True

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Embedding:
        fields.reject_unknown(_KEYS)
        return cls(name=fields.string("name", f"embed{index + 1}"),
                   vocab=fields.positive_int("vocab"), dim=fields.positive_int("dim"),
                   positions=fields.positive_int("positions", 0),
                   types=fields.positive_int("types", 0))

    @property
    def parameters(self) -> int:
        return (self.vocab + self.positions + self.types) * self.dim

    @property
    def in_width(self) -> None:
        return None  # token ids, not a feature width

    @property
    def out_width(self) -> int:
        return self.dim

    def input_bytes(self, step: Step) -> int:
        """The ids one step reads: T token ids, and T token-type ids with a token-type table,
        int64 each (the module docstring)."""
        return step.tokens * INDEX_BYTES * (1 + (self.types > 0))

    def saved_bytes(self, step: Step, recompute: str) -> int:
        """Training: nothing counted (the ids its scatter-add reads are left out, the module
        docstring)."""
        return 0

    def live_bytes(self, step: Step) -> int:
        """Inference: its output, T x dim (the ids left out)."""
        return step.tokens * self.dim * step.e

    @property
    def tables(self) -> int:
        return 1 + (self.positions > 0) + (self.types > 0)

    def forward(self, step: Step) -> list[OpShape]:
        rows = step.tokens * self.dim
        gather = OpShape(self.name, "forward", "embedding-gather", 0,
                         self.tables * (2 * rows * step.e + step.tokens * INDEX_BYTES))
        adds = [elementwise(self.name, "forward", "residual", rows, step.e)] * (self.tables - 1)
        return [gather, *adds]

    def backward(self, step: Step, data_grad: bool) -> list[OpShape]:
        rows = step.tokens * self.dim
        # per table: read dY, read and write the touched gradient rows; one add per value
        nbytes = self.tables * (3 * rows * step.e + step.tokens * INDEX_BYTES)
        return [OpShape(self.name, "backward", "embedding-scatter-add", self.tables * rows,
                        nbytes)]
