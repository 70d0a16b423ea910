"""The sanity rules of a hardware entry: figures that each pass the schema but do not fit
together or with real hardware (a peak in GFLOP/s typed as TFLOP/s, a CPU peak its cores,
clock and units cannot give, 100 SIMD bits). The one place they are written: the loader warns
with each (``catalog.load_entry_file``: a ``HwdbWarning`` naming the file and the field, the
entry still loaded) and ``tests/test_hwdb_entries.py`` requires none of the bundled entries.

``doubts`` is the list of warnings; ``impossible`` the one figure the loader refuses, a
calibration GEMM faster than the probe that wrote it can ever save (``parse_entry`` raises)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .spec import CpuBlock, HardwareSpec

#: Ridge points (FLOP/B) a real device's peak of any dtype over its bandwidth falls in: the
#: bundled entries run from 0.8 (A10's fp64) to 848 (L40S's int8); a figure 1000x off (GFLOP/s
#: written as TFLOP/s, GB/s as TB/s) leaves it.
RIDGE_ANY = (0.1, 2000.0)
#: The ridge of an entry's main dtype (a Tensor-Core GPU's fp16, any other device's fp32):
#: bundled 124-419 and 9.6-34.4; a small probed CPU (one core, slow DRAM) may fall to a few.
RIDGE_TENSOR_CORE_FP16 = (50.0, 700.0)
RIDGE_OTHER = (2.0, 200.0)
#: Peak bandwidth one device of each memory type can plausibly reach, GB/s (generous bounds:
#: GDDR5 at 512 bit x 8 Gb/s = 512; GDDR6 at 384 bit x 20 Gb/s = 960; HBM2 5 stacks x 410 =
#: 2050; HBM2e 5 x 461 = 2300 (A100 80GB: 2039); HBM3 5-6 stacks x 819 = 4100; HBM3e 8 stacks x
#: 1229 = 9830: B200 has 8 stacks (7.7 TB/s), the H200's 6 gave 7400 before it). A type not
#: named here is not checked.
MAX_GBS = {"GDDR5": 512, "GDDR5X": 560, "GDDR6": 960, "HBM2": 2050, "HBM2e": 2400,
           "HBM3": 4100, "HBM3e": 9830}
#: What CUDA reports (memory.reported_bytes) over the datasheet's capacity_gb x 10^9: at most
#: binary gigabytes (2^30 / 10^9 = 1.074), less what the driver and ECC keep; the bundled
#: entries run from 0.982 (L4: 23,570,219,008 of 24 GB) to 1.067 (P100 PCIe 16GB:
#: 17,071,734,784 of 16 GB). deviceQuery's MBytes copied for its bytes (22478 for
#: 23570219008), or a digit dropped, leaves it.
REPORTED_OVER_CAPACITY = (0.85, 1.1)
#: A CPU's DDR channels per socket at most (Genoa, Granite Rapids: 12).
MAX_CHANNELS = 12
#: per-cycle rate of one vector FMA lane pair, relative to fp32: fp64 lanes are twice as wide;
#: AVX512_BF16 (VDPBF16PS) does 2 bf16 products per fp32 lane, VNNI (VPDPBUSD) 4 int8 products
VECTOR_RATIO = {"fp64": 0.5, "fp32": 1.0, "bf16": 2.0, "int8": 4.0}
#: How far a datasheet CPU peak may sit from what its fields give (hand-rounded figures); the
#: bundled entries agree within 0.1 %, which tests/test_hwdb_entries.py requires of them.
CPU_PEAK_TOLERANCE = 0.1
#: Sparse figures are 2x dense (L40S prints 362.05 / 733: 1.2 % over).
SPARSE_TOLERANCE = 0.05
#: A measured figure may pass its theoretical ceiling by this much (timer and clock noise): the
#: one allowance, which the probe's save checks take (``probe.checks.EFFICIENCY_LIMIT``, its
#: --force overriding them) and ``analyze --measure`` before it flags a GEMM as beating its
#: roof (``analysis.measure.BEATS_ROOF``)
OVER_CEILING = 1.05
#: simd_bits: SSE / NEON 128, AVX2 256, AVX-512 512, SVE a multiple of 128 up to 2048.
SIMD_BITS = range(128, 2049, 128)
FMA_UNITS = (1, 4)  # vector FMA units a core: 1 to 4 (Apple's and Neoverse V1's NEON: 4)
GPU_SMS = (1, 1024)  # B200: 148
GPU_CLOCK_GHZ = (0.2, 5.0)  # bundled 1.075-2.52
CPU_CLOCK_GHZ = (0.2, 8.0)  # bundled 2.0-3.7; a desktop part's turbo 6.2
#: Seconds one call may cost at most (a Python call, a kernel launch: microseconds).
MAX_CALL_S = 1e-2
#: Calibration versions whose GEMM efficiencies the probe floored (probe method 5 on: a GEMM's
#: math time never below its work over the higher of the ceiling and the measured peak).
FLOORED_FROM_VERSION = 3


def doubts(spec: HardwareSpec) -> list[tuple[str, str]]:
    """``(field, why)`` for each figure of ``spec`` that looks wrong; empty for every bundled
    entry."""
    rules = (_cpu, _gpu, _measured, _ridges, _orders, _engines, _bandwidth, _reported,
             _alignment, _calls, _efficiencies)
    found: dict[str, str] = {}
    for rule in rules:  # the most specific first: one line a figure, its first rule's
        for key, why in rule(spec, frozenset(found)):
            found.setdefault(key, why)
    return list(found.items())


def impossible(spec: HardwareSpec) -> tuple[str, str] | None:
    """The first calibration GEMM efficiency a probe could not have saved (calibration version
    3 on), as ``(field, why)``; None when there is none."""
    cal = spec.calibration
    if cal is None or cal.version < FLOORED_FROM_VERSION:
        return None
    return next(_over_cap(spec), None)


def main_dtype(spec: HardwareSpec) -> str:
    """The dtype whose ridge says most about a device: a GPU's fp16 (Tensor Cores), else
    fp32; Maxwell, with no fp16 peak, its fp32."""
    return "fp16" if spec.kind == "gpu" and "fp16" in spec.peak_tflops else "fp32"


def main_ridge_range(spec: HardwareSpec) -> tuple[float, float]:
    tensor_core = spec.kind == "gpu" and spec.gpu is not None and bool(spec.gpu.tiles)
    return (RIDGE_TENSOR_CORE_FP16 if tensor_core and main_dtype(spec) == "fp16"
            else RIDGE_OTHER)


def expected_cpu_tflops(cpu: CpuBlock, dtype: str, vector_only: bool) -> float | None:
    """sockets x cores x clock x FMA units x lanes x 2 (x the dtype's rate against fp32), or
    AMX: sockets x cores x clock x ops per cycle; None for a dtype neither gives."""
    unit = cpu.unit_for(dtype, vector_only)
    if unit == "amx":
        per_core_cycle = float(cpu.amx_ops_per_cycle[dtype])
    elif dtype in VECTOR_RATIO:
        per_core_cycle = cpu.fma_units * cpu.simd_bits / 32 * 2 * VECTOR_RATIO[dtype]
    else:
        return None
    return cpu.sockets * cpu.cores_per_socket * cpu.clock_for(unit) * per_core_cycle / 1000


def _outside(value: float, bounds: tuple[float, float]) -> bool:
    return not bounds[0] <= value <= bounds[1]


def _ridges(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    """Datasheet figures only: a probe's peaks are what this machine ran, a quick probe's on a
    busy two-core VM a ridge of 0.5 FLOP/B; ``_measured`` holds them to their ceilings."""
    if spec.origin == "measured":
        return
    flagged = set()
    for dtype in spec.dtypes:
        ridge = spec.ridge(dtype)
        if _outside(ridge, RIDGE_ANY):
            flagged.add(dtype)
            yield (f"peak_tflops.{dtype}", f"{spec.peak_tflops[dtype]:g} over bandwidth_gbs "
                   f"{spec.bandwidth_gbs:g} is a ridge of {ridge:.4g} FLOP/B, no device's "
                   f"(expected {RIDGE_ANY[0]:g} to {RIDGE_ANY[1]:g}): a figure in GFLOP/s "
                   f"or TB/s?")
    main, bounds = main_dtype(spec), main_ridge_range(spec)
    if main in spec.peak_tflops and main not in flagged and _outside(spec.ridge(main), bounds):
        device = ("a Tensor-Core GPU's" if bounds == RIDGE_TENSOR_CORE_FP16 else
                  f"a {'GPU' if spec.kind == 'gpu' else 'CPU'}'s")
        yield (f"peak_tflops.{main}", f"{spec.peak_tflops[main]:g} over bandwidth_gbs "
               f"{spec.bandwidth_gbs:g} is a ridge of {spec.ridge(main):.4g} FLOP/B, outside "
               f"{bounds[0]:g} to {bounds[1]:g}, where {device} {main} ridge lies")


def _orders(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    """fp64 not above fp32; on a GPU with Tensor Cores, fp16 and bf16 not below fp32. On a
    measured entry these hold of its theoretical ceilings only (an H100 measured fp64 at 55
    TFLOP/s beside fp32 at 51)."""
    measured = spec.origin == "measured"
    peaks, where = spec.peak_tflops, "peak_tflops"
    if measured:
        peaks, where = (spec.theoretical.peak_tflops if spec.theoretical else {},
                        "theoretical.peak_tflops")

    def fine(*dtypes: str) -> bool:  # a figure already doubted is not compared again
        return not any(f"{where}.{dtype}" in found for dtype in dtypes)

    if peaks.get("fp64", 0) > peaks.get("fp32", float("inf")) and fine("fp64", "fp32"):
        yield (f"{where}.fp64", f"{peaks['fp64']:g} is above fp32's {peaks['fp32']:g}: a "
               f"wider type never runs faster on the same device")
    tensor_cores = spec.gpu is not None and bool(spec.gpu.tiles)
    for dtype in ("fp16", "bf16") if tensor_cores and not measured else ():
        if peaks.get(dtype, float("inf")) < peaks.get("fp32", 0) and fine(dtype, "fp32"):
            yield (f"{where}.{dtype}", f"{peaks[dtype]:g} is below fp32's {peaks['fp32']:g}, "
                   f"where the Tensor Cores (gpu.tiles) run {dtype} faster")


def _engines(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    """A datasheet's matrix-engine peak not below its vector figure; sparse twice dense."""
    if spec.origin == "measured":
        return
    for dtype, vector in spec.vector_tflops.items():
        if dtype in spec.peak_tflops and spec.peak_tflops[dtype] < vector:
            yield (f"vector_tflops.{dtype}", f"{vector:g} is above the peak_tflops figure "
                   f"{spec.peak_tflops[dtype]:g}, which is the matrix engine's where the "
                   f"dtype has one, else this same figure")
    for dtype, sparse in spec.sparse_tflops.items():
        dense = spec.peak_tflops.get(dtype)
        if dense is None:
            yield f"sparse_tflops.{dtype}", "no dense peak_tflops figure of this dtype"
        elif abs(sparse / (2 * dense) - 1) > SPARSE_TOLERANCE:
            yield (f"sparse_tflops.{dtype}", f"{sparse:g} is not twice the dense "
                   f"{dense:g} (2:4 sparsity doubles the dense peak)")


def _bandwidth(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    memory = spec.memory_type
    if memory is None:
        return
    if spec.kind == "gpu" and memory in MAX_GBS:
        most = float(MAX_GBS[memory])
        how = f"{memory} reaches"
    else:
        ddr = re.fullmatch(r"DDR[45]-(\d+)", memory)
        if spec.cpu is None or ddr is None:
            return
        most = spec.cpu.sockets * MAX_CHANNELS * int(ddr.group(1)) * 8 / 1000
        how = (f"{spec.cpu.sockets} socket(s) x {MAX_CHANNELS} channels of {memory} x 8 B "
               f"reach")
    if spec.bandwidth_gbs > most:
        yield "bandwidth_gbs", f"{spec.bandwidth_gbs:g} GB/s is more than {how} ({most:g})"


def _reported(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    reported, gb = spec.memory_reported_bytes, spec.memory_capacity_gb
    if reported is None or not gb:
        return
    ratio = reported / (gb * 1e9)
    low, high = REPORTED_OVER_CAPACITY
    if not low <= ratio <= high:
        yield "memory.reported_bytes", (
            f"{reported:,} B is {ratio:.3g}x capacity_gb {gb:g} (x 10^9 B), where CUDA reports "
            f"{low:g} to {high:g}x it: deviceQuery's bytes, in brackets, not its MBytes?")


def _alignment(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    if spec.origin == "measured":
        return  # copied from the datasheet entry the probe matched, for the dtypes it timed
    for dtype in spec.alignment:
        if dtype not in spec.peak_tflops:
            yield f"alignment.{dtype}", "a rule for a dtype with no peak_tflops figure"


def _cpu(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    """The cpu block's own figures in range, then (a datasheet entry) each peak what they
    give."""
    cpu = spec.cpu
    if cpu is None:
        return
    if cpu.simd_bits not in SIMD_BITS:
        yield ("cpu.simd_bits", f"{cpu.simd_bits} is no vector width (128 SSE or NEON, 256 "
               f"AVX2, 512 AVX-512, SVE a multiple of 128 up to 2048)")
        return  # the peaks below would only repeat it
    if _outside(cpu.fma_units, FMA_UNITS):
        yield ("cpu.fma_units", f"{cpu.fma_units} vector FMA units a core; cores have "
               f"{FMA_UNITS[0]} to {FMA_UNITS[1]}")
        return
    yield from _cpu_clocks(cpu)
    if spec.origin == "measured":
        return  # its peaks are measured; the probe's ceilings are in theoretical
    for key, figures, vector_only in (("peak_tflops", spec.peak_tflops, False),
                                      ("vector_tflops", spec.vector_tflops, True)):
        for dtype, peak in figures.items():
            expected = expected_cpu_tflops(cpu, dtype, vector_only)
            if expected is not None and abs(peak / expected - 1) > CPU_PEAK_TOLERANCE:
                yield (f"{key}.{dtype}", f"{peak:g} TFLOP/s is not what the cpu block gives, "
                       f"{_formula(cpu, dtype, vector_only)} = {expected:.4g}")


def _cpu_clocks(cpu: CpuBlock) -> Iterator[tuple[str, str]]:
    """Each clock in range; the vector peak's clock one of the ISA its SIMD width runs."""
    clocks = [("cpu.clock_ghz", cpu.clock_ghz)] if not cpu.clocks else [
        (f"cpu.clocks.{isa}.{kind}.ghz", clock.ghz)
        for isa, kinds in cpu.clocks.items() for kind, clock in kinds.items()]
    for key, ghz in clocks:
        if _outside(ghz, CPU_CLOCK_GHZ):
            yield key, f"{ghz:g} GHz; CPUs run at {CPU_CLOCK_GHZ[0]:g} to {CPU_CLOCK_GHZ[1]:g}"
    if "vector" in cpu.peak_clock:
        isa = cpu.peak_clock["vector"][0]
        wanted = {512: ("avx512",), 256: ("avx2", "avx512")}.get(cpu.simd_bits, (isa,))
        if isa not in wanted:
            yield ("cpu.peak_clock.vector", f"{isa} clocks {cpu.simd_bits}-bit vector code "
                   f"(expected {' or '.join(wanted)})")


def _formula(cpu: CpuBlock, dtype: str, vector_only: bool) -> str:
    unit = cpu.unit_for(dtype, vector_only)
    head = f"{cpu.sockets} x {cpu.cores_per_socket} cores x {cpu.clock_for(unit):g} GHz"
    if unit == "amx":
        return f"{head} x {cpu.amx_ops_per_cycle[dtype]} AMX ops"
    rate = "" if VECTOR_RATIO[dtype] == 1 else f" x {VECTOR_RATIO[dtype]:g} ({dtype})"
    return f"{head} x {cpu.fma_units} FMA x {cpu.simd_bits // 32} lanes x 2{rate}"


def _gpu(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    gpu = spec.gpu
    if gpu is None:
        return
    if _outside(gpu.sms, GPU_SMS):
        yield "gpu.sms", f"{gpu.sms} SMs; GPUs have {GPU_SMS[0]} to {GPU_SMS[1]}"
    for key in ("boost_clock_ghz", "sustained_clock_ghz", "vector_clock_ghz"):
        ghz = getattr(gpu, key)
        if ghz is not None and _outside(ghz, GPU_CLOCK_GHZ):
            yield (f"gpu.{key}", f"{ghz:g} GHz; GPUs run at {GPU_CLOCK_GHZ[0]:g} to "
                   f"{GPU_CLOCK_GHZ[1]:g}")


def _measured(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    """A measured figure above its theoretical ceiling (the probe refuses to save one unless
    forced)."""
    theory = spec.theoretical
    if theory is None or spec.origin != "measured":
        return
    for dtype, ceiling in theory.peak_tflops.items():
        peak = spec.peak_tflops.get(dtype)
        if peak is not None and peak > OVER_CEILING * ceiling:
            yield (f"peak_tflops.{dtype}", f"measured {peak:g} is {peak / ceiling:.3g}x the "
                   f"theoretical ceiling {ceiling:g} (more than {OVER_CEILING:g}x): one of the "
                   f"two is wrong")
    if theory.bandwidth_gbs and spec.bandwidth_gbs > OVER_CEILING * theory.bandwidth_gbs:
        yield ("bandwidth_gbs", f"measured {spec.bandwidth_gbs:g} is "
               f"{spec.bandwidth_gbs / theory.bandwidth_gbs:.3g}x the theoretical ceiling "
               f"{theory.bandwidth_gbs:g} (more than {OVER_CEILING:g}x): one of the two is wrong")


def _calls(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    cal = spec.calibration
    if cal is None:
        return
    times = [("calibration.call_overhead_s", cal.call_overhead_s or None)]
    if cal.cpu_ops is not None:
        times.append(("calibration.ops.call_s", cal.cpu_ops.call_s))
    if cal.gpu_ops is not None:
        times += [("calibration.gpu.launch_s", cal.gpu_ops.launch_s),
                  ("calibration.gpu.min_kernel_s", cal.gpu_ops.min_kernel_s)]
    for key, seconds in times:
        if seconds is not None and seconds > MAX_CALL_S:
            yield (key, f"{seconds:g} s a call; a call or kernel launch costs microseconds "
                   f"(expected at most {MAX_CALL_S:g} s): a figure in another unit?")


def _efficiencies(spec: HardwareSpec, found: frozenset[str]) -> Iterator[tuple[str, str]]:
    """Over the cap in a block the probe did not floor (versions 1 and 2): warned, as such
    blocks loaded before; from version 3 on ``impossible`` refuses it."""
    cal = spec.calibration
    if cal is not None and cal.version < FLOORED_FROM_VERSION:
        yield from _over_cap(spec)


def _over_cap(spec: HardwareSpec) -> Iterator[tuple[str, str]]:
    """Each calibration GEMM efficiency above ``OVER_CEILING`` x the most its probe could
    measure: a share of the measured peak, its time floored at its work over the higher of the
    theoretical ceiling and that peak, so at most max(1, ceiling / peak)."""
    cal = spec.calibration
    assert cal is not None
    ceilings = spec.theoretical.peak_tflops if spec.theoretical else {}
    for dtype, eff in cal.efficiency.items():
        peak, ceiling = spec.peak_tflops.get(dtype), ceilings.get(dtype)
        most = max(1.0, ceiling / peak) if peak and ceiling else 1.0
        for kind in ("square", "thin", "thin_dram"):
            for size, value in getattr(eff, kind):
                if value > OVER_CEILING * most:
                    basis = (f"the theoretical {ceiling:g} over the measured {peak:g} TFLOP/s"
                             if most > 1 else f"the measured {dtype} peak" + (
                                 f", above its theoretical {ceiling:g}" if ceiling else ""))
                    yield (f"calibration.gemm_efficiency.{dtype}.{kind}.{size}",
                           f"{value:g} is above {OVER_CEILING * most:.3g} ({OVER_CEILING:g} x "
                           f"{basis}), faster than the GEMM can run: the probe floors its "
                           f"time at its work over the ceiling")
