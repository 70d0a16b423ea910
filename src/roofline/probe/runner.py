"""``run_probe``: identify the machine (``identify``), compute its theoretical ceilings
(``ceilings``), time GEMM and bandwidth kernels (``kernels.cpu``, ``kernels.gpu``) with one
calibrated loop (``kernels.timing``) as a preset says (``plan``), calibrate the prediction
(``calibrate``; the ops between the GEMMs: ``op_costs``), and return a ``ProbeResult``
(``result``). The CPU GEMMs the calibration rests on (the peak per dtype, the per-call GEMM,
the calibration GEMMs) go through the library asked for (``GEMM_LIBRARIES``: numpy's BLAS, or
torch, ``kernels.torch_cpu``); the bandwidth kernels are numpy's whatever the library; the op
costs go through torch where it imports (the ops between GEMMs are a framework's), else numpy.

Only the standard library is imported at module level.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..kernels.load import BUSY_CPUS, LoadMeter
from ..kernels.timing import UNSTABLE_SPREAD
from ..units import count
from .calibrate import available_memory, calibrate
from .checks import unstable_reasons
from .op_costs import calibrate_ops
from .plan import (
    GEMM_LIBRARIES,
    METHOD_VERSION,
    PRESETS,
    READ_STREAM_LLC_FACTOR,
    READ_STREAM_MAX_BYTES,
    MiB,
    Plan,
    Progress,
)
from .result import Note, ProbeResult, Skipped

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import ModuleType

    from ..kernels.cpu import Kernel
    from ..kernels.timing import BenchResult
    from .ceilings import CpuPeak
    from .identify import CpuInfo


class Session:
    """Runs the kernels of one plan and collects figures, statistics and gaps."""

    def __init__(self, plan: Plan, say: Progress, clock: Callable[[], float],
                 library: str = "numpy") -> None:
        self.plan, self.say, self.clock = plan, say, clock
        self.library = library  # what the CPU GEMMs go through (GEMM_LIBRARIES)
        self.measured: dict[str, Any] = {"gemm_gflops": {}, "bandwidth_gbs": {}}
        self.details: dict[str, Any] = {}
        self.not_measured: list[Skipped] = []
        self.warnings: list[Note] = []
        self.assumptions: list[Note] = []  # how a figure was arrived at (calibrate_rounds)
        self.load_meter: Callable[[], LoadMeter] = LoadMeter  # other programs' load
        self.sleep: Callable[[float], None] = time.sleep  # between spread calibration rounds

    def skip(self, figure: str, reason: Note) -> None:
        self.not_measured.append(Skipped(figure, reason))
        self.say(f"  not measured: {figure} (the result says why)")

    def time(self, kernel: Kernel, scale: float, min_time_s: float | None = None,
             repeats: int | None = None) -> dict[str, Any]:
        from ..kernels.timing import measure

        p = self.plan
        result = measure(kernel.run, repeats or p.repeats, p.warmups,
                         p.min_time_s if min_time_s is None else min_time_s, self.clock,
                         budget_s=p.kernel_budget_s)
        warning = instability_note(kernel.label, result)
        if warning:
            self.warnings.append(warning)
        if result.cut:
            self.warnings.append(Note("time_budget", {
                "label": kernel.label, "values": len(result.samples_s),
                "asked": result.repeats_asked, "budget_s": p.kernel_budget_s}))
        return result.to_dict(kernel.work, kernel.unit, scale)

    def best_over_sizes(self, key: str, make: Callable[[int], Kernel], sizes: Sequence[int],
                        unit: str) -> float | None:
        """Time ``make(n)`` for each size (GEMMs: work n^3); the best rate, with the plateau
        check. A size whose one call would take longer than the plan's kernel budget, going
        by the last size's time x (n / last n)^3, is not run, and a warning says so."""
        per_size: dict[str, dict[str, Any]] = {}
        for n in sizes:
            if per_size:
                last_n = int(list(per_size)[-1])
                estimate = per_size[str(last_n)]["best_s"] * (n / last_n) ** 3
                if estimate > self.plan.kernel_budget_s:
                    self.warnings.append(Note("size_over_budget", {
                        "key": key, "n": n, "estimate_s": estimate,
                        "budget_s": self.plan.kernel_budget_s}))
                    break
            stats = self.time(make(n), 1e9)
            per_size[str(n)] = stats
            self.say(f"  {key} n={n}: {stats['best']:.1f} {unit} (median {stats['median']:.1f})")
        best_n = max(per_size, key=lambda n: per_size[n]["best"])
        best = per_size[best_n]["best"]
        plateau = per_size[list(per_size)[-1]]["best"] >= 0.9 * best  # the largest timed
        self.details[key] = {"sizes": per_size, "best_n": int(best_n), "plateau": plateau}
        if not plateau and len(per_size) > 1:
            self.warnings.append(Note("no_plateau", {"key": key, "best_n": best_n}))
        return best


