"""Tile and wave quantization: how many of a GPU's tile slots a GEMM's output keeps busy, the
split-K rule, and the nearest shape that does better (NVIDIA, Matrix Multiplication Background
guide, "Tile Quantization" and "Wave Quantization"). On a GPU whose kernels run stream-K
(``gpu_gemm.runs_stream_k``: Hopper and Blackwell Tensor-Core GEMMs) a GEMM of more tiles than
SMs loses no wave: the tiles' K iterations are dealt evenly over the SMs (Osama et al.,
"Stream-K", PPoPP 2023; CUTLASS's ``PersistentTileSchedulerSm90StreamK``), so only its edge
tiles' padding is lost (``analysis.gpu_gemm``'s model prices the prologues and the fixup)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model.gemm import Gemm
from .alignment import is_matrix_vector, pad_to

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec


def tile_count(m: int, n: int, tile: tuple[int, int], batch: int = 1) -> int:
    """Thread-block tiles covering ``batch`` C(m, n) outputs (one batched kernel):
    ``ceil(m / tm) * ceil(n / tn) * batch``."""
    return -(-m // tile[0]) * -(-n // tile[1]) * batch


def tile_wave_efficiency(m: int, n: int, tile: tuple[int, int], sms: int,
                         stream_k: bool = False, batch: int = 1) -> float:
    """Share of the GPU's tile slots doing useful work for a C(m, n) output (one block per SM).

    tiles = tile_count(m, n, tile); waves = ceil(tiles / sms);
    efficiency = m * n / (waves * sms * tm * tn). Partial edge tiles (tile quantization) and a
    part-empty last wave (wave quantization) both lower it (NVIDIA, Matrix Multiplication
    Background guide, section 3). With ``stream_k`` and more tiles than SMs the work is dealt
    evenly over the SMs and only the edge tiles lose: m * n / (tiles * tm * tn). ``batch``
    outputs in one batched kernel share the waves: m * n * batch over the slots.
    """
    count = tile_count(m, n, tile, batch)
    slots = count if stream_k and count > sms else -(-count // sms) * sms
    return m * n * batch / (slots * tile[0] * tile[1])


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
    ``stream_k``: on a GPU that runs stream-K the tiles are more than the SMs and leave a last
    wave part-empty, so they are dealt evenly over the SMs and only the edge tiles lose (the
    same efficiency as whole waves would keep);
    ``effective``: the same after split-K when split-K is chosen; ``better``: the nearest
    (M, N, K) changing one of M or N, within +-50% and on the multiple the caller gives (the
    entry's 128-byte tier where it has one: a shape the alignment advice would flag is no
    suggestion), that keeps
    more slots busy (None when the shape is already good or nothing near is better). It is
    searched when first read (``search`` holds what the search needs): a sweep analyzes
    thousands of shapes and never reads it, and the search is most of a GEMM's analysis.
    """

    efficiency: float
    tile: tuple[int, int]
    tiles: int
    waves: int
    sms: int
    split_k: SplitK | None
    stream_k: bool = False
    #: (m, n, k, candidate tiles, multiple, stream-K GPU, batch count) of the GEMM, for
    #: ``better``
    search: tuple[int, int, int, tuple[tuple[int, int], ...], int, bool, int] | None = field(
        default=None, compare=False, repr=False)

    @property
    def better(self) -> tuple[int, int, int, float] | None:
        if self.search is None or self.effective >= GOOD_EFFICIENCY:
            return None
        m, n, k, tiles, multiple, stream_k, batch = self.search
        return _nearest_better(m, n, k, self.sms, tiles, multiple, self.effective, stream_k,
                               batch)

    @property
    def effective(self) -> float:
        return self.split_k.efficiency if self.split_k else self.efficiency

    @property
    def warns(self) -> bool:
        """Even the best tile leaves over a quarter of the GPU idle (effective efficiency
        below QUANTIZATION_THRESHOLD): worth a warning on a compute-bound GEMM."""
        return self.effective < QUANTIZATION_THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        better = None
        if self.better:
            m, n, k, eff = self.better
            better = {"m": m, "n": n, "k": k, "efficiency": eff}
        return {"efficiency": self.efficiency, "effective_efficiency": self.effective,
                "loss": 1 - self.effective, "tile": list(self.tile), "tiles": self.tiles,
                "waves": self.waves, "sms": self.sms,
                "split_k": self.split_k.to_dict() if self.split_k else None,
                "stream_k": self.stream_k,
                "nearest_better_shape": better}

