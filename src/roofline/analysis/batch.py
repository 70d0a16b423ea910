"""The batch that makes a GEMM compute-bound: intensity as a function of the batch, its limit,
and the smallest batch whose intensity reaches the ridge (closed form on the batch dimension; a
search when several dimensions grow with it), with the advice sentence alignment adds."""

from __future__ import annotations

import math
from typing import NamedTuple

from ..hardware.spec import Alignment
from ..model.dtypes import itemsize
from ..model.gemm import Gemm
from .alignment import pad_to


def intensity_limit(a: int, b: int, dtype: str) -> float:
    """Intensity as the batch grows without bound, for a GEMM whose other dimensions are a, b.

    With batch B in any one of M, N or K: I(B) = 2Bab / (e (B(a + b) + ab)), which rises with B
    towards ``2ab / (e (a + b))``.
    """
    return 2 * a * b / (itemsize(dtype) * (a + b))


def _intensity_at(gemm: Gemm, batch: int) -> float:
    """Work (FLOPs and any dequantization of B) over bytes, had the step run with ``batch``."""
    dims = gemm.dims_at_batch(batch)
    work = 2 * dims[0] * dims[1] * dims[2] * gemm.batch_count + gemm.dequant_flops_at(dims)
    return work / gemm.traffic(dims)


def batch_intensity_limit(gemm: Gemm) -> float | None:
    """The intensity ``gemm`` tends to as the batch grows; None when no dimension grows with it.

    With one batch dimension D = f B and the other two a, b: bytes are affine in D,
    bytes(D) = s D + t, so I(D) = 2abD / (sD + t) rises towards 2ab / s (for a single element
    size e: s = e (a + b), the familiar 2ab / (e (a + b))).
    """
    if not any(gemm.batch_dims):
        return None
    slope, _, (a, b) = _affine_bytes(gemm)
    if slope is None:  # several batch dimensions: read the limit off a very large batch
        return _intensity_at(gemm, 2**60)
    return 2 * a * b * gemm.batch_count / slope


def _affine_bytes(gemm: Gemm) -> tuple[int | None, int, tuple[int, int]]:
    """(s, t, (a, b)) with bytes = s D + t in the one batch dimension D, a and b the others."""
    scaled = [i for i, f in enumerate(gemm.batch_dims) if f]
    if len(scaled) != 1:
        return None, 0, (0, 0)
    index = scaled[0]
    dims = [gemm.m, gemm.n, gemm.k]
    others = tuple(d for i, d in enumerate(dims) if i != index)

    def with_d(value: int) -> tuple[int, int, int]:
        shape = list(dims)
        shape[index] = value
        return shape[0], shape[1], shape[2]

    t = gemm.traffic(with_d(0))
    return gemm.traffic(with_d(1)) - t, t, (others[0], others[1])


def min_compute_bound_batch(gemm: Gemm, ridge: float) -> int | None:
    """The smallest batch at which ``gemm`` reaches the ridge, or None if no batch can.

    With one batch dimension D = f B (see ``batch_intensity_limit``): 2abD / (sD + t) >= R
    gives D >= R t / (2ab - R s) when 2ab > R s, so B = ceil(D / f). A step check guards the
    rounding; several batch dimensions fall back to a doubling-and-bisecting search.
    """
    limit = batch_intensity_limit(gemm)
    if limit is None or limit <= ridge:
        return None
    slope, t, (a, b) = _affine_bytes(gemm)
    if slope is None:
        return _search_batch(gemm, ridge)
    factor = next(f for f in gemm.batch_dims if f)
    # a weight-only GEMM's dequantization, c FLOPs whatever the batch: (2abD + c) / (sD + t)
    # >= R gives D >= (R t - c) / (2ab - R s)
    c = gemm.dequant_flops if not gemm.batch_dims[1] and not gemm.batch_dims[2] else 0
    length = (ridge * t - c) / (2 * a * b * gemm.batch_count - ridge * slope)
    batch = max(1, math.ceil(length / factor))
    while _intensity_at(gemm, batch) < ridge:
        batch += 1  # guards against rounding in the closed form; at most a step or two
    return batch


def _search_batch(gemm: Gemm, ridge: float) -> int:
    high = 1
    while _intensity_at(gemm, high) < ridge:
        high *= 2
    low = high // 2  # below ridge (or 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _intensity_at(gemm, middle) >= ridge else (middle, high)
    return high