#: Variables that pin a BLAS to an older instruction set than the CPU has.
BLAS_PINNING_VARIABLES = {
    "OPENBLAS_CORETYPE": "OpenBLAS runs its kernels for this core type",
    "MKL_ENABLE_INSTRUCTIONS": "MKL uses at most this instruction set",
    "MKL_DEBUG_CPU_TYPE": "MKL takes the CPU for this type",
}


def instability_note(label: str, result: BenchResult) -> Note | None:
    """A pyperf-style warning when ``result`` (a kernels.timing.BenchResult) looks unstable."""
    if not result.unstable:
        return None
    best, median, worst = result.best_s, result.median_s, max(result.samples_s)
    if result.spread > UNSTABLE_SPREAD:
        return Note("unstable", {"label": label, "spread": result.spread, "best_s": best,
                                 "median_s": median, "worst_s": worst,
                                 "values": len(result.samples_s)})
    # the other check fired, the worst value far off the best: a note that cited the spread
    # as its cause read "spread 0%" beside a median 130x the best
    return Note("unstable_worst", {"label": label, "worst_ratio": worst / best,
                                   "spread": result.spread, "best_s": best, "median_s": median,
                                   "worst_s": worst, "values": len(result.samples_s)})


def blas_env_warnings(environ: Mapping[str, str]) -> list[Note]:
    """A warning per variable that pins the BLAS's kernels (``OPENBLAS_CORETYPE=Haswell``: AVX2
    kernels on an AVX-512 CPU): the measured GEMM rates are then the BLAS's, and can stay far
    below a theoretical peak computed from the CPU's widest SIMD."""
    return [Note("blas_pinned", {"name": name, "value": environ[name], "what": what})
            for name, what in BLAS_PINNING_VARIABLES.items() if environ.get(name)]


def gemm_kernels(library: str) -> ModuleType:
    """The module of CPU GEMM kernels for ``library`` (``kernels.cpu`` for numpy,
    ``kernels.torch_cpu`` for torch: the same functions by the same names), looked up when a
    kernel is made."""
    if library == "torch":
        from ..kernels import torch_cpu

        return torch_cpu
    from ..kernels import cpu

    return cpu


def check_library(library: str) -> None:
    """Raise a one-line RooflineError, before anything is timed, unless the CPU GEMMs can go
    through ``library`` (one of GEMM_LIBRARIES; torch must be installed)."""
    from ..errors import MissingLibraryError, RooflineError, option

    if library not in GEMM_LIBRARIES:
        raise RooflineError(f"{option('library')}: expected one of {', '.join(GEMM_LIBRARIES)}"
                            f", got {library!r}")
    from ..kernels.torch_cpu import installed

    if library == "torch" and not installed():
        raise MissingLibraryError(
            f"{option('library', 'torch')}: torch is not installed (pip install "
            f"'roofline[torch]'); the default, numpy, calibrates through numpy's BLAS")


#: fp32 GEMMs whose share of their computed peak is under this fraction of fp64's share were
#: disturbed: the same units run both (a stalled OpenMP run through torch on the development
#: VM reached 43% against fp64's 77%, and 85% a few minutes later with OMP_WAIT_POLICY=ACTIVE).
SHARE_GAP = 0.7


def share_gap(gflops: dict[str, float], ceilings: dict[str, float], library: str) -> list[Note]:
    """A warning when fp32 GEMMs reached a much smaller share of their computed peak than fp64
    (``SHARE_GAP``); none without both figures and both ceilings."""
    shares = {d: gflops[d] / ceilings[d] for d in ("fp32", "fp64")
              if gflops.get(d) and ceilings.get(d)}
    if len(shares) < 2 or shares["fp32"] >= SHARE_GAP * shares["fp64"]:
        return []
    return [Note("gemm_share_gap", {"fp32": shares["fp32"], "fp64": shares["fp64"],
                                    "library": library})]


