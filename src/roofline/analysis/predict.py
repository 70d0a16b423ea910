"""The time to expect for one GEMM (``predicted_time_s``), beside the pure roofline bound.

The roofline time ``max(FLOPs / peak, bytes / bandwidth)`` is a bound: no GEMM runs faster
than it from DRAM. Real GEMMs run slower, for reasons the roofline leaves out; this module adds
them, in one of three ways, and says which (``Prediction.basis``):

``fitted`` (a GPU entry without a probe calibration). The GPU GEMM model of
``analysis.gpu_gemm``: tiles, waves, split-K, stream-K on Hopper and Blackwell Tensor-Core
GEMMs, per-SM bandwidth, the main loop, sustained
fractions of the peak, a minimum kernel time and L2-resident operands, with constants fitted on
public measurements (``gpu_gemm.FITTED`` names them; ``fit_of`` says whether this entry's
architecture is among them).

``calibrated`` on a GPU (a GPU entry whose ``calibration:`` block holds ``gpu``, version 3):
the GPU GEMM model with the probe's own constants in place of ``FITTED``'s sustained
fractions, DRAM share and minimum kernel time (``calibrated_constants``; the per-SM rate and the
tile overhead stay the fitted ones, which the probe does not measure).

``calibrated`` on a CPU (a measured entry whose ``calibration:`` block the probe wrote, method 3
on), through the library the probe timed its GEMMs with (``library_of``: numpy's BLAS, or torch
with ``probe --library torch``; a block older than calibration version 4 is numpy's). For one
call of C(M, N) = A(M, K) . B(K, N), element sizes e (A, B) and e_C (C), peak P (the best large
GEMM the probe measured), DRAM bandwidth BW (the probe's read stream), last-level
cache L (``llc_mb``); a GEMM is *resident* when its working set ``e(MK + KN) + e_C MN`` fits
in L::

    t = G x (t_call + max(t_flop, t_ab) + t_c)

- ``t_call``: the per-call overhead, the probe's 8x8x8 GEMM time (Python, numpy's or torch's
  dispatch, the BLAS's thread wake-up). Paid by every call whatever its size.
- ``t_flop = 2MNK / (P x eff)``: ``eff = eff_square(s)``, ``s = (MNK)^(1/3)``; for a thin
  GEMM (``r = min(M, N)`` at most a quarter of ``max(M, N, K)``) ``min(eff_square(s),
  eff_thin(r))``. ``eff_square`` interpolates, linearly in log s, the efficiencies the
  probe measured for small n^3 GEMMs (n = 32..512) and 1.0 at the size the peak was measured
  at. ``eff_thin`` does the same for r x n_t x n_t GEMMs (r = 1..64, then ``eff_square(n_t)``
  at r = n_t), measured twice: with n_t = 1024, B in cache (register tiles not filled, B
  packed from cache), for a resident GEMM; and with n_t sized so that B is 3x the LLC
  (``thin_dram``), for one that is not: there B is read from DRAM while it is packed, at a
  rate no read stream shows (for M = 1, a GEMV, at the BLAS's GEMV speed), and both the
  packing and the streaming scale with N x K as the FLOPs do, so the efficiency carries over
  to other N and K. Tables are clamped to their end values outside the measured range.
  Efficiencies are measured after ``t_call``, so the two terms add up to what the probe timed.
- ``t_ab = (e MK + e KN) / BW`` unless resident, else 0 (cache-resident operands: the
  in-cache efficiencies above already hold their cost; such a GEMM may beat the DRAM roofline,
  and ``time_s`` stays the DRAM bound); nor where ``eff_thin`` came from ``thin_dram`` for a
  GEMM repeated back to back (a lone GEMM, not one in a step): that table timed B's read from
  DRAM at the BLAS's own rate, repeated as such a GEMM runs, so ``t_flop`` already holds it. A
  BLAS GEMV can beat the read stream there (on the development VM 38-47 GB/s against 28-36:
  part of B stays in a cache that keeps some of a stream it cannot hold), and a floor at BW
  put 1 x 4096 x 4096 fp32 at 0.63-0.79 of its measured time. In a step, which reads its
  weights once, the floor stays. In a step that keeps more than L (``analysis.residency``)
  a resident GEMM still reads its kept B (a weight, the KV cache: S bytes) from DRAM:
  ``t_ab = S / BW``, and where S is most of its working set and M is its thin side within the
  beyond-the-LLC table's rows (M up to 64, where the probe timed B read from DRAM while
  packed), ``eff_thin`` comes from that table; elsewhere the in-cache efficiency stands (no
  table measured the case between). A weight gradient's C (the gradient, kept until the
  update) is written to DRAM as a non-resident C is: ``t_c`` below on its bytes.
- ``t_c = passes x e_C MN / BW`` unless resident, else 0: C's real traffic (write-allocate,
  the zero-fill pass of beta = 0) that does not overlap the compute, in passes over C at
  DRAM speed, from a small-K GEMM the probe times per dtype (``c_write``; calibration version
  1 had one figure, from fp32, for every dtype).
- ``G`` = ``batch_count`` (a batched GEMM as G calls).

``datasheet`` (a CPU entry from the datasheet, or a measured CPU entry without calibration,
method 2 and older: the report says so). Documented effects only, nothing fitted (before 0.4.0
GPU entries were predicted this way too; ``datasheet_gemm`` keeps it for comparison)::

    t = t_launch + max(FLOPs / (P x q), bytes / BW)

- ``q``: tile and wave quantization, the effective efficiency of the best candidate tile
  after split-K (``quantization.Quantization.effective``, a batched GEMM's G outputs as one
  kernel's tiles); 1 on a CPU or without tiles.
- ``t_launch``: on a GPU, ``LAUNCH_LATENCY_S`` per kernel (NVIDIA's figure, see there); on a
  CPU none is documented, so none is added.

Only the standard library is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from ..model.dtypes import bits
from ..model.dtypes import itemsize as element_size

if TYPE_CHECKING:
    from ..hardware.spec import GemmEfficiency, GpuOpsCalibration, HardwareSpec
    from ..model.gemm import Gemm
    from .gpu_gemm import GpuDevice, GpuGemmConstants
    from .quantization import Quantization
    from .report import Report

#: What an entry's ``calibration:`` block holds; its history is in CHANGES.md.
CALIBRATION_VERSION = 5

# NVIDIA, "Getting Started with CUDA Graphs" (developer.nvidia.com/blog/cuda-graphs/, 2019):
# a 2.9 us kernel launched back to back in one stream took 3.8 us per kernel, i.e. about 1 us
# of launch overhead each that the GPU does not hide. Uncalibrated: one figure for every GPU.
LAUNCH_LATENCY_S = 0.9e-6
LAUNCH_SOURCE = "https://developer.nvidia.com/blog/cuda-graphs/"

BASES = ("calibrated", "fitted", "datasheet")


@dataclass(frozen=True)
class Prediction:
    """``time_s`` for all ``batch_count`` calls, the ``basis``, and each term (one call)."""

    time_s: float
    basis: str
    terms: dict[str, float]


def basis_of(hardware: HardwareSpec) -> str:
    """``calibrated`` when the entry carries a probe calibration, else ``fitted`` on a GPU
    (the GPU GEMM model and its fitted constants), else ``datasheet``."""
    if hardware.calibration is not None:
        return "calibrated"
    return "fitted" if hardware.kind == "gpu" and hardware.gpu is not None else "datasheet"


def predicts(hardware: HardwareSpec) -> bool:
    """Whether an entry predicts beyond its roofline: a ``fitted`` or ``calibrated`` basis. A
    ``datasheet`` entry's predicted time is its roofline, with no per-call or per-kernel cost,
    so it is not set against another device's prediction nor drawn as a curve of its own."""
    return basis_of(hardware) != "datasheet"


