"""Tensor-Core alignment of a GEMM's dimensions, in tiers.

NVIDIA, Matrix Multiplication Background guide, Table 1: GEMM dimensions should be multiples
of 16 bytes of the dtype (FP16: 8 elements) to use Tensor Cores efficiently (a hard requirement
before cuBLAS 11.0, and for FP8 always), and on A100 and later multiples of 128 bytes (FP16: 64)
run best. The multiples come from the hardware entry's ``alignment`` section.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..hardware.spec import Alignment
from ..model.dtypes import itemsize
from ..model.gemm import Gemm


def pad_to(dim: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` >= ``dim``: ``ceil(dim / multiple) * multiple``."""
    return -(-dim // multiple) * multiple


#: Alignment tiers, most severe first. ``error``: an FP8 GEMM's N or K off the 16-byte rule,
#: which its kernels refuse: torch's ``_scaled_mm`` requires mat1's K and mat2's K and N to be
#: multiples of 16 (pytorch/pytorch aten/src/ATen/native/cuda/ScaledBlas.cpp,
#: ``_scaled_mm_out_cuda``), and cuBLASLt's FP8 conditions are on k, the leading dimensions and
#: C's rows, never on the rows of A (M: C(M, N) = A(M, K) B(K, N) row-major is cuBLAS's
#: m = N, n = M); ``warning``: an FP8 M, or any other dtype, off the 16-byte rule (Tensor Cores
#: run it, slower); ``advice``: on the 16-byte rule but off the 128-byte tier that runs best on
#: A100 and later.
TIERS = ("error", "warning", "advice")
#: A dimension off the 16-byte rule is also shown the 128-byte tier's next multiple when that
#: adds at most this share of it (``AlignmentNote.tier_pad``): as cheap as the advice tier's
#: own suggestions (a width of 1000 to 1024: 2.4%), never a 10-class output padded to 64.
TIER_PAD_SHARE = 0.05


@dataclass(frozen=True, slots=True)  # no per-note __dict__: a deep model has 100,000s
class AlignmentNote:
    """One dimension of a GEMM that misses an alignment tier, with what to pad it to. Shape
    only: the result that holds it names the GEMM, so that GEMMs of one shape share it."""

    dim: str        # "M", "N" or "K"
    role: str       # what the dimension is in its layer: "batch", "in", "out", ...
    value: int
    tier: str       # one of TIERS
    multiple: int
    pad_to: int
    dtype: str
    unit: int = 1   # the dimension is value x unit (a convolution's K = C.R.S: unit R.S)
    # off the 16-byte rule, where the device has a 128-byte tier and reaching it adds at most
    # TIER_PAD_SHARE of the dimension: that tier's multiple (``tier_pad`` pads to it); else 0
    preferred: int = 0

    @property
    def tier_pad(self) -> int:
        """The next multiple of ``preferred``, which meets the rule and the tier both (a
        vocabulary of 50257: 50264 meets the rule, 50304, 0.09% more, the tier too; a 10-class
        output is not sent to 64); 0 where the note has no tier to name."""
        return pad_to(self.value, self.preferred) if self.preferred else 0

    def to_dict(self) -> dict[str, Any]:
        return {"dim": self.dim, "role": self.role, "value": self.value, "tier": self.tier,
                "multiple": self.multiple, "pad_to": self.pad_to}


def is_matrix_vector(gemm: Gemm) -> bool:
    """M = 1 or N = 1: a matrix-vector product, always memory-bound (intensity below 1 FLOP/B
    in FP16), run by GEMV kernels; padding its dimensions only adds work."""
    return gemm.m == 1 or gemm.n == 1


def alignment_notes(gemm: Gemm, rule: Alignment | None) -> list[AlignmentNote]:
    """Every dimension of ``gemm`` that misses ``rule``, in its tier (see ``TIERS``).

    No notes without a rule (no matrix engine for this dtype), for a dimension of 1 (padding
    it to 8 does eight times the work) unless it is an FP8 GEMM's N or K, or for a
    matrix-vector product unless it is FP8 (where the 16-byte rule on N and K is a requirement,
    not a speed-up: ``TIERS``). The rule applies to what ``gemm.align`` says: a convolution's
    channels (K = C.R.S is checked as C), never its N.P.Q.
    """
    if rule is None or (is_matrix_vector(gemm) and gemm.dtype != "fp8"):
        return []
    notes = []
    for dim, role, unit in zip(("M", "N", "K"), gemm.roles, gemm.align):
        if not unit:  # e.g. a convolution's N.P.Q: the rule is on channels only
            continue
        value = getattr(gemm, dim.lower()) // unit
        required = gemm.dtype == "fp8" and dim != "M"  # what FP8 kernels refuse (TIERS)
        if value == 1 and not required:
            continue
        if value % rule.multiple:
            tier, multiple = ("error" if required else "warning"), rule.multiple
        elif value % rule.preferred:
            tier, multiple = "advice", rule.preferred
        else:
            continue
        both = (tier != "advice" and rule.preferred > rule.multiple
                and pad_to(value, rule.preferred) <= value * (1 + TIER_PAD_SHARE))
        notes.append(AlignmentNote(dim, role, value, tier, multiple,
                                   pad_to(value, multiple), gemm.dtype, unit,
                                   rule.preferred if both else 0))
    return notes


def row_alignment_bytes(gemm: Gemm) -> int:
    """The bytes (a power of two, at most 16) that every row of ``gemm``'s tensors is a multiple
    of (the dimension each runs along, ``Gemm.operand_rows``; a row of C counts in C's dtype):
    16 when all are aligned. A convolution (its tensors are not its matrices: cuDNN's own
    layouts) and a matrix-vector product (GEMV kernels, no TMA tiles; ``is_matrix_vector``)
    count as aligned."""
    rows = _row_bytes(gemm)
    if rows is None:
        return 16
    worst = 16
    for row in rows:
        while row % worst:
            worst //= 2
    return max(worst, 1)


def misaligned_c_only(gemm: Gemm) -> bool:
    """Whether C's rows are the only ones off 16 bytes, A's and B's aligned: a Linear's forward
    whose output width is odd (its weight's rows run along K), which cuBLAS runs with a kernel
    of its own (``gpu_gemm.MISALIGNED_C_SHARE``)."""
    rows = _row_bytes(gemm)
    return rows is not None and rows[0] % 16 == 0 and rows[1] % 16 == 0 and rows[2] % 16 != 0


def _row_bytes(gemm: Gemm) -> tuple[int, int, int] | None:
    """The bytes of one row of A, B and C (``Gemm.operand_rows``; C's in C's dtype), or None
    for a convolution and a matrix-vector product (``row_alignment_bytes``)."""
    if gemm.tensors is not None or is_matrix_vector(gemm):
        return None
    dims = (gemm.m, gemm.n, gemm.k)
    e, e_c = itemsize(gemm.dtype), itemsize(gemm.c_dtype)
    a, b, c = gemm.operand_rows
    return dims[a] * e, dims[b] * e, dims[c] * e_c


def strided_operands(gemm: Gemm) -> int:
    """How many of A and B are not K-major, their elements along K not adjacent in memory
    (``Gemm.operand_rows``): by the pass's convention 0 for a forward pass, 1 for a data
    gradient (the weight), 2 for a weight gradient. 0 for a convolution and a matrix-vector
    product (cuDNN's own layouts, GEMV kernels), as ``row_alignment_bytes``."""
    if gemm.tensors is not None or is_matrix_vector(gemm):
        return 0
    a, b, _ = gemm.operand_rows
    return (a != 2) + (b != 2)


def padded_rows(gemm: Gemm) -> Gemm:
    """``gemm`` with each of its row dimensions (``Gemm.operand_rows``) padded to a multiple of
    16 bytes of its dtype (C's rows too): what padding the layer's width to the 16-byte rule
    makes of it."""
    multiple = max(1, 16 // min(itemsize(gemm.dtype), itemsize(gemm.c_dtype)))
    dims = [gemm.m, gemm.n, gemm.k]
    for i in set(gemm.operand_rows):
        dims[i] = pad_to(dims[i], multiple)
    return replace(gemm, m=dims[0], n=dims[1], k=dims[2])