def _cpu_gemm(s: Session, threads: int | None) -> None:
    through = "numpy's BLAS" if s.library == "numpy" else s.library
    for dtype, sizes in s.plan.gemm_sizes.items():
        on = count(threads, "thread") if threads else "? threads"
        s.say(f"{dtype} GEMM through {through} ({on}) ...")
        best = s.best_over_sizes(f"gemm_{dtype}",
                                 partial(gemm_kernels(s.library).gemm_kernel, dtype=dtype),
                                 sizes, "GFLOP/s")
        s.measured["gemm_gflops"][dtype] = best


def _small_gemm(s: Session) -> None:
    n = s.plan.small_gemm_n
    stats = s.time(gemm_kernels(s.library).small_gemm_kernel(n), 1.0)
    s.details["small_gemm_overhead"] = stats | {"n": n, "dtype": "fp32"}
    s.measured["small_gemm_overhead_s"] = stats["best_s"]
    s.say(f"  {n}x{n}x{n} fp32 GEMM: {stats['best_s'] * 1e6:.2f} us per call")


def _streams(s: Session, key: str, array_bytes: int, threads: int) -> dict[str, float]:
    from ..kernels.cpu import StreamArrays

    with StreamArrays(max(1, array_bytes // 8), threads) as arrays:
        rates = {}
        for name in ("triad", "copy"):
            stats = s.time(arrays.kernel(name), 1e9)
            s.details[f"{key}_{name}"] = stats | {"working_set_bytes": arrays.nbytes,
                                                   "threads": arrays.threads}
            rates[name] = stats["best"]
            s.say(f"  {key} {name} ({arrays.nbytes / MiB:.0f} MiB, "
                  f"{count(arrays.threads, 'thread')}): {stats['best']:.1f} GB/s "
                  f"(median {stats['median']:.1f}, {_spread_words(stats)})")
    return rates


def read_stream(nbytes: int, preset: str = "full", threads: int | None = None,
                clock: Callable[[], float] = time.perf_counter) -> dict[str, Any]:
    """The probe's DRAM figure on its own: a dot product through the BLAS over ``nbytes``
    (``cpu_kernels.read_stream_kernel``, its vectors first-touched by ``threads`` threads, by
    default one per usable CPU), timed as ``preset`` times it; the statistics dict
    (``best`` and ``median`` in GB/s, ``spread``..., and ``warning``: the instability Note
    or None). Benchmarks call it next to a C triad."""
    from ..kernels.cpu import read_stream_kernel
    from ..kernels.timing import measure
    from .identify import usable_cpus

    p = PRESETS[preset]  # short values, many: the best is the one no other process disturbed
    kernel = read_stream_kernel(max(2, nbytes // 8), threads or len(usable_cpus()))
    result = measure(kernel.run, 2 * p.cal_repeats, p.warmups, p.min_time_s / 3, clock,
                     budget_s=p.kernel_budget_s)
    return result.to_dict(kernel.work, kernel.unit, 1e9) | {
        "warning": instability_note(kernel.label, result)}


def _spread_words(stats: dict[str, Any]) -> str:
    """A measurement's spread as a progress line says it: MAD / median of its ``repeats``
    values, which with 3 values is the median's distance to its nearer neighbour, blind to a
    best far from both (a quick probe's copy: spread 4.4% with its median 42% of its best),
    so the count goes with it."""
    return f"spread (MAD/median of {stats['repeats']} values) {stats['spread']:.1%}"


def _read_stream(s: Session, nbytes: int, threads: int) -> float:
    """DRAM as the memory delivers it: a dot product through the BLAS over ``nbytes``."""
    stats = read_stream(nbytes, s.plan.name, threads, s.clock)
    warning = stats.pop("warning")
    if warning:
        s.warnings.append(warning)
    s.details["dram_read"] = stats | {"working_set_bytes": nbytes,
                                      "kernel": "numpy dot of two float64 vectors (BLAS ddot), "
                                                "read only"}
    s.say(f"  dram read stream ({nbytes / MiB:.0f} MiB, dot product): {stats['best']:.1f} "
          f"GB/s (median {stats['median']:.1f}, {_spread_words(stats)})")
    return stats["best"]


def _bandwidth(s: Session, cpu: CpuInfo) -> None:
    threads = cpu.usable_cpus
    low, high = s.plan.dram_array_bytes
    llc = cpu.llc_bytes_total or 32 * MiB
    per_array = int(min(max(s.plan.dram_llc_factor * llc, low), high, available_memory() / 8))
    s.say(f"DRAM bandwidth, all {threads} CPUs ...")
    # the read stream's two vectors: 16x the LLC together, whatever the preset (at 4x an AMD
    # L3 still held enough of them to read 1.4x faster than at 16x, where it levels off), at
    # most READ_STREAM_MAX_BYTES and a quarter of the free memory
    read_bytes = s.plan.dram_read_bytes or int(min(
        max(READ_STREAM_LLC_FACTOR * llc, per_array), READ_STREAM_MAX_BYTES,
        available_memory() / 4))
    if s.plan.dram_read_bytes is None and read_bytes < READ_STREAM_LLC_FACTOR * llc:
        s.warnings.append(Note("read_stream_small", {"read_mib": read_bytes / MiB,
                                                     "factor": READ_STREAM_LLC_FACTOR,
                                                     "llc_mib": llc / MiB}))
    dram = _read_stream(s, read_bytes, threads)
    rates = _streams(s, "dram", per_array, threads)
    s.measured["bandwidth_gbs"].update(dram=dram, triad=rates["triad"], copy=rates["copy"])
    s.measured["bandwidth_stats"] = {
        name: {k: s.details[key][k] for k in ("best", "median", "spread")}
        for name, key in (("dram", "dram_read"), ("triad", "dram_triad"), ("copy", "dram_copy"))}
    s.details["dram_kernel"] = "read stream (dot product)"
    s.details["stream_note"] = ("triad and copy count bytes as STREAM does, without the "
                                "write-allocate traffic; dram is the read stream, at the best "
                                "of its own values (bandwidth_stats.dram) and of the "
                                "calibration's rounds (details.calibration_rounds)")
    if 3 * per_array < 2 * llc:
        s.warnings.append(Note("working_set_small", {"working_mib": 3 * per_array / MiB,
                                                     "llc_mib": llc / MiB,
                                                     "preset": s.plan.name}))
    if s.plan.llc:
        _llc(s, cpu, dram, threads)


def _llc(s: Session, cpu: CpuInfo, dram: float, threads: int) -> None:
    llc, l2 = cpu.llc_bytes_total, cpu.l2_bytes_total or 0
    if not llc:
        return s.skip("bandwidth_gbs.llc", Note("llc_size_unknown"))
    working_set = min(llc / 2, max(8 * l2, 8 * MiB))
    if working_set < 2 * l2 or s.plan.name == "tiny":
        return s.skip("bandwidth_gbs.llc", Note("llc_like_l2"))
    s.say("last-level cache bandwidth ...")
    rate = _streams(s, "llc", int(working_set // 3), threads)["triad"]
    dram = s.measured["bandwidth_gbs"]["triad"]  # like for like: triad against triad
    if rate < 1.2 * dram:
        return s.skip("bandwidth_gbs.llc", Note("llc_like_dram", {"rate": rate}))
    s.measured["bandwidth_gbs"]["llc"] = rate


def _cpu_lowp(s: Session, flags: Sequence[str]) -> None:
    """bf16 and fp16 GEMMs on the CPU through torch, for each dtype the CPU has native
    arithmetic for (``ceilings.native_flag``); one without is not timed (torch would time its
    conversion through fp32, not the CPU's units), and the result says why."""
    from ..kernels.gpu import cpu_lowp_backend
    from .ceilings import NATIVE_FLAGS, native_flag

    native = []
    for dtype in ("bf16", "fp16"):
        if native_flag(dtype, flags) is None:
            s.skip(f"gemm_gflops.{dtype}", Note("no_native_unit", {
                "dtype": dtype, "flags": ", ".join(f.upper() for f in NATIVE_FLAGS[dtype])}))
        else:
            native.append(dtype)
    if not native:
        return
    backend, reason = cpu_lowp_backend()
    if backend is None:
        for dtype in native:
            s.skip(f"gemm_gflops.{dtype}",
                   Note("backend_missing", {"reason": reason or "no torch"}))
        return
    for dtype in (d for d in backend.dtypes if d in native):
        s.say(f"{dtype} GEMM on the CPU through torch ...")
        s.measured["gemm_gflops"][dtype] = s.best_over_sizes(
            f"gemm_{dtype}", partial(backend.gemm, dtype=dtype), s.plan.lowp_sizes,
            "GFLOP/s")


def _gpu(s: Session, gpus: list[dict[str, Any]], nvml_reason: str | None) -> dict | None:
    from ..kernels.gpu import gpu_backend

    backend, reason = gpu_backend()
    if backend is None:
        why = (reason or "no GPU backend") if gpus else (nvml_reason or "no NVIDIA GPU found")
        s.skip("gpu (GEMM, device and host-to-device bandwidth)",
               Note("backend_missing", {"reason": why}))
        return None
    facts = backend.device_facts()
    s.say(f"GPU 0 ({facts.get('name')}) through {backend.name} ...")
    sub = Session(s.plan, s.say, s.clock)
    for dtype in backend.dtypes:
        sub.measured["gemm_gflops"][dtype] = sub.best_over_sizes(
            f"gpu_gemm_{dtype}", partial(backend.gemm, dtype=dtype), s.plan.gpu_gemm_sizes,
            "GFLOP/s")
    for key, make, size in (("device", backend.device_copy, s.plan.gpu_copy_bytes),
                            ("host_to_device", backend.host_to_device, s.plan.gpu_h2d_bytes)):
        stats = sub.time(make(size), 1e9)
        sub.details[f"gpu_{key}"] = stats
        sub.measured["bandwidth_gbs"][key] = stats["best"]
        s.say(f"  {key} bandwidth: {stats['best']:.1f} GB/s")
    from .calibrate import gpu_calibration

    sub.measured["calibration"] = gpu_calibration(sub, backend)
    s.details.update(sub.details)
    s.warnings += sub.warnings
    return sub.measured | {"index": 0, "backend": backend.name, "device": facts}


def _other_load(s: Session, meter: LoadMeter) -> None:
    """``details.other_load_cpus``: what other programs kept busy while the CPU was probed
    (``kernels.load``; None where not measurable), and a warning above ``BUSY_CPUS``."""
    load = meter.total()
    s.details["other_load_cpus"] = load
    if load is not None and load > BUSY_CPUS:
        s.warnings.append(Note("shared_machine", {"what": "the probe", "cpus": load}))


def _load_at_start(s: Session, meter: LoadMeter) -> None:
    """Say at once, not only in the result's checks, when other programs kept the CPUs busy
    while the probe identified the machine (about a second, most of it py-cpuinfo's): every
    figure timed under such load is a shared machine's, a save is refused past
    ``checks.SHARED_LIMIT`` through the probe, and the calibration runs extra rounds."""
    from .checks import SHARED_LIMIT

    load = meter.lap()
    if load is not None and load > BUSY_CPUS:
        s.say(f"  other programs are keeping about {load:.2f} CPUs busy: the figures will be "
              f"a shared machine's, the calibration may run extra rounds, and a probe through "
              f"which they keep over {SHARED_LIMIT:g} on average is not saved unless forced; "
              f"an idle machine gives steadier figures")


def _metadata(cpu: CpuInfo, blas: list[dict[str, Any]], started: float,
              wall_start: datetime) -> dict[str, Any]:
    import numpy

    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    return {"date": wall_start.isoformat(timespec="seconds"), "hostname": platform.node(),
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy_version": numpy.__version__, "roofline_version": __version__,
            "method_version": METHOD_VERSION, "cpu_model_name": cpu.brand,
            "cpu_count": os.cpu_count(), "cpu_affinity": sorted(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity") else None,
            "blas": blas, "env": env, "duration_s": time.perf_counter() - started}


def _effective_clock(cpu: CpuInfo, say: Progress) -> float | None:
    """The clock the cores run at with all of them busy (probe.clock), or None."""
    from .clock import chain_clock_ghz

    ghz = chain_clock_ghz(cpu.usable_cpus)
    say(f"  core clock under load: {ghz:.2f} GHz (dependent-add chain, "
        f"{count(cpu.usable_cpus, 'thread')})" if ghz else
        "  core clock: not measurable here (not Linux x86-64, or no executable memory)")
    return ghz


def _theoretical(peak: CpuPeak | None, gpu_theory: dict[str, Any] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"gemm_gflops": dict(peak.gflops) if peak else {},
                              "bandwidth_gbs": {}}
    if peak and peak.bandwidth_gbs:
        result["bandwidth_gbs"]["dram"] = peak.bandwidth_gbs
    if gpu_theory:  # its assumptions are the result's own (run_probe), notes, not figures
        result["gpu"] = {k: v for k, v in gpu_theory.items() if k != "assumptions"}
    return result


def run_probe(quick: bool = False, progress: Progress | None = None, preset: str | None = None,
              clock: Callable[[], float] = time.perf_counter,
              library: str = "numpy") -> ProbeResult:
    """Identify and measure this machine. ``progress(message)`` hears what is going on;
    ``preset`` ("full", "quick", "tiny") overrides ``quick``; ``library`` (numpy, torch) is
    what the CPU GEMMs and so the calibration go through (``check_library``)."""
    from . import ceilings, identify

    check_library(library)
    plan = PRESETS[preset or ("quick" if quick else "full")]
    say = progress or (lambda message: None)
    started, wall_start = time.perf_counter(), datetime.now(timezone.utc)
    session = Session(plan, say, clock, library)
    meter = session.load_meter()  # from the start: the identification says the load so far
    say(f"roofline probe ({plan.name}): identifying the CPU (py-cpuinfo) ...")
    cpu, blas = identify.identify_cpu(), identify.blas_info()
    gpus, nvml_reason = identify.identify_gpus()
    entries = identify.datasheet_entries()
    cpu_entry = identify.match_cpu(cpu.brand, entries)
    effective = _effective_clock(cpu, say)
    peak = ceilings.cpu_peak(cpu, cpu_entry, effective)
    blas_text = ", ".join(f"{b['internal_api']} x{b['num_threads']}" for b in blas)
    say(f"  {cpu.brand}: {cpu.cores} cores, {' '.join(cpu.isa) or 'no AVX'}; "
        f"BLAS {blas_text or 'unknown'}")
    gemm_library = (identify.torch_library() if library == "torch" else
                    identify.numpy_library(blas))
    if library != "numpy":
        say(f"  CPU GEMMs through {library} {gemm_library['version']} "
            f"({gemm_library['blas'] or 'its GEMM library not reported'})")
    _load_at_start(session, meter)
    session.warnings += blas_env_warnings(os.environ)
    _cpu_gemm(session, gemm_library["threads"])
    _small_gemm(session)
    _bandwidth(session, cpu)
    calibrate(session, cpu.llc_bytes_total, dict(peak.gflops) if peak else None, gemm_library)
    # on the figures the result keeps: the calibration's rounds raise the peaks to their best
    session.warnings += share_gap(session.measured["gemm_gflops"],
                                  dict(peak.gflops) if peak else {}, library)
    calibrate_ops(session, cpu.llc_bytes_total)
    _cpu_lowp(session, cpu.flags)
    session.details["effective_clock_ghz"] = effective
    _other_load(session, meter)
    peak = ceilings.raise_to_measured(peak, session.measured["gemm_gflops"])
    gpu_matches = {g["index"]: m.name for g in gpus
                   if (m := identify.match_gpu(g["name"], entries))}
    gpu_measured = _gpu(session, gpus, nvml_reason)
    gpu_theory = None
    if gpu_measured is not None and gpus:
        gpu_entry = identify.match_gpu(gpus[0]["name"], entries)
        gpu_theory = ceilings.gpu_theoretical(gpus[0], gpu_entry)
        session.measured["gpu"] = gpu_measured
    assumptions = (peak.assumptions if peak else [Note("no_clock")])
    assumptions = assumptions + session.assumptions + (gpu_theory or {}).get("assumptions", [])
    say(f"done in {time.perf_counter() - started:.1f} s")
    result = ProbeResult(plan.name, cpu, blas, gpus, session.measured,
                         _theoretical(peak, gpu_theory), session.details, session.not_measured,
                         session.warnings, assumptions, _metadata(cpu, blas, started, wall_start),
                         peak, cpu_entry.name if cpu_entry else None, gpu_matches,
                         gemm_library)
    # the checks a save applies (probe.checks), said in the result itself: a probe without
    # --save shows why a save would be refused
    result.warnings.extend(Note("fails_check", {"reason": reason})
                           for reason in unstable_reasons(result))
    return result
