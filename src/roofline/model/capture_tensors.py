"""How a capture counts the tensors an op moves: values of the model's dtype as elements, which
take the step's element size, any other tensor's as bytes at its own (``_scales``, ``_split``,
``_counted``), and the op's own dtype where it ran in another (``_own_dtype``); the values a
broadcast tensor holds in memory (``_stored``); torch's dtypes as roofline names them
(``DTYPE_NAMES``, ``_dtype_name``); a shape's values (``_numel``) and a call's tensors in its
nested outputs (``_flatten``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .capture_recorder import _Recorder
from .dtypes import TORCH_DTYPES

#: torch dtypes as roofline names them (``_dtype_name``; every ``float8_*`` is fp8)
DTYPE_NAMES = TORCH_DTYPES | {"int8": "int8", "int32": "int32"}


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def _flatten(out: Any) -> Iterator[Any]:
    if isinstance(out, (list, tuple)):
        for item in out:
            yield from _flatten(item)
    elif isinstance(out, dict):
        for item in out.values():
            yield from _flatten(item)
    elif hasattr(out, "to_tuple"):  # transformers' ModelOutput
        yield from _flatten(out.to_tuple())
    else:
        yield out


def _dtype_name(dtype: Any) -> str | None:
    """A torch dtype as roofline names it (``DTYPE_NAMES``; any 8-bit float fp8), None for one
    it has no name for."""
    name = str(dtype).removeprefix("torch.")
    return DTYPE_NAMES.get(name) or ("fp8" if name.startswith("float8") else None)


def _roofline_dtype(t: Any) -> str | None:
    """A floating-point tensor's dtype as roofline names it (``_dtype_name``), None for any
    other tensor."""
    return _dtype_name(t.dtype) if t.is_floating_point() else None


def _scales(t: Any, model: str | None) -> bool:
    """Whether ``t``'s values take the step's element size: a floating-point tensor of the
    model's dtype (any floating-point one when the model's was not known before the run: a
    module with no floating-point parameter, buffer or input). Any other is counted at its own
    size: integer indices, boolean masks, and an upcast the model's code makes
    (``logits.float()`` before a loss in a bf16 model: those values are fp32 whatever the step's
    dtype, and an override of it leaves them so)."""
    return t.is_floating_point() and (model is None or _roofline_dtype(t) == model)


def _own_dtype(tensors: list[Any], model: str | None) -> str:
    """The dtype an op ran in where it is not the model's: its first floating-point tensor's
    (outputs first, then inputs) when that one does not take the step's size (``_scales``);
    "" otherwise."""
    first = next((t for t in tensors if t.is_floating_point()), None)
    if first is None or _scales(first, model):
        return ""
    return _roofline_dtype(first) or ""


def _stored(t: Any) -> int:
    """The values a tensor holds in memory: its sizes along every dimension it is not broadcast
    along (a stride of 0 repeats one value); 0 for None. A kernel that reads a broadcast tensor
    reads those, as ``_broadcast`` counts a GEMM's broadcast operand once."""
    if t is None:
        return 0
    return _numel(tuple(n for n, stride in zip(t.shape, t.stride()) if stride))


def _counted(pairs: Sequence[tuple[Any, int]], rec: _Recorder) -> tuple[int, int]:
    """(elements, other bytes) of ``pairs`` of (tensor, values of it moved), each by
    ``_split``."""
    split = [_split(t, values, rec) for t, values in pairs]
    return sum(e for e, _ in split), sum(b for _, b in split)


def _split(t: Any, values: int, rec: _Recorder) -> tuple[int, int]:
    """``values`` of ``t``'s as (elements of the model's dtype, bytes of any other: ``_scales``);
    (0, 0) for None."""
    if t is None or not values:
        return 0, 0
    return (values, 0) if _scales(t, rec.dtype) else (0, values * t.element_size())