class BatchAdvice(NamedTuple):
    """What a larger batch does for a memory-bound GEMM (``output.advice.batch_text`` says it).

    ``batch``: the smallest batch that makes it compute-bound, or None when none does; then
    ``limit`` is the intensity the batch tends to (None: the shape does not depend on the
    batch). ``pad_to`` is the first batch from ``batch`` whose dimension also meets the
    alignment ``tier`` (``"preferred"``: the 128-byte tier, ``"multiple"``: the 16-byte rule)
    of ``multiple`` elements, or None when ``batch`` already does or no batch can.
    ``max_batch`` is set when ``batch`` does not fit in the device's memory: the largest batch
    that does (0: none), at this step's sequence length, or with ``generation`` the largest the
    whole generation fits (its prefill and its last decode step). ``captured`` is the batch a
    captured module ran at: its GEMMs' shapes were recorded at that batch only, and which of
    their dimensions grow with it is not known (``batch`` and ``limit`` None: nothing is
    claimed about another batch)."""

    batch: int | None
    ridge: float
    limit: float | None = None
    pad_to: int | None = None
    tier: str = ""
    multiple: int = 0
    max_batch: int | None = None
    captured: int | None = None
    generation: bool = False


def batch_advice(gemm: Gemm, ridge: float, rule: Alignment | None,
                 max_batch: int | None = None, captured: int | None = None,
                 generation: bool = False) -> BatchAdvice:
    """The minimum compute-bound batch for a memory-bound GEMM, and what it takes to align;
    marked (``max_batch``) when that batch does not fit in memory (above ``max_batch``, a whole
    generation's with ``generation``); an aligned batch (``pad_to``) above ``max_batch`` is not
    offered (L4's Mistral-7B decode: batch 116 fits and turns the output layer compute-bound,
    128, the 128-byte tier's, does not fit). A GEMM
    of a module ``captured`` at a batch gets no batch: a capture records each GEMM's shape at
    its one batch, not which dimension is the batch (an M of 64 at batch 64 may be the batch or
    a layer's width), so its ``batch_dims`` say none and would read as a shape no batch changes.
    """
    if captured is not None:
        return BatchAdvice(None, ridge, captured=captured)
    # A deep model repeats a few shapes thousands of times: the advice is computed once per
    # shape and precision and shared (a 100,000-layer report held about 1 GB of copies). The
    # key is every field but the GEMM's name and place (building a Gemm per lookup cost more
    # than the advice).
    key = (tuple(getattr(gemm, name) for name in _SHAPE_FIELDS), ridge, rule)
    advice = _ADVICE.get(key)
    if advice is None:
        if len(_ADVICE) >= _ADVICE_LIMIT:
            _ADVICE.clear()
        advice = _ADVICE[key] = _batch_advice(gemm, ridge, rule)
    if advice.batch is None or max_batch is None:
        return advice
    if advice.batch > max_batch:
        return advice._replace(max_batch=max_batch, generation=generation)
    if advice.pad_to is not None and advice.pad_to > max_batch:
        return advice._replace(pad_to=None)  # the aligned batch would not fit: not offered
    return advice


_SHAPE_FIELDS = ("m", "n", "k", "dtype", "roles", "batch_dims", "c_dtype", "c_read",
                 "batch_count", "align", "tensors", "b_dtype", "group_size", "b_operand",
                 "rows", "tf32", "transposed")
_ADVICE: dict[tuple, BatchAdvice] = {}
_ADVICE_LIMIT = 4096


def _batch_advice(gemm: Gemm, ridge: float, rule: Alignment | None) -> BatchAdvice:
    batch = min_compute_bound_batch(gemm, ridge)
    if batch is None:
        return BatchAdvice(None, ridge, batch_intensity_limit(gemm))
    plain = BatchAdvice(batch, ridge)
    index, factor = next(((i, f) for i, f in enumerate(gemm.batch_dims) if f), (0, 0))
    if not gemm.align[index]:  # a dimension the rule leaves free (N.P.Q): nothing to meet
        return plain
    if rule is None or not factor or factor != int(factor):  # (an expert's share of tokens:
        return plain                                          # no batch makes it a multiple)
    factor = int(factor)
    if factor * batch % rule.preferred == 0:
        return plain
    # the same tier alignment advice names on this device
    tier, multiple = (("preferred", rule.preferred) if rule.preferred > rule.multiple
                      else ("multiple", rule.multiple))
    step = rule.preferred // math.gcd(factor, rule.preferred)  # batches whose dimension fits
    return BatchAdvice(batch, ridge, None, pad_to(batch, step), tier, multiple)