def fit_of(hardware: HardwareSpec) -> dict[str, Any] | None:
    """What a ``fitted`` prediction was fitted on: ``data`` (the measurements, named),
    ``devices`` (hwdb entries they were measured on) and ``architecture_in_data`` (whether
    this entry's architecture is among theirs); and ``clock``, the SM clock it runs the device
    at (``ghz``; ``basis`` ``sustained``: the clock the entry says the board holds through a
    long GEMM, ``gpu.sustained_clock_ghz``; ``boost``: its boost clock, the entry giving no
    sustained one; ``boost_ghz``); None for another basis."""
    if basis_of(hardware) != "fitted":
        return None
    from .gpu_gemm import FITTED

    gpu = hardware.gpu
    assert gpu is not None  # basis_of: fitted is a GPU entry's
    sustained = gpu.sustained_clock_ghz
    clock = {"ghz": sustained or gpu.boost_clock_ghz,
             "basis": "sustained" if sustained else "boost", "boost_ghz": gpu.boost_clock_ghz}
    return {"data": FITTED.data, "devices": list(FITTED.devices),
            "architecture_in_data": hardware.architecture in FITTED.architectures,
            "clock": clock}


def library_of(hardware: HardwareSpec) -> dict[str, Any] | None:
    """What a ``calibrated`` prediction's GEMMs were timed through (``Calibration.through``):
    ``name``, ``version``, ``blas``, ``threads`` (None where not known) and ``recorded``
    (False for a CPU block older than calibration version 4, numpy's BLAS by definition);
    None for another basis, or a GPU calibration that does not say."""
    calibration = hardware.calibration
    library = calibration.through if calibration is not None else None
    if calibration is None or library is None:
        return None
    return {"name": library.name, "version": library.version, "blas": library.blas,
            "threads": library.threads, "recorded": calibration.library is not None}


