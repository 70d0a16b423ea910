"""The dtypes the tool knows, with their element sizes in bytes.

``DTYPES`` are the operand (A and B) dtypes a peak is quoted for. TF32 is stored and moved as
4-byte FP32; only the Tensor-Core math is reduced precision. FP8 means either E4M3 or E5M2 (both
one byte). The output C may be wider than its operands: INT8 GEMMs accumulate and usually write
INT32, FP8 GEMMs (Hopper, Ada) write BF16 or FP16, so C's dtype has its own list and its own
default (``default_output_dtype``).
"""

from __future__ import annotations

from ..errors import UnsupportedDtypeError

ITEMSIZE_BYTES: dict[str, int] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "int8": 1,
    "fp8": 1,
    "int32": 4,
}

DTYPES: tuple[str, ...] = ("fp64", "fp32", "tf32", "fp16", "bf16", "int8", "fp8")
#: What C (a GEMM's output) can be: every operand dtype but TF32 (stored as FP32), and INT32.
OUTPUT_DTYPES: tuple[str, ...] = ("fp64", "fp32", "fp16", "bf16", "int32", "int8", "fp8")
#: Buffers weight gradients can accumulate into (beta = 1: C read and written).
ACCUMULATION_DTYPES: tuple[str, ...] = ("fp64", "fp32", "fp16", "bf16")
_DEFAULT_OUTPUT = {"int8": "int32", "fp8": "bf16", "tf32": "fp32"}


def default_output_dtype(dtype: str) -> str:
    """C's dtype when the model does not say: the operands', except INT8 -> INT32 (integer
    GEMMs accumulate in 32 bits), FP8 -> BF16 (cuBLASLt's usual FP8 output) and TF32 -> FP32."""
    return _DEFAULT_OUTPUT.get(dtype, dtype)


def check_dtype(dtype: str) -> str:
    """Return ``dtype`` if known, else raise UnsupportedDtypeError listing the choices."""
    if dtype not in DTYPES:
        raise UnsupportedDtypeError(
            f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}"
        )
    return dtype


def itemsize(dtype: str) -> int:
    """Bytes per element of ``dtype`` (an operand or an output dtype)."""
    if dtype not in ITEMSIZE_BYTES:
        raise UnsupportedDtypeError(
            f"unknown dtype {dtype!r}; choose one of {', '.join(ITEMSIZE_BYTES)}")
    return ITEMSIZE_BYTES[dtype]
