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
are the same, its parameters are not counted twice, and its GEMMs read that layer's table as it
is stored, at the model's dtype (``b_operand`` ``"tied"``: a weight format, int4 or fp8, does not
apply to an embedding, so a tied output layer is not quantized).

Sparse and sampled (SLIDE-style) layers: ``input_nnz: z`` says each sample's input is sparse
with z nonzeros (CSR rows: a value and an int32 column index each); ``active_out: a`` says only
a outputs per sample are computed (SLIDE's hash tables select them; their int32 ids are read).
Either one makes the layer a sparse-times-dense product instead of a GEMM, one op per pass
(``sparse-linear``), with z = in and a = out where not given and w = min(T z a, in x out) the
weight elements touched (each sample's z rows restricted to its a outputs; at most the whole
matrix):

- forward         FLOPs 2 T z a; reads the nonzeros (T z (e + 4) bytes; dense: T in e), the
                  touched weights (w e) and the active ids (T a 4), writes Y (T a e)
- backward-data   (only when an earlier layer has weights) dX at the nonzero positions:
                  FLOPs 2 T z a; reads dY (T a e), the ids, the touched weights; writes T z e
                  (and reads the input's indices)
- backward-weight dW on the touched weights: FLOPs 2 T z a; reads X as in the forward, dY and
                  the ids; writes w e

Bias and activation ops run over T x a values. CSR row offsets (4 bytes per sample) are left
out. Parameters stay in x out: the whole matrix is trained, a few rows at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import InputError
from ...files.fields import int_fields
from ..gemm import GemmShape
from ..ops import OpShape, bias_activation
from .step import Step

if TYPE_CHECKING:
    from ...files.fields import Fields

ACTIVATIONS = ("none", "relu", "gelu", "silu")
_KEYS = frozenset({"type", "in", "out", "name", "bias", "activation", "tied", "repeat",
                   "input_nnz", "active_out"})
SPARSE_INDEX_BYTES = 4  # int32 column indices and output ids, as SLIDE and Snap ML store them


@dataclass(frozen=True)
class Linear:
    """A fully connected layer: ``in_features`` inputs, ``out_features`` outputs."""

    name: str
    in_features: int
    out_features: int
    bias: bool = False
    activation: str = "none"
    tied: bool = False
    input_nnz: int | None = None   # nonzeros per sample of a sparse input (None: dense)
    active_out: int | None = None  # outputs computed per sample (None: all of them)
    # the weight stored in x out (X @ W of row-major tensors) rather than out x in (PyTorch's
    # F.linear): its rows run along N in the forward (gemm.PASS_ROWS: along K); set by the
    # gemm what-if's layout, not by model.yaml
    weight_in_out: bool = False
    has_weights = True

    def __post_init__(self) -> None:  # built in Python: numpy's integers read as Python's
        int_fields(self, ("in_features", "out_features", "input_nnz", "active_out"),
                   lambda key, problem: InputError(self.name, key, problem))

    @classmethod
    def from_fields(cls, fields: Fields, index: int) -> Linear:
        fields.reject_unknown(_KEYS)
        layer = cls(name=fields.string("name", f"fc{index + 1}"),
                    in_features=fields.positive_int("in"),
                    out_features=fields.positive_int("out"),
                    bias=fields.boolean("bias", False),
                    activation=fields.choice("activation", ACTIVATIONS, "none"),
                    tied=fields.boolean("tied", False),
                    input_nnz=fields.positive_int("input_nnz", None),
                    active_out=fields.positive_int("active_out", None))
        for key, value, limit in (("input_nnz", layer.input_nnz, ("in", layer.in_features)),
                                  ("active_out", layer.active_out, ("out", layer.out_features))):
            if value is not None and value > limit[1]:
                raise fields.fail(key, f"{value} is more than {limit[0]} ({limit[1]})")
        return layer

    @property
    def sparse(self) -> bool:
        """A sparse input or sampled outputs: a sparse-times-dense product, not a GEMM."""
        return self.input_nnz is not None or self.active_out is not None

    def input_bytes(self, step: Step) -> int:
        """One step's input: T x in values, or T x nnz values and their int32 indices."""
        if self.input_nnz is None:
            return step.tokens * self.in_features * step.e
        return step.tokens * self.input_nnz * (step.e + SPARSE_INDEX_BYTES)

    def _sparse(self, step: Step) -> tuple[int, int, int, int, int]:
        """(FLOPs, X bytes, touched-weight bytes, dY or Y bytes, output-id bytes) of one pass."""
        rows, e = step.tokens, step.e
        z = self.input_nnz or self.in_features
        a = self.active_out or self.out_features
        touched = min(rows * z * a, self.in_features * self.out_features)
        ids = rows * a * SPARSE_INDEX_BYTES if self.active_out else 0
        return 2 * rows * z * a, self.input_bytes(step), touched * e, rows * a * e, ids

    @property
    def parameters(self) -> int:
        weight = 0 if self.tied else self.in_features * self.out_features
        return weight + (self.out_features if self.bias else 0)

    @property
    def matrix_parameters(self) -> int:
        """The weight matrix GEMMs read as B (none when tied: the embedding holds it)."""
        return 0 if self.tied else self.in_features * self.out_features

    def saved_bytes(self, step: Step, recompute: str) -> int:
        """Training: the input the weight gradient reads (T x in, or T x nnz values and their
        indices), and the pre-activation output when an activation follows (T x out), which
        ``full`` recomputation drops (and ``recomputed`` makes again)."""
        kept = self.input_bytes(step)
        if self.activation != "none" and recompute != "full":
            kept += self._outputs(step) * step.e
        return kept

    def recomputed(self, step: Step, recompute: str) -> tuple[bool, ...]:
        """Training: which of ``forward(step)``'s items the backward pass runs again, a flag
        per item. Under ``full`` a layer with an activation keeps no pre-activation output
        (``saved_bytes``), which its activation's gradient reads: its product (the GEMM, or
        the sparse product) and its bias add run again from the input it keeps; the
        activation does not (its output is the next layer's input, kept there, and its
        gradient reads the pre-activation values). Nothing otherwise: without an activation,
        or under ``selective`` or ``none``, what it keeps is all its backward reads."""
        if recompute != "full" or self.activation == "none" or step.phase != "train":
            return ()
        return (True,) + (True,) * self.bias + (False,)

    def live_bytes(self, step: Step) -> int:
        """Inference: the input and the output at once."""
        return self.input_bytes(step) + self._outputs(step) * step.e

    @property
    def in_width(self) -> int:
        return self.in_features

    @property
    def out_width(self) -> int:
        return self.out_features

    @property
    def _b_operand(self) -> str:
        """What its forward and data-gradient GEMMs read as B: its weight, or the table of the
        layer it is tied to (``GemmShape.b_operand``)."""
        return "tied" if self.tied else "weight"

    @property
    def _product(self) -> str:
        """What its bias follows (``ops.FOLLOWS``)."""
        return "sparse" if self.sparse else "linear"

    def _outputs(self, step: Step) -> int:
        return step.tokens * (self.active_out or self.out_features)

    def forward(self, step: Step) -> list[GemmShape | OpShape]:
        rows, f, role = step.tokens, step.per_sample, step.row_role
        items: list[GemmShape | OpShape]
        if self.sparse:
            flops, x, w, y, ids = self._sparse(step)
            items = [OpShape(self.name, "forward", "sparse-linear", flops, x + w + y + ids)]
        else:
            items = [GemmShape(self.name, "forward", rows, self.out_features, self.in_features,
                               (role, "out", "in"), (f, 0, 0), b_operand=self._b_operand,
                               rows=(2, 1, 1) if self.weight_in_out else None)]
        elements = self._outputs(step)
        return items + bias_activation(self.name, "forward", elements, step.e, self.bias,
                                       self.activation, self._product)

    def backward(self, step: Step, data_grad: bool) -> list[GemmShape | OpShape]:
        rows, f, role = step.tokens, step.per_sample, step.row_role
        elements = self._outputs(step)
        items: list[GemmShape | OpShape] = list(bias_activation(
            self.name, "backward", elements, step.e, self.bias, self.activation, self._product,
            0 if self.sparse or self.active_out else self.out_features))
        if self.sparse:
            return items + self._sparse_backward(step, data_grad)
        # stored in x out, the weight's rows run along the data gradient's K (dY W^T) and the
        # weight gradient's rows along its N
        if data_grad:
            items.append(GemmShape(self.name, "backward-data", rows, self.in_features,
                                   self.out_features, (role, "in", "out"), (f, 0, 0),
                                   b_operand=self._b_operand,
                                   rows=(2, 2, 1) if self.weight_in_out else None))
        items.append(GemmShape(self.name, "backward-weight", self.in_features, self.out_features,
                               rows, ("in", "out", role), (0, 0, f),
                               rows=(0, 1, 1) if self.weight_in_out else None))
        return items

    def _sparse_backward(self, step: Step, data_grad: bool) -> list[OpShape]:
        flops, x, w, dy, ids = self._sparse(step)
        items = []
        if data_grad:  # dX at the input's nonzero positions (all of them when dense): as
            # many bytes as X (values written, their indices read)
            items.append(OpShape(self.name, "backward", "sparse-linear-backward-data", flops,
                                 dy + ids + w + x))
        items.append(OpShape(self.name, "backward", "sparse-linear-backward-weight", flops,
                             x + dy + ids + w))
        return items