def library_mismatch(hardware: HardwareSpec, framework: str | None) -> str | None:
    """The library a CPU calibration was timed through when the model runs in another one
    (``framework``: ``Network.framework``, torch for a capture): numpy's BLAS and torch's
    GEMMs differ by 1.0-1.7x per shape on one CPU. None when they agree, or nothing says."""
    library = library_of(hardware)
    if framework is None or library is None or library["name"] != "numpy":
        return None
    return library["name"] if framework != library["name"] else None


def predict_gemm(gemm: Gemm, hardware: HardwareSpec, tiles: Quantization | None = None,
                 weights_from_dram: bool = False, k_major: bool = False) -> Prediction:
    """The time to expect for ``gemm`` on ``hardware`` (see the module docstring). With
    ``weights_from_dram`` (a step that keeps more than the cache: ``analysis.residency``) its
    kept operands (``Gemm.kept_operands``: a weight, the KV cache, a weight gradient) are read
    or written in DRAM even when it fits in the cache; without, a timing loop's warm cache.
    ``k_major``: on a GPU, as if A and B were both K-major (``strided_gemms``)."""
    calibration = hardware.calibration
    if calibration is not None and gemm.dtype in calibration.efficiency:
        return _calibrated(gemm, hardware, weights_from_dram)
    if hardware.kind == "gpu" and hardware.gpu is not None:
        if calibration is not None and calibration.gpu_ops is not None:
            kernel = fitted_gemm(gemm, hardware, calibrated_constants(calibration.gpu_ops),
                                 "calibrated", weights_from_dram, k_major)
        else:
            kernel = fitted_gemm(gemm, hardware, weights_from_dram=weights_from_dram,
                                 k_major=k_major)
        return _with_transposes(kernel, gemm, hardware)
    return datasheet_gemm(gemm, hardware, tiles)


