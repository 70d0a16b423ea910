"""Shape advice: Tensor-Core alignment and the batch that makes a GEMM compute-bound.

Alignment (NVIDIA, Matrix Multiplication Background guide, Table 1): GEMM dimensions should be
multiples of 16 bytes of the dtype (FP16: 8 elements) to use Tensor Cores efficiently (a hard
requirement before cuBLAS 11.0, and for FP8 always), and on A100 and later multiples of 128 bytes
(FP16: 64) run best. The multiples come from the hardware entry's ``alignment`` section.
"""

from __future__ import annotations

import math
from functools import lru_cache

from .dtypes import itemsize
from .gemm import Gemm
from .hardware import Alignment


def pad_to(dim: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` >= ``dim``: ``ceil(dim / multiple) * multiple``."""
    return -(-dim // multiple) * multiple


def alignment_warnings(gemm: Gemm, rule: Alignment | None) -> tuple[bool, list[str]]:
    """Whether every dimension meets ``rule.multiple``, and one warning per missed multiple.

    A dimension that meets ``multiple`` but not ``preferred`` gets a softer hint. With no rule
    (a device without a matrix engine for this dtype) everything counts as aligned.
    """
    if rule is None:
        return True, []
    aligned, warnings = _alignment(gemm.m, gemm.n, gemm.k, gemm.roles, gemm.dtype, rule)
    return aligned, list(warnings)


# A deep MLP repeats a few shapes thousands of times: the cached messages are shared strings,
# not one copy per GEMM (a 100,000-layer report held about 1 GB before, mostly these).
@lru_cache(maxsize=4096)
def _alignment(m: int, n: int, k: int, roles: tuple[str, str, str], dtype: str,
               rule: Alignment) -> tuple[bool, tuple[str, ...]]:
    aligned, warnings = True, []
    for dim, role, value in zip(("m", "n", "k"), roles, (m, n, k)):
        label = f"{dim.upper()}={value} ({role})"
        if value % rule.multiple:
            aligned = False
            need = "required for" if dtype == "fp8" else "best for"
            warnings.append(f"{label} is not a multiple of {rule.multiple} ({need} {dtype} "
                            f"Tensor Cores): pad to {pad_to(value, rule.multiple)}")
        elif value % rule.preferred:
            warnings.append(f"{label}: multiples of {rule.preferred} run best on this device "
                            f"(next: {pad_to(value, rule.preferred)})")
    return aligned, tuple(warnings)


def tile_count(m: int, n: int, tile: tuple[int, int]) -> int:
    """Thread-block tiles covering a C(m, n) output: ``ceil(m / tm) * ceil(n / tn)``."""
    return -(-m // tile[0]) * -(-n // tile[1])


def tile_wave_efficiency(m: int, n: int, tile: tuple[int, int], sms: int) -> float:
    """Share of the GPU's tile slots doing useful work for a C(m, n) output (one block per SM).

    tiles = tile_count(m, n, tile); waves = ceil(tiles / sms);
    efficiency = m * n / (waves * sms * tm * tn). Partial edge tiles (tile quantization) and a
    part-empty last wave (wave quantization) both lower it (NVIDIA, Matrix Multiplication
    Background guide, section 3).
    """
    waves = -(-tile_count(m, n, tile) // sms)
    return m * n / (waves * sms * tile[0] * tile[1])


#: Below this share of useful tile slots, a GEMM is flagged: the roofline time is optimistic.
QUANTIZATION_THRESHOLD = 0.75


def quantization_warning(gemm: Gemm, sms: int | None,
                         tiles: tuple[tuple[int, int], ...]) -> str | None:
    """A warning when even the best of the modelled tiles leaves over a quarter of the GPU idle.

    The tile cuBLAS picks is not known ahead of time, so every candidate is tried and only a
    GEMM that no tile fills well is flagged. Meant for compute-bound GEMMs: for skinny,
    memory-bound ones cuBLAS switches to split-K or GEMV kernels that this model does not cover.
    """
    if not sms or not tiles:
        return None
    return _quantization(gemm.m, gemm.n, sms, tiles)


@lru_cache(maxsize=4096)
def _quantization(m: int, n: int, sms: int, tiles: tuple[tuple[int, int], ...]) -> str | None:
    efficiency, best = max((tile_wave_efficiency(m, n, t, sms), t) for t in tiles)
    if efficiency >= QUANTIZATION_THRESHOLD:
        return None
    count = tile_count(m, n, best)
    return (f"tile/wave quantization: best tile {best[0]}x{best[1]} ({count} tiles, {sms} SMs) "
            f"keeps {efficiency:.0%} of slots busy")


def intensity_limit(a: int, b: int, dtype: str) -> float:
    """Intensity as the batch grows without bound, for a GEMM whose other dimensions are a, b.

    With batch B in any one of M, N or K: I(B) = 2Bab / (e (B(a + b) + ab)), which rises with B
    towards ``2ab / (e (a + b))``.
    """
    return 2 * a * b / (itemsize(dtype) * (a + b))


def _intensity_at(gemm: Gemm, batch: int) -> float:
    dims = gemm.dims_at_batch(batch)
    return 2 * dims[0] * dims[1] * dims[2] / gemm.traffic(dims)


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
    return 2 * a * b / slope


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
    length = ridge * t / (2 * a * b - ridge * slope)
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


def batch_advice(gemm: Gemm, ridge: float, rule: Alignment | None) -> tuple[int | None, str]:
    """The minimum compute-bound batch for a memory-bound GEMM, and a sentence saying so."""
    return _batch_advice(gemm.m, gemm.n, gemm.k, gemm.dtype, gemm.roles, gemm.batch_dims,
                         ridge, rule)


@lru_cache(maxsize=4096)
def _batch_advice(m: int, n: int, k: int, dtype: str, roles: tuple[str, str, str],
                  batch_dims: tuple[int, int, int], ridge: float,
                  rule: Alignment | None) -> tuple[int | None, str]:
    gemm = Gemm("MM", "layer", "forward", m, n, k, dtype, roles, batch_dims)
    batch = min_compute_bound_batch(gemm, ridge)
    if batch is None:
        limit = batch_intensity_limit(gemm)
        if limit is None:
            return None, "its shape does not depend on the batch; a larger batch does not help"
        return None, (f"no batch reaches the ridge ({ridge:.1f}): intensity tends to "
                      f"{limit:.1f} FLOP/B; widen the layer")
    text = f"batch >= {batch} makes it compute-bound"
    if rule is not None and batch % rule.multiple:
        text += f" ({pad_to(batch, rule.multiple)} keeps the {rule.multiple}-multiple)"
    return batch, text
