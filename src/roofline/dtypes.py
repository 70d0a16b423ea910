"""The dtypes the tool knows, with their element sizes in bytes.

TF32 is stored and moved as 4-byte FP32; only the Tensor-Core math is reduced precision.
FP8 means either E4M3 or E5M2 (both one byte). The byte counts assume the output C has the
same element size as the inputs (true for FP16/BF16 training GEMMs; INT8 GEMMs often write
INT32, which this model does not capture).
"""

from __future__ import annotations

from .errors import UnsupportedDtypeError

ITEMSIZE_BYTES: dict[str, int] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "int8": 1,
    "fp8": 1,
}

DTYPES: tuple[str, ...] = tuple(ITEMSIZE_BYTES)


def check_dtype(dtype: str) -> str:
    """Return ``dtype`` if known, else raise UnsupportedDtypeError listing the choices."""
    if dtype not in ITEMSIZE_BYTES:
        raise UnsupportedDtypeError(
            f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}"
        )
    return dtype


def itemsize(dtype: str) -> int:
    """Bytes per element of ``dtype``."""
    return ITEMSIZE_BYTES[check_dtype(dtype)]