def added_transposes_s(gemm: Gemm, hardware: HardwareSpec) -> float:
    """The seconds of cuDNN's NCHW transposes ``predict_gemm`` adds to ``gemm``'s kernel on
    ``hardware`` (``analysis.gpu_layout``): on a GPU entry not calibrated through per-dtype
    efficiencies; 0 elsewhere."""
    from .gpu_layout import transpose_s

    calibration = hardware.calibration
    if calibration is not None and gemm.dtype in calibration.efficiency:
        return 0.0
    if hardware.kind != "gpu" or hardware.gpu is None:
        return 0.0
    return transpose_s(gemm, hardware)


def added_narrow_channels_s(gemm: Gemm, hardware: HardwareSpec) -> float:
    """The seconds ``predict_gemm`` adds to a convolution's GEMM of fewer than 16 input
    channels, to hold it to the CUDA cores' rate (``gpu_conv_channels``; its term
    ``narrow_channels_s``), on a GPU entry not calibrated through per-dtype efficiencies; 0
    elsewhere (only ``fitted_gemm`` sets the term): what a bare GEMM of its shape, as
    ``--measure`` times it, does not run."""
    return float(predict_gemm(gemm, hardware).terms.get("narrow_channels_s", 0.0))


def _with_transposes(kernel: Prediction, gemm: Gemm, hardware: HardwareSpec) -> Prediction:
    """``kernel`` with the time cuDNN spends transposing a convolution's NCHW maps around it on
    this GPU added (``added_transposes_s``; its term ``transpose_s``), where it does."""
    extra = added_transposes_s(gemm, hardware)
    if not extra:
        return kernel
    return Prediction(kernel.time_s + extra, kernel.basis,
                      kernel.terms | {"transpose_s": extra})


def calibrated_constants(gpu: GpuOpsCalibration) -> GpuGemmConstants:
    """``gpu_gemm.FITTED`` with what a probe on this GPU measured in its place."""
    from .gpu_gemm import FITTED

    return replace(FITTED, tensor_core_fraction=gpu.tensor_core_fraction,
                   cuda_core_fraction=gpu.cuda_core_fraction, min_kernel_s=gpu.min_kernel_s,
                   dram_fraction=gpu.dram_fraction, data="this GPU's probe", devices=(),
                   architectures=())


def fitted_gemm(gemm: Gemm, hardware: HardwareSpec, constants: GpuGemmConstants | None = None,
                basis: str = "fitted", weights_from_dram: bool = False,
                k_major: bool = False) -> Prediction:
    """The GPU GEMM model (``analysis.gpu_gemm``) with its fitted constants (or a GPU
    calibration's, ``basis`` calibrated); ``k_major``: A and B taken as K-major whatever
    ``gemm.operand_rows`` says."""
    from .gpu_conv_channels import narrow_channels_s
    from .gpu_gemm import FITTED, WEIGHT_ONLY_TILES, device_for, gemm_time

    e_b = bits(gemm.stored_b) / 8 if gemm.b_dtype else None
    dequant = 2.0 if gemm.b_dtype else 0.0  # FLOPs per element of B (Gemm.dequant_flops)
    device = device_for(hardware, gemm.dtype)
    if gemm.b_dtype and device.tensor_core:  # a weight-only kernel's thin tiles too
        device = replace(device, tiles=device.tiles + WEIGHT_ONLY_TILES)
    layout = kernel_layout(gemm) | ({"strided": 0} if k_major else {})
    terms = gemm_time(gemm.m, gemm.n, gemm.k, element_size(gemm.dtype), gemm.batch_count,
                      gemm.bytes, gemm.bytes_by_operand["c"], device,
                      constants or FITTED,
                      e_b=e_b, dequant=dequant,
                      kept=gemm.kept_bytes if weights_from_dram else 0, **layout)
    floor = narrow_channels_s(gemm, hardware, device, constants or FITTED)
    if floor > terms["time_s"]:  # a 3-channel stem's, no faster than CUDA cores: what it adds
        terms = terms | {"time_s": floor, "narrow_channels_s": floor - terms["time_s"]}
    return Prediction(terms["time_s"], basis, terms)


