"""The calibration GEMMs a probe times for ``analysis.predict``: per dtype, small squares, thin
M in cache and with B beyond the LLC, and C's write cost, through the session's library (numpy's
BLAS or torch: ``runner.gemm_kernels``); saved as an entry's ``calibration:`` block
(``hardware.spec.Calibration``), which names that library."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .plan import MiB

#: The rounds time the peak at the smallest size the peak search timed within this share of
#: its best rate (``_peak_n``).
PEAK_SIZE_SHARE = 0.97

if TYPE_CHECKING:
    from ..kernels.cpu import Kernel
    from .runner import Session


def calibrate(s: Session, llc_bytes: int | None,
              ceilings_gflops: dict[str, float] | None = None,
              library: dict[str, Any] | None = None) -> None:
    """The GEMMs analysis.predict calibrates from, per dtype: small squares, thin M in cache
    and with B beyond the LLC, and C's write cost (a small-K GEMM whose C is beyond the LLC);
    see hardware.spec.Calibration. ``library``: what they go through (``identify.numpy_library``
    or ``torch_library``), written into the block.

    All of them, with a large GEMM per dtype and the DRAM read stream, are timed in rounds
    (``rounds.RoundRobin``, ``plan.cal_rounds``; more, up to ``plan.cal_extra_rounds``, while
    a figure contradicts its neighbours or no round ran on an otherwise idle machine:
    ``calibrate_rounds.time_rounds``), each kernel's figure its best over them: one slow spell
    of a shared machine slows a round, not a figure. The peak and the DRAM figure become the
    best of their own measurement and of the rounds, so that every figure the prediction
    reads is a best over the same span."""
    from ..analysis.predict import CALIBRATION_VERSION
    from .calibrate_rounds import time_rounds

    p, gflops = s.plan, s.measured["gemm_gflops"]
    s.say("calibration GEMMs (small, thin in and out of cache, small K), "
          f"{p.cal_rounds} rounds ...")
    ceilings = ceilings_gflops or {}
    kernels = calibration_kernels(s, [d for d in p.gemm_sizes if gflops.get(d)], llc_bytes)
    best = time_rounds(s, kernels, ceilings)
    efficiency = {dtype: _dtype_calibration(s, dtype, kernels, best,
                                            ceilings.get(dtype, 0.0) * 1e9)
                  for dtype in dict.fromkeys(k.dtype for k in kernels if k.dtype)}
    s.measured["calibration"] = {"version": CALIBRATION_VERSION} | (
        {"library": _known(library)} if library else {}) | {
        "call_overhead_s": s.measured["small_gemm_overhead_s"], "gemm_efficiency": efficiency}


@dataclass(frozen=True)
class CalKernel:
    """One kernel of the calibration rounds: ``kind`` is ``peak`` (a large square GEMM of
    ``dtype``, n = ``size``), ``square`` (n), ``thin`` or ``thin_dram`` (M; N = K = ``nk``),
    ``c_write`` (M = ``size``, N x K = ``nk`` x ``k``) or ``dram`` (the read stream, no
    dtype)."""

    dtype: str | None
    kind: str
    size: int
    kernel: Kernel
    nk: int = 0
    k: int = 0


def calibration_kernels(s: Session, dtypes: list[str], llc_bytes: int | None) -> list[CalKernel]:
    """Every kernel the rounds time, built (and checked) once: per dtype a large GEMM, the
    squares, the thin GEMMs in cache and beyond the LLC, C's write; then the read stream."""
    from ..kernels.cpu import read_stream_kernel
    from ..model.dtypes import itemsize
    from .runner import gemm_kernels

    p, out = s.plan, []
    make = gemm_kernels(s.library)
    beyond = p.cal_llc_factor * (llc_bytes or 32 * MiB)
    spare = available_memory() / 10  # two dtypes' operands and the read stream live together
    for dtype in dtypes:
        e = itemsize(dtype)
        out.append(CalKernel(dtype, "peak", _peak_n(s, dtype),
                             make.gemm_kernel(_peak_n(s, dtype), dtype)))
        out += [CalKernel(dtype, "square", n, make.shaped_gemm_kernel(n, n, n, dtype))
                for n in p.cal_square]
        side = _round_up(math.sqrt(min(beyond, spare) / e), 512)  # a square of that size
        dram_nk = p.cal_thin_dram_nk or side
        for kind, nk in (("thin", p.cal_thin_nk), ("thin_dram", dram_nk)):
            out += [CalKernel(dtype, kind, m, kernel, nk) for m, kernel in
                    zip(p.cal_thin_m, make.thin_gemm_kernels(p.cal_thin_m, nk, dtype))]
        m, n = p.cal_c_m or side, p.cal_c_n or side
        out.append(CalKernel(dtype, "c_write", m, make.shaped_gemm_kernel(m, n, p.cal_c_k, dtype),
                             n, p.cal_c_k))
    read = s.details.get("dram_read", {}).get("working_set_bytes")
    if read:
        out.append(CalKernel(None, "dram", read, read_stream_kernel(read // 8, _threads())))
    return out


def _peak_n(s: Session, dtype: str) -> int:
    """The size the rounds time for the peak: the smallest size the peak search timed within
    ``PEAK_SIZE_SHARE`` of its best rate (one call of the best, often the largest, size can
    take half a second)."""
    sizes = s.details[f"gemm_{dtype}"]["sizes"]
    best = max(stats["best"] for stats in sizes.values())
    return min(int(n) for n, stats in sizes.items() if stats["best"] >= PEAK_SIZE_SHARE * best)


def _threads() -> int:
    from .identify import usable_cpus

    return len(usable_cpus())


def _dtype_calibration(s: Session, dtype: str, kernels: list[CalKernel], best: list[float],
                       ceiling: float = 0.0) -> dict:
    """One dtype's calibration block from each kernel's best time (``best``, in the order of
    ``kernels``). A GEMM's efficiency is its work over (its best time less the per-call
    overhead) as a share of the measured peak; its math cannot outrun the theoretical
    ``ceiling`` (or the measured peak, whichever is higher), so that time is never taken below
    work / ceiling: a small GEMM timed at or under the overhead (the two timed at different
    moments of a busy machine) is charged the overhead plus its work at the ceiling, not an
    efficiency of millions, and a warning says which sizes were held there."""
    from ..analysis.predict import c_write_passes
    from .result import Note

    p, call_s = s.plan, s.measured["small_gemm_overhead_s"]
    peak = s.measured["gemm_gflops"][dtype] * 1e9
    held: list[str] = []
    block: dict[str, Any] = efficiencies(kernels, best, dtype, call_s, peak,
                                         max(ceiling, peak), held)
    mine = [(k, t) for k, t in zip(kernels, best) if k.dtype == dtype]
    c, c_s = next((k, t) for k, t in mine if k.kind == "c_write")
    block |= {"thin_nk": p.cal_thin_nk,
              "thin_dram_nk": next(k.nk for k, _ in mine if k.kind == "thin_dram"),
              "peak_n": s.details[f"gemm_{dtype}"]["best_n"]}
    passes = c_write_passes(c_s, c.size, c.nk, c.k, dtype, call_s, peak, block,
                            s.measured["bandwidth_gbs"]["dram"] * 1e9)
    block["c_write"] = {"passes": _sig(passes), "m": c.size, "n": c.nk, "k": c.k,
                        "time_s": c_s}
    if held:
        s.warnings.append(Note("calibration_at_ceiling", {
            "dtype": dtype, "kernels": ", ".join(held), "overhead_us": call_s * 1e6}))
    s.say(f"  {dtype} efficiency (of its peak): squares {_shares(block['square'])}; thin M "
          f"(N = K = {p.cal_thin_nk}) {_shares(block['thin'])}, (N = K = "
          f"{block['thin_dram_nk']}, beyond the LLC) {_shares(block['thin_dram'])}; C write "
          f"({c.size}x{c.nk}x{c.k}): {passes:.2f} passes of C at DRAM speed")
    return block


def _shares(by_size: dict[str, float]) -> str:
    """``32: 28%, 64: 45%``: a progress line's efficiencies by size (they read as Python's
    ``{'32': 0.2769, '64': 0.4522}``)."""
    return ", ".join(f"{size}: {share:.0%}" for size, share in by_size.items())


#: The kinds of calibration kernel whose efficiency the block keeps, per size.
EFFICIENCY_KINDS = ("square", "thin", "thin_dram")


def efficiencies(kernels: list[CalKernel], best: list[float], dtype: str, call_s: float,
                 peak: float, fastest: float,
                 held: list[str] | None = None) -> dict[str, dict[str, float]]:
    """``{square: {n: eff}, thin: {M: eff}, thin_dram: {M: eff}}`` of ``dtype``'s kernels
    from their best times (``gemm_efficiency``); the labels of those its floor held go into
    ``held``."""
    out: dict[str, dict[str, float]] = {kind: {} for kind in EFFICIENCY_KINDS}
    for k, best_s in zip(kernels, best):
        if k.dtype != dtype or k.kind not in out:
            continue
        value, at_ceiling = gemm_efficiency(k.kernel.work, best_s, call_s, peak, fastest)
        if at_ceiling and held is not None:
            held.append(k.kernel.label)
        out[k.kind][str(k.size)] = _sig(value)
    return out


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
    """A GPU's ``calibration:`` block (``hardware.spec.GpuOpsCalibration``, and the
    ``library``, the backend and its version, whose GEMMs are cuBLAS's), fitted
    against what the saved entry holds: its peaks are the best GEMM rates measured here and its
    bandwidth the device copy measured here, so the sustained shares of both are 1 by
    construction (a large GEMM or copy runs at the entry's figure); measured: ``min_kernel_s``,
    the time of one small GEMM (n = ``plan.gpu_cal_gemm_n``) back to back, and ``launch_s``, the
    time of one small device copy (``plan.gpu_cal_copy_bytes``) back to back. Where the backend
    replays CUDA graphs (torch; ``timing: graph``, calibration version 5) both are the GPU's
    time per call in a graph of ``plan.gpu_cal_graph_calls`` calls, as the fitted constants'
    kernel times are: timed from Python, a call that small costs the host's dispatch and
    launch (~10-16 us on a lent H100, against ~4 us of GPU time), which a step whose kernels
    are longer hides behind them. Elsewhere (cupy; ``timing: eager``) they are the calls from
    Python, host included."""
    from ..analysis.predict import CALIBRATION_VERSION

    p = s.plan
    library = {"name": backend.name, "version": backend.version, "blas": "cuBLAS"}
    dtype = next((d for d in ("fp16", "bf16", "fp32") if d in backend.dtypes),
                 backend.dtypes[0])
    gemm = s.time(backend.gemm(p.gpu_cal_gemm_n, dtype), 1e9)["best_s"]
    copy = s.time(backend.device_copy(p.gpu_cal_copy_bytes), 1e9)["best_s"]
    what = (f"  calibration: smallest GEMM ({p.gpu_cal_gemm_n}^3 {dtype}) {gemm * 1e6:.3g} us, "
            f"small copy ({p.gpu_cal_copy_bytes} B) {copy * 1e6:.3g} us per call from Python")
    timing = "eager"
    if getattr(backend, "graphs", False):
        calls = p.gpu_cal_graph_calls
        graph_gemm = s.time(backend.graphed(f"{backend.name} {dtype} GEMM n={p.gpu_cal_gemm_n}",
                                            backend.small_gemm_call(p.gpu_cal_gemm_n, dtype),
                                            calls), 1.0)["best_s"] / calls
        graph_copy = s.time(backend.graphed(f"device copy {p.gpu_cal_copy_bytes} B",
                                            backend.small_copy_call(p.gpu_cal_copy_bytes),
                                            calls), 1.0)["best_s"] / calls
        what += (f"; in a CUDA graph (the GPU's time, taken) {graph_gemm * 1e6:.3g} us and "
                 f"{graph_copy * 1e6:.3g} us")
        gemm, copy, timing = graph_gemm, graph_copy, "graph"
    block = {"dram_fraction": 1.0, "launch_s": _sig(copy),
             "tensor_core_fraction": 1.0, "cuda_core_fraction": 1.0,
             "min_kernel_s": _sig(gemm), "timing": timing}
    s.say(what)
    return {"version": CALIBRATION_VERSION, "library": library, "gpu": block}
