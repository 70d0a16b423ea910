"""Shape advice: Tensor-Core alignment and the batch that makes a GEMM compute-bound.

Alignment (NVIDIA, Matrix Multiplication Background guide, Table 1): GEMM dimensions should be
multiples of 16 bytes of the dtype (FP16: 8 elements) to use Tensor Cores efficiently (a hard
requirement before cuBLAS 11.0, and for FP8 always), and on A100 and later multiples of 128 bytes
(FP16: 64) run best. The multiples come from the hardware entry's ``alignment`` section.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from ..hardware.spec import Alignment
from ..model.dtypes import itemsize
from ..model.gemm import Gemm


def pad_to(dim: int, multiple: int) -> int:
    """Smallest multiple of ``multiple`` >= ``dim``: ``ceil(dim / multiple) * multiple``."""
    return -(-dim // multiple) * multiple


#: Alignment tiers, most severe first. ``error``: an FP8 dimension off the 16-byte rule (cuBLASLt
#: refuses FP8 GEMMs that miss it); ``warning``: any other dtype off the 16-byte rule (Tensor
#: Cores run it, slower); ``advice``: on the 16-byte rule but off the 128-byte tier that runs best
#: on A100 and later.
TIERS = ("error", "warning", "advice")


@dataclass(frozen=True)
class AlignmentNote:
    """One dimension of one GEMM that misses an alignment tier, with what to pad it to."""

    gemm: str
    layer: str
    dim: str        # "M", "N" or "K"
    role: str       # what the dimension is in its layer: "batch", "in", "out", ...
    value: int
    tier: str       # one of TIERS
    multiple: int
    pad_to: int
    dtype: str
    unit: int = 1   # the dimension is value x unit (a convolution's K = C.R.S: unit R.S)

    @property
    def text(self) -> str:
        """The per-GEMM sentence (JSON ``warnings`` / ``advice``)."""
        label = f"{self.dim}={self.value} ({self.role})"
        if self.unit > 1:
            channels = self.role.split(" x ")[0]
            label = f"{self.dim}={self.value * self.unit} ({self.role}): {channels} {self.value}"
        if self.tier == "advice":
            return (f"{label}: multiples of {self.multiple} run best on this device "
                    f"(next: {self.pad_to})")
        need = "required for" if self.tier == "error" else "best for"
        return (f"{label} is not a multiple of {self.multiple} ({need} {self.dtype} "
                f"Tensor Cores): pad to {self.pad_to}")

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
    it to 8 does eight times the work), or for a matrix-vector product unless it is FP8 (where
    the 16-byte rule is a requirement, not a speed-up). The rule applies to what ``gemm.align``
    says: a convolution's channels (K = C.R.S is checked as C), never its N.P.Q.
    """
    if rule is None or (is_matrix_vector(gemm) and gemm.dtype != "fp8"):
        return []
    notes = []
    for dim, role, unit in zip(("M", "N", "K"), gemm.roles, gemm.align):
        if not unit:  # e.g. a convolution's N.P.Q: the rule is on channels only
            continue
        value = getattr(gemm, dim.lower()) // unit
        if value == 1:
            continue
        if value % rule.multiple:
            tier, multiple = ("error" if gemm.dtype == "fp8" else "warning"), rule.multiple
        elif value % rule.preferred:
            tier, multiple = "advice", rule.preferred
        else:
            continue
        notes.append(AlignmentNote(gemm.name, gemm.layer, dim, role, value, tier, multiple,
                                   pad_to(value, multiple), gemm.dtype, unit))
    return notes


def alignment_warnings(gemm: Gemm, rule: Alignment | None) -> tuple[bool, list[str]]:
    """Whether every dimension meets ``rule.multiple``, and one sentence per note
    (``alignment_notes``; the 128-byte tier included, as a softer hint)."""
    notes = alignment_notes(gemm, rule)
    return all(n.tier == "advice" for n in notes), [n.text for n in notes]


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
#: Split-K rule: chosen when the output has fewer tiles than SMs / SPLIT_K_TILES_SHARE and K is
#: at least SPLIT_K_LONG x the larger of M and N; each K slice keeps at least SPLIT_K_MIN_SLICE.
SPLIT_K_TILES_SHARE = 2
SPLIT_K_LONG = 4
SPLIT_K_MIN_SLICE = 256
#: The nearest shape is looked for until this share of slots is busy (or within +-50%).
GOOD_EFFICIENCY = 0.9


@dataclass(frozen=True)
class SplitK:
    """Split-K as cuBLAS would choose it: K cut into ``factor`` slices, each its own tiles,
    partial sums in an FP32 workspace reduced afterwards (``extra_bytes`` written and read)."""

    factor: int
    efficiency: float
    extra_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"factor": self.factor, "efficiency": self.efficiency,
                "extra_bytes": self.extra_bytes}