def kernel_layout(gemm: Gemm) -> dict[str, Any]:
    """What of ``gemm``'s rows and operand layout decides the kernel a GPU runs it with, as
    ``gpu_gemm.gemm_time`` takes it (``layout_share``'s inputs, which a GPU that does not care
    ignores): its worst row (``slow_row_bytes``), whether C's are the only rows off
    (``alignment.misaligned_c_only``), how many of A and B are not K-major
    (``alignment.strided_operands``)."""
    from .alignment import misaligned_c_only, strided_operands

    return {"row_bytes": slow_row_bytes(gemm), "strided": strided_operands(gemm),
            "c_only": misaligned_c_only(gemm)}


def slow_row_bytes(gemm: Gemm) -> int:
    """The row alignment (``alignment.row_alignment_bytes``) that slows ``gemm`` on a GPU whose
    kernels need 16-byte rows: its own, but 16 for fp8, which no older kernel runs: cuBLASLt
    refuses an fp8 GEMM off 16 bytes (an ``error`` alignment note says what to pad), so it
    runs padded or not at all, and is predicted at the aligned kernels' rate."""
    from .alignment import row_alignment_bytes

    return 16 if gemm.dtype == "fp8" else row_alignment_bytes(gemm)


class Slowed(NamedTuple):
    """The GEMMs of a report that a kernel choice slows (``misaligned_rows``,
    ``strided_gemms``): ``names``, those a table lists (every one, or of a repeat the first
    copy's), ``gemms``, how many in all (every copy), and their predicted time in all,
    ``now_s``, and ``other_s`` without what slows them."""

    names: list[str]
    gemms: int
    now_s: float
    other_s: float


NOTHING_SLOWED = Slowed([], 0, 0.0, 0.0)


def misaligned_rows(report: Report) -> Slowed:
    """The GEMMs of ``report`` that its GPU runs slower for rows off 16 bytes
    (``gpu_gemm.misaligned_share`` below 1), their predicted time as they are, and as padded
    to the 16-byte rule (``alignment.padded_rows``, predicted as the report predicts them)."""
    from .alignment import padded_rows
    from .gpu_gemm import TMA_ARCHITECTURES, misaligned_share

    if report.hardware.architecture not in TMA_ARCHITECTURES:
        return NOTHING_SLOWED  # no other architecture loads through TMA
    return _repredicted(
        report, lambda gemm, dev: misaligned_share(dev, slow_row_bytes(gemm)) < 1.0,
        lambda shape, from_dram: predict_gemm(padded_rows(shape), report.hardware,
                                              weights_from_dram=from_dram))


def strided_gemms(report: Report) -> Slowed:
    """The GEMMs of ``report`` that its GPU runs slower because A or B is not K-major
    (``gpu_gemm.K_MAJOR_ONLY``: TF32 on Hopper), their predicted time as they are, and as
    predicted were both K-major."""
    from .alignment import strided_operands
    from .gpu_gemm import K_MAJOR_ONLY

    if report.hardware.architecture not in K_MAJOR_ONLY:
        return NOTHING_SLOWED
    return _repredicted(
        report, lambda gemm, dev: dev.k_major_only and strided_operands(gemm) > 0,
        lambda shape, from_dram: predict_gemm(shape, report.hardware,
                                              weights_from_dram=from_dram, k_major=True))