def best_tile(m: int, n: int, sms: int, tiles: tuple[tuple[int, int], ...],
              stream_k: bool = False, batch: int = 1) -> tuple[float, tuple[int, int]]:
    """(efficiency, tile) of the candidate tile that keeps the most slots busy (the first
    listed on a tie: the larger, more efficient tiles come first in hwdb)."""
    best = max(tiles, key=lambda t: tile_wave_efficiency(m, n, t, sms, stream_k, batch))
    return tile_wave_efficiency(m, n, best, sms, stream_k, batch), best


def split_k(m: int, n: int, k: int, tile: tuple[int, int], sms: int,
            batch: int = 1) -> SplitK | None:
    """Split-K when the output has few tiles (fewer than SMs / 2) and K is long (K >= 4
    max(M, N)): factor = min(SMs // tiles, K // 256) slices, efficiency m n s / (waves' SMs
    tm tn) with waves' = ceil(tiles s / SMs); the FP32 partial sums cost 2 x 4 x s x m x n bytes
    (written, then read by the reduction), all times ``batch`` (outputs in one batched kernel).
    None when the rule does not pick it."""
    count = tile_count(m, n, tile, batch)
    if count * SPLIT_K_TILES_SHARE > sms or k < SPLIT_K_LONG * max(m, n):
        return None
    factor = min(sms // count, k // SPLIT_K_MIN_SLICE)
    if factor < 2:
        return None
    waves = -(-count * factor // sms)
    efficiency = m * n * batch * factor / (waves * sms * tile[0] * tile[1])
    return SplitK(factor, min(1.0, efficiency), 2 * 4 * factor * m * n * batch)


NEAREST_SHAPE_STEPS = 256  # multiples tried on each side of M and of N


@functools.lru_cache(maxsize=4096)
def _nearest_better(m: int, n: int, k: int, sms: int, tiles: tuple[tuple[int, int], ...],
                    multiple: int, current: float, stream_k: bool = False,
                    batch: int = 1) -> tuple[int, int, int, float] | None:
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
            eff, _ = best_tile(*shape, sms, tiles, stream_k, batch)
            if eff >= goal:
                hits.append((abs(candidate - value) / value, (shape[0], shape[1], k, eff)))
                break
            if eff > best[0]:
                best = (eff, (shape[0], shape[1], k, eff))
    return min(hits)[1] if hits else best[1]


def no_tile_model(hardware: HardwareSpec) -> str | None:
    """Why asking for tile/wave quantization changes nothing on ``hardware`` (``quantization_of``
    gives None for every GEMM there), as the report's header says it; None where it applies.
    A CPU has no SMs and no thread-block tiles; a GPU before Volta lists no tiles, the model
    being the Tensor Cores' (``GpuBlock.tiles``)."""
    if not hardware.sms:
        return "a CPU: no tile/wave model (no SMs, no thread-block tiles)"
    if not hardware.tiles:
        return "a GPU before Volta: no tile/wave model (no Tensor Cores)"
    return None


def quantization_of(gemm: Gemm, sms: int | None, tiles: tuple[tuple[int, int], ...],
                    multiple: int = 8, stream_k: bool = False) -> Quantization | None:
    """Tile and wave quantization of ``gemm`` over the candidate tiles, on a GPU that runs
    stream-K when ``stream_k``; None on a CPU (no SMs or tiles) and for a matrix-vector
    product (GEMV kernels, no output tiles)."""
    if not sms or not tiles or is_matrix_vector(gemm):
        return None
    return _quantization(gemm.m, gemm.n, gemm.k, sms, tuple(tiles), multiple, stream_k,
                         gemm.batch_count)


# A deep model repeats a few shapes thousands of times: one (immutable) result per shape.
@functools.lru_cache(maxsize=4096)
def _quantization(m: int, n: int, k: int, sms: int, tiles: tuple[tuple[int, int], ...],
                  multiple: int, stream_k: bool, batch: int) -> Quantization:
    efficiency, tile = best_tile(m, n, sms, tiles, stream_k, batch)
    count = tile_count(m, n, tile, batch)
    split = split_k(m, n, k, tile, sms, batch)
    return Quantization(efficiency, tile, count, -(-count // sms), sms, split,
                        stream_k and count > sms and count % sms > 0,
                        (m, n, k, tiles, multiple, stream_k, batch))