@dataclass(frozen=True)
class Quantization:
    """Tile and wave quantization of one GEMM on one GPU, at its best candidate tile.

    ``efficiency``: share of the tile slots doing useful work (``tile_wave_efficiency``);
    ``effective``: the same after split-K when split-K is chosen; ``better``: the nearest
    (M, N, K) changing one of M or N, within +-50% and on the 16-byte multiple, that keeps
    more slots busy (None when the shape is already good or nothing near is better).
    """

    efficiency: float
    tile: tuple[int, int]
    tiles: int
    waves: int
    sms: int
    split_k: SplitK | None
    better: tuple[int, int, int, float] | None

    @property
    def effective(self) -> float:
        return self.split_k.efficiency if self.split_k else self.efficiency

    def to_dict(self) -> dict[str, Any]:
        better = None
        if self.better:
            m, n, k, eff = self.better
            better = {"m": m, "n": n, "k": k, "efficiency": eff}
        return {"efficiency": self.efficiency, "effective_efficiency": self.effective,
                "loss": 1 - self.effective, "tile": list(self.tile), "tiles": self.tiles,
                "waves": self.waves, "sms": self.sms,
                "split_k": self.split_k.to_dict() if self.split_k else None,
                "nearest_better_shape": better}

    def warning(self) -> str | None:
        """The sentence, when even the best tile leaves over a quarter of the GPU idle
        (effective efficiency below QUANTIZATION_THRESHOLD); else None."""
        return self.sentence() if self.effective < QUANTIZATION_THRESHOLD else None

    def sentence(self) -> str:
        tm, tn = self.tile
        wave = "wave" if self.waves == 1 else "waves"
        text = (f"tile/wave quantization: best tile {tm}x{tn} ({self.tiles} tiles, {self.sms} "
                f"SMs, {self.waves} {wave}) keeps {self.efficiency:.0%} of slots busy")
        if self.split_k:
            text += (f"; split-K x{self.split_k.factor} would be chosen: "
                     f"{self.split_k.efficiency:.0%} busy, +{self.split_k.extra_bytes / 1e6:.3g}"
                     f" MB of fp32 partial sums")
        if self.better:
            m, n, k, eff = self.better
            text += f"; nearest shape losing less: {m} x {n} x {k} ({eff:.0%})"
        return text


def best_tile(m: int, n: int, sms: int,
              tiles: tuple[tuple[int, int], ...]) -> tuple[float, tuple[int, int]]:
    """(efficiency, tile) of the candidate tile that keeps the most slots busy (the first
    listed on a tie: the larger, more efficient tiles come first in hwdb)."""
    best = max(tiles, key=lambda t: tile_wave_efficiency(m, n, t, sms))
    return tile_wave_efficiency(m, n, best, sms), best


