"""Shape advice: Tensor-Core alignment and the batch that makes a GEMM compute-bound.

Alignment (NVIDIA, Matrix Multiplication Background guide, Table 1): GEMM dimensions should be
multiples of 16 bytes of the dtype (FP16: 8 elements) to use Tensor Cores efficiently (a hard
requirement before cuBLAS 11.0, and for FP8 always), and on A100 and later multiples of 128 bytes
(FP16: 64) run best. The multiples come from the hardware entry's ``alignment`` section.
"""

from __future__ import annotations

import math

from .dtypes import itemsize
from .gemm import DIM_ROLES, Gemm, gemm_intensity
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
    aligned, warnings = True, []
    for dim, role in zip(("m", "n", "k"), DIM_ROLES[gemm.pass_]):
        value = getattr(gemm, dim)
        label = f"{dim.upper()}={value} ({role})"
        if value % rule.multiple:
            aligned = False
            need = "required for" if gemm.dtype == "fp8" else "best for"
            warnings.append(f"{label} is not a multiple of {rule.multiple} ({need} {gemm.dtype} "
                            f"Tensor Cores): pad to {pad_to(value, rule.multiple)}")
        elif value % rule.preferred:
            warnings.append(f"{label}: multiples of {rule.preferred} run best on this device "
                            f"(next: {pad_to(value, rule.preferred)})")
    return aligned, warnings


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
    efficiency, best = max((tile_wave_efficiency(gemm.m, gemm.n, t, sms), t) for t in tiles)
    if efficiency >= QUANTIZATION_THRESHOLD:
        return None
    count = tile_count(gemm.m, gemm.n, best)
    return (f"tile/wave quantization: best tile {best[0]}x{best[1]} ({count} tiles, {sms} SMs) "
            f"keeps {efficiency:.0%} of slots busy")


def intensity_limit(a: int, b: int, dtype: str) -> float:
    """Intensity as the batch grows without bound, for a GEMM whose other dimensions are a, b.

    With batch B in any one of M, N or K: I(B) = 2Bab / (e (B(a + b) + ab)), which rises with B
    towards ``2ab / (e (a + b))``.
    """
    return 2 * a * b / (itemsize(dtype) * (a + b))


def min_compute_bound_batch(gemm: Gemm, ridge: float) -> int | None:
    """The smallest batch at which ``gemm`` reaches the ridge, or None if no batch can.

    Solving I(B) >= R for B: B >= e R a b / (2ab - e R (a + b)), when 2ab > e R (a + b).
    """
    batch_dim, a, b = _split_batch(gemm)
    e = itemsize(gemm.dtype)
    denominator = 2 * a * b - e * ridge * (a + b)
    if denominator <= 0:
        return None
    batch = max(1, math.ceil(e * ridge * a * b / denominator))
    shape = [a, b]
    while gemm_intensity(*_with_batch(shape, batch_dim, batch), gemm.dtype) < ridge:
        batch += 1  # guards against rounding in the closed form; at most a step or two
    return batch


def _split_batch(gemm: Gemm) -> tuple[int, int, int]:
    """Which of (M, N, K) is the batch, and the other two dimensions."""
    batch_dim = DIM_ROLES[gemm.pass_].index("batch")
    a, b = (v for i, v in enumerate((gemm.m, gemm.n, gemm.k)) if i != batch_dim)
    return batch_dim, a, b


def _with_batch(others: list[int], batch_dim: int, batch: int) -> tuple[int, int, int]:
    dims = list(others)
    dims.insert(batch_dim, batch)
    return dims[0], dims[1], dims[2]


def batch_advice(gemm: Gemm, ridge: float, rule: Alignment | None) -> tuple[int | None, str]:
    """The minimum compute-bound batch for a memory-bound GEMM, and a sentence saying so."""
    batch = min_compute_bound_batch(gemm, ridge)
    if batch is None:
        _, a, b = _split_batch(gemm)
        limit = intensity_limit(a, b, gemm.dtype)
        return None, (f"no batch reaches the ridge ({ridge:.1f}): intensity tends to "
                      f"{limit:.1f} FLOP/B; widen the layer")
    text = f"batch >= {batch} makes it compute-bound"
    if rule is not None and batch % rule.multiple:
        text += f" ({pad_to(batch, rule.multiple)} keeps the {rule.multiple}-multiple)"
    return batch, text
