"""The calibration GEMMs a probe times for ``analysis.predict``: per dtype, small squares, thin
M in cache and with B beyond the LLC, and C's write cost, through the session's library (numpy's
BLAS or torch: ``runner.gemm_kernels``); saved as an entry's ``calibration:`` block
(``hardware.spec.Calibration``), which names that library."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

from .plan import MiB

if TYPE_CHECKING:
    from ..kernels.cpu import Kernel
    from .runner import Session


def calibrate(s: Session, llc_bytes: int | None,
              ceilings_gflops: dict[str, float] | None = None,
              library: dict[str, Any] | None = None) -> None:
    """The GEMMs analysis.predict calibrates from, per dtype: small squares, thin M in cache
    and with B beyond the LLC, and C's write cost (a small-K GEMM whose C is beyond the LLC);
    see hardware.spec.Calibration. ``library``: what they go through (``identify.numpy_library``
    or ``torch_library``), written into the block."""
    from ..analysis.predict import CALIBRATION_VERSION

    p, gflops = s.plan, s.measured["gemm_gflops"]
    s.say("calibration GEMMs (small, thin in and out of cache, small K) ...")
    ceilings = ceilings_gflops or {}
    efficiency = {dtype: _dtype_calibration(s, dtype, gflops[dtype] * 1e9, llc_bytes,
                                            ceilings.get(dtype, 0.0) * 1e9)
                  for dtype in p.gemm_sizes if gflops.get(dtype)}
    s.measured["calibration"] = {"version": CALIBRATION_VERSION} | (
        {"library": _known(library)} if library else {}) | {
        "call_overhead_s": s.measured["small_gemm_overhead_s"], "gemm_efficiency": efficiency}


def _dtype_calibration(s: Session, dtype: str, peak: float, llc_bytes: int | None,
                       ceiling: float = 0.0) -> dict:
    """One dtype's calibration block. A GEMM's efficiency is its work over (its best time less
    the per-call overhead) as a share of the measured ``peak``; its math cannot outrun the
    theoretical ``ceiling`` (or the measured peak, whichever is higher), so that time is never
    taken below work / ceiling: a small GEMM timed at or under the overhead (the two timed at
    different moments of a busy machine) is charged the overhead plus its work at the ceiling,
    not an efficiency of millions, and a warning says which sizes were held there."""
    from ..analysis.predict import c_write_passes
    from ..model.dtypes import itemsize
    from .result import Note
    from .runner import gemm_kernels

    kernels = gemm_kernels(s.library)
    shaped_gemm_kernel, thin_gemm_kernels = kernels.shaped_gemm_kernel, kernels.thin_gemm_kernels
    fastest = max(ceiling, peak)
    held: list[str] = []

    p, call_s = s.plan, s.measured["small_gemm_overhead_s"]
    e, beyond = itemsize(dtype), p.cal_llc_factor * (llc_bytes or 32 * MiB)
    spare = available_memory() / 4

    def eff(kernel: Kernel) -> float:
        stats = s.time(kernel, 1e9, p.cal_min_time_s, p.cal_repeats)
        value, at_ceiling = gemm_efficiency(kernel.work, stats["best_s"], call_s, peak, fastest)
        if at_ceiling:
            held.append(kernel.label)
        return _sig(value)

    def thin(nk: int) -> dict[str, float]:
        kernels = thin_gemm_kernels(p.cal_thin_m, nk, dtype)
        return {str(m): eff(k) for m, k in zip(p.cal_thin_m, kernels)}

    square = {str(n): eff(shaped_gemm_kernel(n, n, n, dtype)) for n in p.cal_square}
    dram_nk = p.cal_thin_dram_nk or _round_up(math.sqrt(min(beyond, spare) / e), 512)
    block = {"square": square, "thin": thin(p.cal_thin_nk), "thin_nk": p.cal_thin_nk,
             "thin_dram": thin(dram_nk), "thin_dram_nk": dram_nk,
             "peak_n": s.details[f"gemm_{dtype}"]["best_n"]}
    n, k = p.cal_c_n, p.cal_c_k
    m = p.cal_c_m or _round_up(min(beyond, spare) / (e * n), 1024)
    stats = s.time(shaped_gemm_kernel(m, n, k, dtype), 1e9, p.cal_min_time_s, p.cal_repeats)
    passes = c_write_passes(stats["best_s"], m, n, k, dtype, call_s, peak, block,
                            s.measured["bandwidth_gbs"]["dram"] * 1e9)
    block["c_write"] = {"passes": _sig(passes), "m": m, "n": n, "k": k, "time_s": stats["best_s"]}
    if held:
        s.warnings.append(Note("calibration_at_ceiling", {
            "dtype": dtype, "kernels": ", ".join(held), "overhead_us": call_s * 1e6}))
    s.say(f"  {dtype} efficiency: squares {square}; thin M (N = K = {p.cal_thin_nk}) "
          f"{block['thin']}, (N = K = {dram_nk}, beyond the LLC) {block['thin_dram']}; "
          f"C write ({m}x{n}x{k}): {passes:.2f} passes of C at DRAM speed")
    return block


def gemm_efficiency(work: float, best_s: float, call_s: float, peak: float,
                    fastest: float) -> tuple[float, bool]:
    """A calibration GEMM's efficiency, work / (best_s - call_s) / peak, with the math's time
    never taken below work / fastest (the higher of the theoretical ceiling and the measured
    peak); and whether that floor held it."""
    floor = work / fastest
    math_s = best_s - call_s
    return work / max(math_s, floor) / peak, math_s < floor


def _known(library: dict[str, Any]) -> dict[str, Any]:
    """A calibration's ``library`` block: the keys whose value is known (the schema takes no
    nulls)."""
    return {key: value for key, value in library.items() if value is not None}


def _round_up(value: float, step: int) -> int:
    return max(step, int(math.ceil(value / step)) * step)


def _sig(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def available_memory() -> float:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def gpu_calibration(s: Session, backend: Any) -> dict[str, Any]:
    """A GPU's ``calibration:`` block (version 4: ``hardware.spec.GpuOpsCalibration``, and the
    ``library``, the backend and its version, whose GEMMs are cuBLAS's), fitted
    against what the saved entry holds: its peaks are the best GEMM rates measured here and its
    bandwidth the device copy measured here, so the sustained shares of both are 1 by
    construction (a large GEMM or copy runs at the entry's figure); measured: ``min_kernel_s``,
    the time of one small GEMM (n = ``plan.gpu_cal_gemm_n``) back to back, and ``launch_s``, the
    time of one small device copy (``plan.gpu_cal_copy_bytes``) back to back."""
    from ..analysis.predict import CALIBRATION_VERSION

    p = s.plan
    library = {"name": backend.name, "version": backend.version, "blas": "cuBLAS"}
    dtype = next((d for d in ("fp16", "bf16", "fp32") if d in backend.dtypes),
                 backend.dtypes[0])
    gemm = s.time(backend.gemm(p.gpu_cal_gemm_n, dtype), 1e9)
    copy = s.time(backend.device_copy(p.gpu_cal_copy_bytes), 1e9)
    block = {"dram_fraction": 1.0, "launch_s": _sig(copy["best_s"]),
             "tensor_core_fraction": 1.0, "cuda_core_fraction": 1.0,
             "min_kernel_s": _sig(gemm["best_s"])}
    s.say(f"  calibration: smallest GEMM ({p.gpu_cal_gemm_n}^3 {dtype}) "
          f"{gemm['best_s'] * 1e6:.3g} us, small copy ({p.gpu_cal_copy_bytes} B) "
          f"{copy['best_s'] * 1e6:.3g} us per kernel")
    return {"version": CALIBRATION_VERSION, "library": library, "gpu": block}