def split_k(m: int, n: int, k: int, tile: tuple[int, int], sms: int) -> SplitK | None:
    """Split-K when the output has few tiles (fewer than SMs / 2) and K is long (K >= 4
    max(M, N)): factor = min(SMs // tiles, K // 256) slices, efficiency m n s / (waves' SMs
    tm tn) with waves' = ceil(tiles s / SMs); the FP32 partial sums cost 2 x 4 x s x m x n bytes
    (written, then read by the reduction). None when the rule does not pick it."""
    count = tile_count(m, n, tile)
    if count * SPLIT_K_TILES_SHARE > sms or k < SPLIT_K_LONG * max(m, n):
        return None
    factor = min(sms // count, k // SPLIT_K_MIN_SLICE)
    if factor < 2:
        return None
    waves = -(-count * factor // sms)
    efficiency = m * n * factor / (waves * sms * tile[0] * tile[1])
    return SplitK(factor, min(1.0, efficiency), 2 * 4 * factor * m * n)


NEAREST_SHAPE_STEPS = 256  # multiples tried on each side of M and of N


@functools.lru_cache(maxsize=4096)
def _nearest_better(m: int, n: int, k: int, sms: int, tiles: tuple[tuple[int, int], ...],
                    multiple: int, current: float) -> tuple[int, int, int, float] | None:
    """Walk M and N outwards (one at a time, on multiples of ``multiple``, within +-50% and at
    most NEAREST_SHAPE_STEPS multiples away) to the
    nearest shape whose best tile keeps GOOD_EFFICIENCY of the slots busy (or 0.1 more than
    now); failing that, the best shape seen if it gains 0.05 or more."""
    goal = max(GOOD_EFFICIENCY, min(1.0, current + 0.1))
    hits: list[tuple[float, tuple[int, int, int, float]]] = []
    best: tuple[float, tuple[int, int, int, float] | None] = (current + 0.05, None)
    for index, value in ((0, m), (1, n)):
        low, high = max(multiple, value // 2), value + value // 2
        base = pad_to(value, multiple)  # the walk is bounded: a huge M must not list billions
        steps = range(NEAREST_SHAPE_STEPS)
        candidates = sorted({c for s in steps for c in (base - s * multiple, base + s * multiple)
                             if low <= c <= high}, key=lambda c: (abs(c - value), c))
        for candidate in candidates:
            if candidate == value:
                continue
            shape = (candidate, n) if index == 0 else (m, candidate)
            eff, _ = best_tile(*shape, sms, tiles)
            if eff >= goal:
                hits.append((abs(candidate - value) / value, (shape[0], shape[1], k, eff)))
                break
            if eff > best[0]:
                best = (eff, (shape[0], shape[1], k, eff))
    return min(hits)[1] if hits else best[1]


def quantization(gemm: Gemm, sms: int | None, tiles: tuple[tuple[int, int], ...],
                 multiple: int = 8) -> Quantization | None:
    """Tile and wave quantization of ``gemm`` over the candidate tiles; None on a CPU (no SMs
    or tiles) and for a matrix-vector product (GEMV kernels, no output tiles)."""
    if not sms or not tiles or is_matrix_vector(gemm):
        return None
    return _quantization(gemm.m, gemm.n, gemm.k, sms, tuple(tiles), multiple)


# A deep model repeats a few shapes thousands of times: one (immutable) result per shape.
@functools.lru_cache(maxsize=4096)
def _quantization(m: int, n: int, k: int, sms: int, tiles: tuple[tuple[int, int], ...],
                  multiple: int) -> Quantization:
    efficiency, tile = best_tile(m, n, sms, tiles)
    count = tile_count(m, n, tile)
    split = split_k(m, n, k, tile, sms)
    result = Quantization(efficiency, tile, count, -(-count // sms), sms, split, None)
    if result.effective < GOOD_EFFICIENCY:
        better = _nearest_better(m, n, k, sms, tiles, multiple, result.effective)
        result = Quantization(efficiency, tile, count, result.waves, sms, split, better)
    return result


def quantization_warning(gemm: Gemm, sms: int | None,
                         tiles: tuple[tuple[int, int], ...]) -> str | None:
    """A warning when even the best of the modelled tiles leaves over a quarter of the GPU idle.

    The tile cuBLAS picks is not known ahead of time, so every candidate is tried and only a
    GEMM that no tile fills well is flagged. Meant for compute-bound GEMMs: a memory-bound
    GEMM's time is set by bandwidth, not by tile slots.
    """
    result = quantization(gemm, sms, tiles)
    return result.warning() if result is not None else None


def intensity_limit(a: int, b: int, dtype: str) -> float:
    """Intensity as the batch grows without bound, for a GEMM whose other dimensions are a, b.

    With batch B in any one of M, N or K: I(B) = 2Bab / (e (B(a + b) + ab)), which rises with B
    towards ``2ab / (e (a + b))``.
    """
    return 2 * a * b / (itemsize(dtype) * (a + b))


def _intensity_at(gemm: Gemm, batch: int) -> float:
    dims = gemm.dims_at_batch(batch)
    return 2 * dims[0] * dims[1] * dims[2] * gemm.batch_count / gemm.traffic(dims)


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
    length = ridge * t / (2 * a * b * gemm.batch_count - ridge * slope)
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
    # A deep model repeats a few shapes thousands of times: the sentence is computed once per
    # shape and precision and shared (a 100,000-layer report held about 1 GB of copies). The
    # key is every field but the GEMM's name and place (building a Gemm per lookup cost more
    # than the advice).
    key = (tuple(getattr(gemm, name) for name in _SHAPE_FIELDS), ridge, rule)
    advice = _ADVICE.get(key)
    if advice is None:
        if len(_ADVICE) >= _ADVICE_LIMIT:
            _ADVICE.clear()
        advice = _ADVICE[key] = _batch_advice(gemm, ridge, rule)
    return advice


_SHAPE_FIELDS = ("m", "n", "k", "dtype", "roles", "batch_dims", "c_dtype", "c_read",
                 "batch_count", "align", "tensors")
_ADVICE: dict[tuple, tuple[int | None, str]] = {}
_ADVICE_LIMIT = 4096


def _batch_advice(gemm: Gemm, ridge: float, rule: Alignment | None) -> tuple[int | None, str]:
    batch = min_compute_bound_batch(gemm, ridge)
    if batch is None:
        limit = batch_intensity_limit(gemm)
        if limit is None:
            return None, "its shape does not depend on the batch; a larger batch does not help"
        return None, (f"no batch reaches the ridge ({ridge:.1f}): intensity tends to "
                      f"{limit:.1f} FLOP/B; widen the layer")
    text = f"batch >= {batch} makes it compute-bound"
    index, factor = next(((i, f) for i, f in enumerate(gemm.batch_dims) if f), (0, 0))
    if not gemm.align[index]:  # a dimension the rule leaves free (N.P.Q): nothing to meet
        return batch, text
    if rule is None or not factor or factor != int(factor):  # (an expert's share of tokens:
        return batch, text                                    # no batch makes it a multiple)
    factor = int(factor)
    if factor * batch % rule.preferred == 0:
        return batch, text
    if rule.preferred > rule.multiple:  # the same tier alignment advice names on this device
        tier = f"the 128-byte tier (a multiple of {rule.preferred})"
    else:
        tier = f"the 16-byte rule (a multiple of {rule.multiple})"
    step = rule.preferred // math.gcd(factor, rule.preferred)  # batches whose dimension fits
    return batch, text + f"; {pad_to(batch, step)} also meets {tier}"
