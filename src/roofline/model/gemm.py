"""A GEMM's shape and its work: FLOPs, compulsory bytes, arithmetic intensity.

Conventions (NVIDIA's, from the Matrix Multiplication Background guide):

- C(M, N) = A(M, K) . B(K, N); one multiply-add counts 2 FLOPs, so FLOPs = 2 * M * N * K
  (the 2K - 1 vs 2K difference is ignored, as every vendor peak figure does).
- Bytes are the compulsory minimum: each operand read once and C written once,
  ``e(A, B) * (M*K + K*N) + e(C) * M*N``, twice the C term when C is read as well (beta = 1,
  a weight gradient accumulated into a buffer). A and B have the GEMM's dtype; C has its own
  (``c_dtype``; by default the operands', but INT32 for INT8 and BF16 for FP8 operands).
- Intensity = FLOPs / bytes, in FLOP/B.
- A GEMM that is a view of smaller tensors states them: ``tensors`` gives the element counts
  of A, B and C the kernel really reads and writes (all ``batch_count`` GEMMs together), and
  the bytes are counted on those. An implicit-GEMM convolution never writes its unfolded
  (im2col) A matrix: it reads the input map, N.C.H.W elements, not N.P.Q x C.R.S (NVIDIA's
  *Convolutional Layers User's Guide* computes a convolution's intensity from the tensors).
  Each tensor's count is a product of the dimensions it spans, so at other dimensions (batch
  advice) it scales with its matrix: ``tensor x (new matrix / own matrix)``.

With M = batch this is the project's convention (M = batch, N = outputs, K = inputs for a
forward linear layer); NVIDIA's FC guide writes the same GEMM as M = outputs, N = batch. The
intensity is the same either way.

What each dimension *means* (batch, a layer's inputs or outputs, ...) belongs to the layer that
made the GEMM (roofline.model.layers): a Gemm carries it as ``roles`` (for messages) and
``batch_dims`` (which dimensions grow with the batch, for batch advice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple

from ..files.numbers import integer
from .dtypes import SCALE_BYTES, bits, check_dtype, default_output_dtype, itemsize

PASSES = ("forward", "backward-data", "backward-weight")
#: The dimension (0 M, 1 N, 2 K) each of A, B and C runs along in memory (its rows, contiguous),
#: by pass, in a row-major framework that stores a weight out x in (PyTorch's nn.Linear):
#: forward, y = x W^T: x's rows are K long, W^T's (W's rows) K, y's N; data gradient, dX = dY W:
#: dY's K, W's N, dX's N; weight gradient, dW = X^T dY with M = in, N = out, stored out x in:
#: X^T's M (X's rows), dY's N, dW's M. A GEMM that knows better says so (``Gemm.rows``).
PASS_ROWS: dict[str, tuple[int, int, int]] = {
    "forward": (2, 2, 1), "backward-data": (2, 1, 1), "backward-weight": (0, 1, 0)}
DIMENSIONS = "MNK"  # a rows entry's letter: 0 M, 1 N, 2 K


def rows_text(rows: tuple[int, int, int]) -> str:
    """``", rows of A, B, C along K, K, N"``: where each operand's rows run (a timing's label)."""
    return f", rows of A, B, C along {', '.join(DIMENSIONS[r] for r in rows)}"


#: ``GemmShape.b_operand`` of a weight its layer keeps at the model's dtype whatever the weight
#: format (``model.quantized``: a router vLLM builds unquantized, MLA's absorbed W_UK and W_UV,
#: a captured LM head)
UNQUANTIZED = "unquantized"
#: what B is: an activation or gradient, a weight (in the weight format, or kept at the
#: model's dtype), the KV cache, or a weight another layer stores (an output layer tied to the
#: embedding reads the embedding's table)
B_OPERANDS = ("", "weight", UNQUANTIZED, "kv", "tied")
Dims = tuple[int, int, int]


class GemmShape(NamedTuple):
    """A GEMM as a layer describes it, before the network numbers it and gives it a dtype.

    ``roles`` say what M, N and K are ("batch", "in", "out", ...); ``batch_dims`` hold, per
    dimension, the factor f when the dimension is f x batch (a linear layer's M = batch: f = 1;
    a transformer's M = batch x seq: f = seq; a mixture-of-experts expert's M = batch x seq x
    top_k / experts, a fraction), else 0. ``batch_count`` independent GEMMs of this shape run
    as one batched GEMM (attention heads, experts, convolution groups). ``align`` says, per
    dimension, what the alignment rule checks: 1 the dimension itself, u > 1 the dimension
    divided by u (a convolution's K = C.R.S is C channels, R.S times: u = R.S), 0 nothing (a
    convolution's N.P.Q: NVIDIA's channel rule leaves the batch and the image size free).
    ``tensors`` (None: the matrices themselves) are the element counts of A, B and C over all
    ``batch_count`` GEMMs, when the kernel reads and writes tensors smaller than its matrices
    (a convolution's input map, not its unfolded matrix; K and V that query heads share; a
    captured operand broadcast along the batch, one matrix for all). ``b_operand`` says what B
    is when the model may store it in its own format: ``"weight"`` (a weight matrix: forward and
    data-gradient GEMMs of a weighted layer), ``"unquantized"`` (a weight its layer keeps at the
    model's dtype whatever the weight format, ``UNQUANTIZED``), ``"kv"`` (K or V read from the
    KV cache: naive attention in decode), ``"tied"`` (a weight another layer stores: an output
    layer tied to the embedding reads its table, kept at the model's dtype whatever the weight
    format), else ``""``. ``rows`` gives the dimension each of A, B and C runs
    along in memory (0 M, 1 N, 2 K) where the pass's convention (``PASS_ROWS``) does not hold:
    attention's products, a captured GEMM's operands as their strides say. ``dtype`` and
    ``c_dtype``, where given, are the operand and output dtypes of a GEMM that runs in its own
    whatever the model's (a captured ``torch._int_mm`` or ``torch._scaled_mm``: int8 or fp8).
    """

    layer: str
    pass_: str
    m: int
    n: int
    k: int
    roles: tuple[str, str, str]
    batch_dims: tuple[float, float, float]
    batch_count: int = 1
    align: tuple[int, int, int] = (1, 1, 1)
    tensors: tuple[int, int, int] | None = None  # A, B, C elements when not the matrices
    b_operand: str = ""  # "weight" | "unquantized" | "kv" | "tied" | "": what B is
    rows: tuple[int, int, int] | None = None  # A's, B's, C's row dimension; None: PASS_ROWS
    dtype: str = ""  # a captured quantized GEMM's own operand dtype ("": the model's)
    c_dtype: str = ""  # and its output's (torch._int_mm's int32, torch._scaled_mm's out_dtype)
    #: an fp32 GEMM torch runs in TF32 where the GPU has it: a captured convolution under
    #: ``torch.backends.cudnn.allow_tf32`` (torch's default), a matmul under
    #: ``torch.backends.cuda.matmul.allow_tf32`` (not the default)
    tf32: bool = False
    #: values cuDNN moves between NCHW and NHWC around this GEMM on a GPU that runs it on Tensor
    #: Cores (each read once and written once): a captured convolution on NCHW maps but a 1 x 1
    #: stride-1 one (``model.capture_convs._transposed``); 0 for every other GEMM
    transposed: int = 0


def gemm_dims(m: object, n: object, k: object) -> tuple[int, int, int]:
    """``(m, n, k)`` as ints, each a positive integer (``files.numbers.integer``: numpy's too,
    turned into Python's, whose products do not wrap at 2**63), else ValueError naming it: the
    one check of the public functions below and of ``Gemm``."""
    dims = []
    for name, value in (("m", m), ("n", n), ("k", k)):
        number = integer(value)
        if number is None or number <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
        dims.append(number)
    return dims[0], dims[1], dims[2]


def gemm_flops(m: int, n: int, k: int) -> int:
    """FLOPs of C(m, n) = A(m, k) . B(k, n): ``2 * m * n * k`` (``gemm_dims``)."""
    return _flops(*gemm_dims(m, n, k))


def _flops(m: int, n: int, k: int) -> int:
    return 2 * m * n * k


def operand_bytes(m: int, n: int, k: int, dtype: str, c_dtype: str | None = None,
                  c_read: bool = False, b_dtype: str = "",
                  group_size: int = 0) -> tuple[int, int, int]:
    """Compulsory bytes of (A, B, C): ``e mk``, ``e kn`` and ``e_C mn`` (x2 when C is read).

    ``c_dtype`` None means ``default_output_dtype(dtype)``. ``b_dtype`` (a stored weight or
    KV format; "" means ``dtype``) sets B's bytes: ``ceil(kn bits / 8)``, plus with
    ``group_size`` g one fp16 scale per g values of each column, ``2 kn / g``.
    """
    e = itemsize(dtype)
    e_c = itemsize(c_dtype or default_output_dtype(dtype))
    b = e * k * n
    if b_dtype:
        b = -(-k * n * bits(b_dtype) // 8) + (k * n // group_size * SCALE_BYTES
                                              if group_size else 0)
    return e * m * k, b, e_c * m * n * (2 if c_read else 1)


def gemm_bytes(m: int, n: int, k: int, dtype: str, c_dtype: str | None = None,
               c_read: bool = False) -> int:
    """Compulsory traffic in bytes: A + B + C as ``operand_bytes`` counts them
    (``gemm_dims``)."""
    return sum(operand_bytes(*gemm_dims(m, n, k), dtype, c_dtype, c_read))


def gemm_intensity(m: int, n: int, k: int, dtype: str, c_dtype: str | None = None,
                   c_read: bool = False) -> float:
    """Arithmetic intensity in FLOP/B: ``2mnk / bytes`` (with one element size e and C written
    once, ``2mnk / (e (mk + kn + mn))``)."""
    return gemm_flops(m, n, k) / gemm_bytes(m, n, k, dtype, c_dtype, c_read)


@dataclass(frozen=True, slots=True)  # no per-GEMM __dict__: 300,000 of them in a deep MLP
class Gemm:
    """One GEMM of a network: its name (MM1...), the layer and pass it belongs to, and its shape."""

    name: str
    layer: str
    pass_: str
    m: int
    n: int
    k: int
    dtype: str
    roles: tuple[str, str, str] = ("M", "N", "K")
    batch_dims: tuple[float, float, float] = (0, 0, 0)
    c_dtype: str = ""  # C's dtype; "" means default_output_dtype(dtype)
    c_read: bool = False  # C read as well as written (beta = 1: accumulation into a buffer)
    batch_count: int = 1  # independent GEMMs of this shape in one batched call
    copy: int = 0  # 0, or which copy of a repeated layer (1 = the second) it belongs to
    align: tuple[int, int, int] = (1, 1, 1)  # per dimension: what alignment checks (GemmShape)
    tensors: tuple[int, int, int] | None = None  # A, B, C elements read/written (GemmShape)
    b_dtype: str = ""  # B as stored when not ``dtype`` (int4/int8/fp8 weights, an fp8 KV cache)
    group_size: int = 0  # values per fp16 scale of a group-quantized B (int4); 0: none
    b_operand: str = ""  # "weight" | "unquantized" | "kv" | "tied" | "": what B is (GemmShape),
    #                      kept from step to step
    rows: tuple[int, int, int] | None = None  # A's, B's, C's row dimension (GemmShape)
    tf32: bool = False  # fp32 that torch runs in TF32 where the GPU has it (GemmShape)
    transposed: int = 0  # values cuDNN transposes around it on Tensor Cores (GemmShape)
    # computed once in __post_init__ (a deep report reads each several times); not compared
    flops: int = field(init=False, repr=False, compare=False)
    bytes: int = field(init=False, repr=False, compare=False)
    intensity: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_dtype(self.dtype)
        if not self.c_dtype:
            object.__setattr__(self, "c_dtype", default_output_dtype(self.dtype))
        itemsize(self.c_dtype)
        if self.pass_ not in PASSES:
            raise ValueError(f"pass must be one of {PASSES}, got {self.pass_!r}")
        if any(type(v) is not int or v <= 0 for v in (self.m, self.n, self.k)):
            for dim, value in zip("mnk", gemm_dims(self.m, self.n, self.k), strict=True):
                object.__setattr__(self, dim, value)
        for name in ("batch_count", "copy", "group_size", "transposed"):  # numpy's, as above
            value = getattr(self, name)
            if type(value) is not int and integer(value) is not None:
                object.__setattr__(self, name, integer(value))
        if self.b_operand not in B_OPERANDS:
            raise ValueError(f"b_operand must be one of {B_OPERANDS}, got {self.b_operand!r}")
        if self.b_dtype == self.dtype:
            object.__setattr__(self, "b_dtype", "")
        if self.rows is not None and not (
                len(self.rows) == 3 and self.rows[0] in (0, 2) and self.rows[1] in (1, 2)
                and self.rows[2] in (0, 1)):
            raise ValueError(f"rows must be (0 or 2, 1 or 2, 0 or 1), got {self.rows!r}")
        flops = _flops(self.m, self.n, self.k) * self.batch_count
        nbytes = self.traffic((self.m, self.n, self.k))
        object.__setattr__(self, "flops", flops)
        object.__setattr__(self, "bytes", nbytes)
        object.__setattr__(self, "intensity", flops / nbytes)

    def renamed(self, name: str, layer: str, copy: int) -> Gemm:
        """This GEMM under another name, layer and copy number (a repeat's copy, or another
        layer with the same fields): every figure kept, none checked or computed again (a deep
        model builds hundreds of thousands of these)."""
        new = object.__new__(Gemm)  # one statement per field: 2.5 us where a loop takes 6
        _set(new, "name", name)
        _set(new, "layer", layer)
        _set(new, "copy", copy)
        _set(new, "pass_", self.pass_)
        _set(new, "m", self.m)
        _set(new, "n", self.n)
        _set(new, "k", self.k)
        _set(new, "dtype", self.dtype)
        _set(new, "roles", self.roles)
        _set(new, "batch_dims", self.batch_dims)
        _set(new, "c_dtype", self.c_dtype)
        _set(new, "c_read", self.c_read)
        _set(new, "batch_count", self.batch_count)
        _set(new, "align", self.align)
        _set(new, "tensors", self.tensors)
        _set(new, "b_dtype", self.b_dtype)
        _set(new, "group_size", self.group_size)
        _set(new, "b_operand", self.b_operand)
        _set(new, "rows", self.rows)
        _set(new, "tf32", self.tf32)
        _set(new, "transposed", self.transposed)
        _set(new, "flops", self.flops)
        _set(new, "bytes", self.bytes)
        _set(new, "intensity", self.intensity)
        return new

    @property
    def shape_key(self) -> tuple[object, ...]:
        """Everything its analysis depends on: every field but the name, the layer and the
        copy number (two GEMMs with one key are placed, advised and predicted alike)."""
        return _shape(self)

    def traffic(self, dims: Dims) -> int:
        """Compulsory bytes of this GEMM (its precision, its batch count, its tensors) had it
        the dimensions ``dims``."""
        return sum(self._operand_bytes(dims))

    @property
    def operand_rows(self) -> tuple[int, int, int]:
        """The dimension (0 M, 1 N, 2 K) each of A, B and C runs along in memory: ``rows``, else
        the pass's (``PASS_ROWS``)."""
        return self.rows or PASS_ROWS[self.pass_]

    @property
    def kept_operands(self) -> dict[str, int]:
        """The bytes of each operand that is state a step keeps from one use to the next, not a
        tensor it just produced: B when it is a weight or the KV cache (``b_operand``); C of a
        weight gradient (the gradient, kept until the update). (The activation a weight
        gradient reads and attention's saved tensors in the backward pass are not counted: see
        ``analysis.residency``.)"""
        if self.b_operand:
            return {"b": self.bytes_by_operand["b"]}
        if self.pass_ == "backward-weight":
            return {"c": self.bytes_by_operand["c"]}
        return {}

    @property
    def kept_bytes(self) -> int:
        """``kept_operands``' bytes in all."""
        return sum(self.kept_operands.values())

    @property
    def stored_b(self) -> str:
        """B's dtype as stored: ``b_dtype``, else the GEMM's ``dtype``."""
        return self.b_dtype or self.dtype

    def dequant_flops_at(self, dims: Dims) -> int:
        """FLOPs turning a stored B (``b_dtype``) into the math dtype: 2 per element (convert
        and scale), once per element of B as stored, k x n x ``batch_count``, or B's tensor
        where the GEMMs share it (``tensors``: naive attention's K and V, one KV head for a
        group of query heads, dequantized once as flash attention's op counts them, not once
        per query head); 0 for a plain GEMM."""
        if not self.b_dtype:
            return 0
        elements = dims[1] * dims[2] * self.batch_count
        if self.tensors is not None:  # the tensor scales with its matrix, as its bytes do
            own = self.n * self.k * self.batch_count
            elements = (self.tensors[1] * elements + own // 2) // own
        return 2 * elements

    @property
    def dequant_flops(self) -> int:
        return self.dequant_flops_at((self.m, self.n, self.k))

    @property
    def work(self) -> int:
        """The FLOPs the roof places it by: its own and, for a stored B narrower than the
        math, B's dequantization (``dequant_flops``); its ``flops`` for a plain GEMM."""
        return self.flops + self.dequant_flops

    @property
    def work_intensity(self) -> float:
        """``work`` over its bytes: where the roof places it (``intensity``, the FLOP/B
        column, counts its FLOPs alone)."""
        return self.work / self.bytes

    def _operand_bytes(self, dims: Dims) -> tuple[int, int, int]:
        m, n, k = dims
        a, b, c = operand_bytes(m, n, k, self.dtype, self.c_dtype, self.c_read, self.b_dtype,
                                self.group_size)
        count = self.batch_count
        if self.tensors is None:
            return a * count, b * count, c * count
        # each tensor scales with its matrix: tensor x new matrix / own matrix (exact at dims)
        own = operand_bytes(self.m, self.n, self.k, self.dtype, self.c_dtype, self.c_read)
        per = (itemsize(self.dtype), itemsize(self.dtype),
               itemsize(self.c_dtype) * (2 if self.c_read else 1))
        scaled = [(t * e * new + mine // 2) // mine
                  for t, e, new, mine in zip(self.tensors, per, (a, b, c), own)]
        if self.b_dtype:  # B stored narrower: its tensor's elements at B's own bytes per element
            elements = self.k * self.n
            scaled[1] = (self.tensors[1] * b + elements // 2) // elements
        return scaled[0], scaled[1], scaled[2]

    @property
    def bytes_by_operand(self) -> dict[str, int]:
        a, b, c = self._operand_bytes((self.m, self.n, self.k))
        return {"a": a, "b": b, "c": c}

    def dims_at_batch(self, batch: int) -> Dims:
        """(M, N, K) had the step run with ``batch``: each batch dimension becomes f x batch."""
        m, n, k = (math.ceil(f * batch) if f else d
                   for d, f in zip((self.m, self.n, self.k), self.batch_dims))
        return m, n, k


_set = object.__setattr__
_shape = attrgetter(*(slot for slot in Gemm.__slots__
                      if slot not in ("name", "layer", "copy", "flops", "bytes", "intensity")))
