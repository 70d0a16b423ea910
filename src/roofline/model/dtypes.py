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

#: How weights may be stored (``weights:``): the operand dtypes a serving stack keeps weights in,
#: and int4, group-quantized (``group_size`` values share one fp16 scale, as GPTQ and AWQ do).
WEIGHT_DTYPES: tuple[str, ...] = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")
#: How the KV cache may be stored (``kv_cache:``).
KV_DTYPES: tuple[str, ...] = ("fp32", "fp16", "bf16", "fp8", "int8")
#: What a GEMM's activation operand (and its math) may be (``activations:``).
ACTIVATION_DTYPES: tuple[str, ...] = DTYPES
GROUPED_DTYPES: tuple[str, ...] = ("int4",)  # stored with per-group scales
DEFAULT_GROUP_SIZE = 128  # GPTQ's and AWQ's usual group
SCALE_BYTES = 2  # one fp16 scale per group (symmetric: no zero points)
_BITS = {"int4": 4}


def bits(dtype: str) -> int:
    """Bits per element of ``dtype`` (int4: 4; every other dtype 8 x ``itemsize``)."""
    return _BITS.get(dtype) or 8 * itemsize(dtype)


def is_float(dtype: str) -> bool:
    return not dtype.startswith("int")


def default_output_dtype(dtype: str) -> str:
    """C's dtype when the model does not say: the operands', except INT8 -> INT32 (integer
    GEMMs accumulate in 32 bits), FP8 -> BF16 (cuBLASLt's usual FP8 output) and TF32 -> FP32."""
    return _DEFAULT_OUTPUT.get(dtype, dtype)


def output_problem(math: str, output: str) -> str | None:
    """Why a GEMM whose math runs in ``math`` cannot write C as ``output``, else None: an
    integer GEMM (INT8) accumulates exactly in INT32 and may write that, INT8 requantized, or a
    float dequantized; a float GEMM's products are fractions, and no library writes them to an
    integer C (cuBLAS, cuBLASLt and oneDNN offer none), so a float GEMM writes a float C. The one
    rule, for a model's ``output_dtype`` and ``--output-dtype`` alike (an unknown ``output`` is
    left to the choice of ``OUTPUT_DTYPES`` to refuse)."""
    if is_float(math) and output in OUTPUT_DTYPES and not is_float(output):
        return (f"{math} math cannot write an {output} output: a float GEMM writes a float C "
                f"(fp32, fp16, bf16, ...); integer outputs come from int8 GEMMs")
    return None


#: torch's names of the floating-point dtypes a model runs in (a config.json's ``torch_dtype``,
#: a tensor's ``dtype``), as roofline names them: the one table ``model.hf`` and
#: ``model.capture`` read them by
TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}
#: Other spellings of a model's dtype a library call may give (torch's and numpy's names, with
#: or without ``torch.``; a ``torch.dtype`` reads as one), read as roofline's (``dtype_name``)
DTYPE_ALIASES = {**TORCH_DTYPES, "double": "fp64", "float": "fp32", "half": "fp16",
                 "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}


def dtype_name(value: object) -> object:
    """A library call's dtype as roofline names it: its own names as they are, in any case,
    and torch's and numpy's spellings (``torch.float16``, ``numpy.dtype("float16")``,
    "bfloat16", "half") read as roofline's; anything else as given, for the caller's check
    to refuse by name."""
    if value is None or (isinstance(value, str) and value in DTYPES):
        return value
    text = str(value).strip().lower().removeprefix("torch.")
    return text if text in DTYPES else DTYPE_ALIASES.get(text, value)


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