def _repredicted(report: Report, pays: Callable[[Gemm, GpuDevice], bool],
                 otherwise: Callable[[Gemm, bool], Prediction]) -> Slowed:
    """``report``'s GEMMs for which ``pays`` (the GEMM, its dtype's ``gpu_gemm.GpuDevice``)
    holds, with their predicted time and the time ``otherwise`` predicts for them (a shape,
    whether the step reads its weights from DRAM), once per shape. A repeat's copies are
    summed run by run (``model.repeats.float_total``) and named by its first copy, as a table
    lists them: a million repeated blocks take as long as one."""
    from ..model.repeats import distinct, float_total, int_total, named
    from .gpu_gemm import device_for

    hardware, results = report.hardware, report.results
    if hardware.kind != "gpu" or hardware.gpu is None:
        return NOTHING_SLOWED  # device_for needs a GPU
    from_dram = report.residency is not None and report.residency.from_dram
    devices = {dtype: device_for(hardware, dtype)
               for dtype in {r.gemm.dtype for r in distinct(results)}}

    def keep(r: Any) -> bool:
        return pays(r.gemm, devices[r.gemm.dtype])

    seen: dict[Gemm, float] = {}  # one prediction per shape: a deep model repeats its layers

    def other(r: Any) -> float:
        shape = replace(r.gemm, name="", layer="", copy=0)
        if shape not in seen:
            seen[shape] = otherwise(shape, from_dram).time_s
        return seen[shape]

    names = [name for name, _, _, r in named(results, lambda r: r.gemm, firsts=True)
             if keep(r)]
    return Slowed(names, int_total(results, lambda r: int(keep(r))),
                  float_total(results, lambda r: r.predicted_time_s, keep),
                  float_total(results, other, keep))


def datasheet_gemm(gemm: Gemm, hardware: HardwareSpec,
                   tiles: Quantization | None) -> Prediction:
    """Roofline with tile/wave quantization and, on a GPU, a launch latency per kernel."""
    peak = hardware.peak_flops_per_s(gemm.dtype)
    q = tiles.effective if tiles is not None else 1.0
    launch = LAUNCH_LATENCY_S if hardware.kind == "gpu" else 0.0
    g = gemm.batch_count
    flop_s = gemm.flops / g / (peak * q)
    memory_s = gemm.bytes / g / hardware.bandwidth_bytes_per_s
    return Prediction(g * (launch + max(flop_s, memory_s)), "datasheet",
                      {"launch_s": launch, "flop_s": flop_s, "memory_s": memory_s,
                       "quantization": q})


def interpolate(table: tuple[tuple[int, float], ...], x: float) -> float:
    """Linear in log x between the (size, value) rows of ``table``; clamped at both ends."""
    if x <= table[0][0]:
        return table[0][1]
    for (x0, y0), (x1, y1) in zip(table, table[1:]):
        if x <= x1:
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + t * (y1 - y0)
    return table[-1][1]


def efficiency(eff: GemmEfficiency, m: int, n: int, k: int, resident: bool = True) -> float:
    """``eff_square((MNK)^(1/3))``, and for a thin GEMM (min(M, N) <= max(M, N, K) / 4) the
    smaller of that and ``eff_thin(min(M, N))``, from the in-cache table for a ``resident``
    GEMM and the beyond-the-LLC one (when measured) for another (module docstring)."""
    square = _with_peak(eff.square, eff.peak_n)
    square_eff = interpolate(square, (m * n * k) ** (1 / 3))
    if 4 * min(m, n) > max(m, n, k):
        return square_eff
    rows, nk = eff.thin, eff.thin_nk
    if not resident and eff.thin_dram:
        rows, nk = eff.thin_dram, eff.thin_dram_nk
    thin = dict(rows)
    if nk > rows[-1][0]:
        thin[nk] = interpolate(square, nk)
    return min(square_eff, interpolate(tuple(sorted(thin.items())), min(m, n)))


def _with_peak(square: tuple[tuple[int, float], ...], peak_n: int) -> tuple:
    if peak_n <= square[-1][0]:
        return square
    return square + ((peak_n, 1.0),)


