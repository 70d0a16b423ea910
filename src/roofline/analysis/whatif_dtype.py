"""The dtype a device runs a model in: its own where the device has a peak for it, else the
nearest it has (``nearest_dtype``), the network run in that one and otherwise unchanged
(``substitute_dtype``)."""

from __future__ import annotations

from dataclasses import replace

from ..model.dtypes import DTYPES, itemsize
from ..model.network import Network


def _is_float(dtype: str) -> bool:
    return not dtype.startswith("int")


def nearest_dtype(dtype: str, available: tuple[str, ...]) -> str | None:
    """The dtype a device runs a model of ``dtype`` in: ``dtype`` itself if it has a peak for
    it; else, in this order, one of the same element size and the same kind (float or integer:
    fp16 -> bf16, fp32 -> tf32), the narrowest wider one of the same kind (fp16 -> fp32), a
    wider one of the other kind, the widest narrower one of the same kind, then any. Ties go
    to the canonical dtype order (fp64, fp32, tf32, fp16, bf16, int8, fp8). None if the
    device has no peak at all."""
    if dtype in available:
        return dtype
    size, kind = itemsize(dtype), _is_float(dtype)

    def rank(other: str) -> tuple:
        other_size, same_kind = itemsize(other), _is_float(other) == kind
        if other_size == size:
            order = 0 if same_kind else 2
        elif other_size > size:
            order = 1 if same_kind else 2
        else:
            order = 3 if same_kind else 4
        distance = other_size - size if other_size >= size else size - other_size
        return order, distance, DTYPES.index(other)

    return min(available, key=rank) if available else None


def substitute_dtype(network: Network, dtype: str) -> Network:
    """``network`` run in ``dtype`` and otherwise unchanged: every other field (seq, phase,
    optimizer, repeats, accumulation, source ...) is kept by construction (``replace``). An
    explicit output dtype equal to the old operand dtype follows the operands."""
    output = None if network.output_dtype == network.dtype else network.output_dtype
    return replace(network, dtype=dtype, output_dtype=output)