def gemm_terms(m: int, n: int, k: int, e: int, e_c: int, peak: float, eff: GemmEfficiency,
               bandwidth: float, llc_bytes: float | None, c_passes: float,
               kept_b: int = 0, kept_c: int = 0, repeated: bool = True) -> dict[str, float]:
    """The calibrated terms of one call (seconds), without ``t_call``; ``kept_b`` and
    ``kept_c``: the bytes of B and of C one call reads or writes in DRAM even when the working
    set fits in the LLC; ``repeated``: the GEMM runs back to back, as the probe timed it (a lone
    GEMM), not once in a step (module docstring)."""
    working_set = e * (m * k + k * n) + e_c * m * n
    resident = llc_bytes is not None and working_set <= llc_bytes
    # a resident GEMM whose kept B is most of its working set reads it from DRAM as the
    # beyond-the-LLC table measured, where it measured (M the thin side, up to its last row)
    measured = bool(eff.thin_dram) and m <= min(n, eff.thin_dram[-1][0])
    from_dram = not resident or (2 * kept_b >= working_set and measured)
    flop_s = 2.0 * m * n * k / (peak * efficiency(eff, m, n, k, not from_dram))
    # the beyond-the-LLC table timed this GEMM's B read from DRAM, repeated: t_flop holds it
    timed_as_is = repeated and not resident and measured and 4 * m <= max(n, k)
    ab_s = 0.0 if timed_as_is else (kept_b if resident else e * (m * k + k * n)) / bandwidth
    c_s = c_passes * (kept_c if resident else e_c * m * n) / bandwidth
    return {"flop_s": flop_s, "ab_s": ab_s, "c_s": c_s, "resident": float(resident)}


def _calibrated(gemm: Gemm, hardware: HardwareSpec, weights_from_dram: bool = False
                ) -> Prediction:
    cal = hardware.calibration
    assert cal is not None  # predict_gemm chose this path because the entry has one
    e, e_c = element_size(gemm.dtype), element_size(gemm.c_dtype)
    llc = hardware.llc_mb * 2**20 if hardware.llc_mb else None
    eff = cal.efficiency[gemm.dtype]
    passes = eff.c_write_passes if eff.c_write_passes is not None else cal.c_write_passes
    held = gemm.kept_operands if weights_from_dram else {}
    terms = gemm_terms(gemm.m, gemm.n, gemm.k, e, e_c, hardware.peak_flops_per_s(gemm.dtype),
                       eff, hardware.bandwidth_bytes_per_s, llc, passes or 0.0,
                       held.get("b", 0) // gemm.batch_count, held.get("c", 0) // gemm.batch_count,
                       repeated=not weights_from_dram)
    one = cal.call_overhead_s + max(terms["flop_s"], terms["ab_s"]) + terms["c_s"]
    return Prediction(gemm.batch_count * one, "calibrated",
                      terms | {"call_s": cal.call_overhead_s})


def c_write_passes(time_s: float, m: int, n: int, k: int, dtype: str, call_s: float,
                   peak: float, eff: dict[str, Any], bandwidth: float) -> float:
    """C's cost, in passes over C at DRAM speed, from one timed small-K GEMM (beta = 0) whose
    C is beyond the LLC: ``(t - t_call - max(t_flop, t_ab)) x BW / (e_C MN)``, at least 0."""
    from ..hardware.spec import GemmEfficiency

    dram = eff.get("thin_dram")
    table = GemmEfficiency(_rows(eff["square"]), _rows(eff["thin"]), eff["thin_nk"],
                           eff["peak_n"], _rows(dram) if dram else (),
                           eff.get("thin_dram_nk", 0))
    e = element_size(dtype)
    terms = gemm_terms(m, n, k, e, e, peak, table, bandwidth, None, 0.0)
    left = time_s - call_s - max(terms["flop_s"], terms["ab_s"])
    return max(0.0, left * bandwidth / (e * m * n))


def _rows(table: dict[str, float]) -> tuple[tuple[int, float], ...]:
    return tuple(sorted((int(size), value) for size, value in table.items()))
