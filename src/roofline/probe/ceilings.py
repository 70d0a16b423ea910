"""Theoretical ceilings of the probed machine, with every assumption written down.

CPU: peak FLOP/s = cores x clock x FMA units x SIMD lanes x 2 (an FMA is 2 FLOPs); AMX dtypes
cores x clock x ops per cycle. Lanes come from the ISA flags (``simd_bits_for``: AMD before
Zen 5 runs AVX-512 on 256-bit units). A CPU with a hwdb entry takes its FMA units and the
clock of the unit that runs each dtype (``cpu.peak_clock``). Otherwise 2 FMA units are assumed
and the clock is the higher of the advertised base clock and the clock measured on this
machine under an all-core load (``probe.clock``): cores run above base under load, and a
theoretical figure is a ceiling. The core count is always the physical cores this process may
run on, so a VM slice gets its own share.

A measured rate above its theoretical figure means that the clock or unit count assumed was
too low: ``raise_to_measured`` raises the clock of that unit to the one the measurement
implies, and says so, so no probe prints a measured figure above its ceiling unexplained.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .result import Note

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..hardware.spec import HardwareSpec
    from .identify import CpuInfo

AMX_OPS_PER_CYCLE = {"bf16": 1024, "fp16": 1024, "int8": 2048}  # per core (Intel)
#: The CPU flags (Linux /proc/cpuinfo names) of native arithmetic in a low-precision dtype:
#: Intel AMX tiles, AVX-512 (AVX512_BF16: Cooper Lake and later; AVX512_FP16: Sapphire
#: Rapids), Arm (BF16: Armv8.6-A BFDOT/BFMMLA; ASIMDHP: Armv8.2-A half-precision SIMD). A CPU
#: with none of them runs the dtype by converting to and from fp32.
NATIVE_FLAGS = {"bf16": ("amx_bf16", "avx512_bf16", "bf16"),
                "fp16": ("amx_fp16", "avx512_fp16", "asimdhp")}


def native_flag(dtype: str, flags: Sequence[str]) -> str | None:
    """The first flag in ``flags`` that gives ``dtype`` native arithmetic, or None."""
    return next((f for f in NATIVE_FLAGS.get(dtype, ()) if f in flags), None)


@dataclass(frozen=True)
class CpuPeak:
    cores: int
    sockets: int
    simd_bits: int
    fma_units: int
    clock_ghz: float  # the vector units' clock
    clock_basis: str
    gflops: dict[str, float]
    bandwidth_gbs: float | None
    assumptions: list[Note] = field(default_factory=list)
    rates: dict[str, float] = field(default_factory=dict)  # FLOP per cycle per core
    units: dict[str, str] = field(default_factory=dict)  # dtype -> "vector" | "amx"
    clocks: dict[str, float] = field(default_factory=dict)  # unit -> GHz

    def cpu_block(self) -> dict[str, Any]:
        """The hwdb ``cpu:`` block (docs/hwdb-schema.md, single-clock form) for these figures."""
        return {"sockets": self.sockets, "cores_per_socket": -(-self.cores // self.sockets),
                "simd_bits": self.simd_bits, "fma_units": self.fma_units,
                "clock_ghz": round(self.clock_ghz, 3), "clock_basis": self.clock_basis}


def simd_bits_for(cpu: CpuInfo) -> tuple[int, Note | None]:
    """Vector width that sets the FMA rate; AMD Zen 2-4 run AVX-512 on 256-bit units."""
    flags = set(cpu.flags)
    if "avx512f" in flags:
        if cpu.vendor == "AMD" and (cpu.family or 0) < 26:
            return 256, Note("amd_avx512_on_256")
        return 512, None
    if "avx2" in flags or "avx" in flags:
        return 256, None
    return 128, Note("no_avx")


def _per_core_cycle(simd_bits: int, fma_units: int, flags: set[str]
                    ) -> tuple[dict[str, float], dict[str, str], list[Note]]:
    """FLOP per cycle per core by dtype, the unit that runs each, and what was assumed."""
    fp32 = fma_units * simd_bits / 32 * 2
    rates = {"fp64": fp32 / 2, "fp32": fp32}
    units = {"fp64": "vector", "fp32": "vector"}
    notes: list[Note] = []
    for dtype, amx_flag, vec_flag in (("bf16", "amx_bf16", "avx512_bf16"),
                                      ("fp16", "amx_fp16", "avx512_fp16"),
                                      ("int8", "amx_int8", "avx512_vnni")):
        if amx_flag in flags:
            rates[dtype], units[dtype] = AMX_OPS_PER_CYCLE[dtype], "amx"
            notes.append(Note("dtype_amx", {"dtype": dtype, "ops": AMX_OPS_PER_CYCLE[dtype]}))
        elif vec_flag in flags:
            rates[dtype], units[dtype] = fp32 * (4 if dtype == "int8" else 2), "vector"
            notes.append(Note("dtype_vector", {"dtype": dtype, "flag": vec_flag.upper(),
                                               "factor": 4 if dtype == "int8" else 2}))
    return rates, units, notes


def _entry_clocks(entry: HardwareSpec) -> tuple[dict[str, float], str, list[Note]]:
    block = entry.cpu
    assert block is not None  # cpu_peak asks only when the entry has a cpu block
    clocks = {unit: block.clock_for(unit) for unit in ("vector", "amx")}
    basis = f"from hwdb entry {entry.name}: {block.clock_label('vector')}"
    notes = [Note("entry_clocks", {"entry": entry.name, "label": block.clock_label("vector")})]
    if "amx" in block.peak_clock:
        notes.append(Note("amx_clock", {"label": block.clock_label("amx")}))
    return clocks, basis, notes


def _measured_clocks(cpu: CpuInfo, effective_ghz: float | None
                     ) -> tuple[dict[str, float], str, list[Note]]:
    advertised = (cpu.clock_hz or 0) / 1e9
    if effective_ghz and effective_ghz > advertised:
        clock = effective_ghz
        basis = (f"measured {effective_ghz:.2f} GHz with all cores busy (dependent-add chain), "
                 f"above the {advertised:.2f} GHz advertised base clock"
                 if advertised else f"measured {effective_ghz:.2f} GHz (dependent-add chain)")
    else:
        clock = advertised
        basis = "advertised base clock (py-cpuinfo hz_advertised)" + (
            f"; the clock measured under load was {effective_ghz:.2f} GHz" if effective_ghz
            else "; the core clock could not be measured here")
    basis += ("; Intel parts run AVX-512 and AMX below the scalar clock, so for them this is "
              "an upper bound")
    return {"vector": clock, "amx": clock}, basis, [Note("clock", {"ghz": clock, "basis": basis})]


def cpu_peak(cpu: CpuInfo, entry: HardwareSpec | None = None,
             effective_ghz: float | None = None) -> CpuPeak | None:
    """Theoretical peaks of ``cpu`` (identify.CpuInfo), ``entry`` its hwdb match or None,
    ``effective_ghz`` the clock measured on this machine (probe.clock) or None."""
    assumptions = [Note("cores", {"cores": cpu.cores, "source": cpu.topology_source,
                                  "sockets": cpu.sockets})]
    if entry is not None and entry.cpu:
        simd, fma = entry.cpu.simd_bits, entry.cpu.fma_units
        clocks, basis, notes = _entry_clocks(entry)
        if effective_ghz:
            notes.append(Note("scalar_clock_unused", {"ghz": effective_ghz}))
    else:
        if not cpu.clock_hz and not effective_ghz:
            return None
        simd, why = simd_bits_for(cpu)
        fma = 2
        clocks, basis, notes = _measured_clocks(cpu, effective_ghz)
        notes = [Note("simd_from_isa", {"bits": simd}), Note("two_fma_units")] + notes + (
            [why] if why else [])
    rates, units, dtype_notes = _per_core_cycle(simd, fma, set(cpu.flags))
    gflops = {d: cpu.cores * clocks[units[d]] * r for d, r in rates.items()}
    bandwidth = None
    if entry is not None:
        bandwidth, modeled = entry_bandwidth(entry, cpu.sockets)
        notes.append(Note("dram_from_entry", {"bandwidth": bandwidth, "entry": entry.name,
                                              "total": entry.bandwidth_gbs,
                                              "modeled": modeled, "sockets": cpu.sockets}))
    else:
        notes.append(Note("dram_unknown"))
    return CpuPeak(cpu.cores, max(1, cpu.sockets), simd, fma, clocks["vector"], basis, gflops,
                   bandwidth, assumptions + notes + dtype_notes, rates, units, clocks)


def entry_bandwidth(entry: HardwareSpec, sockets: int) -> tuple[float, int]:
    """The theoretical DRAM bandwidth of ``sockets`` sockets of the CPU ``entry`` describes,
    and the sockets the entry models: its ``bandwidth_gbs`` covers ``cpu.sockets`` sockets
    (each its own channels: sockets x channels x MT/s x 8 B), so a machine whose process runs
    on another number has that share. A one-socket Xeon 8480+ reads 1 x 8 x 4800 x 8 = 307.2
    GB/s, not the 614.4 of the two-socket entry; a four-socket 8380H 614.4, not 307.2."""
    modeled = entry.cpu.sockets if entry.cpu is not None else 0
    if not modeled or sockets < 1:
        return entry.bandwidth_gbs, modeled
    return entry.bandwidth_gbs * sockets / modeled, modeled


def raise_to_measured(peak: CpuPeak | None, measured: dict[str, float]) -> CpuPeak | None:
    """``peak`` with each unit's clock raised to what a measured rate above it implies.

    A measurement above the ceiling proves the assumed clock (or unit count) too low; the
    implied clock = measured / (cores x FLOP per cycle per core) is the least that explains it.
    """
    if peak is None:
        return None
    clocks, notes = dict(peak.clocks), []
    for dtype, rate in measured.items():
        unit = peak.units.get(dtype)
        if unit is None or not rate or rate <= peak.gflops.get(dtype, 0):
            continue
        implied = rate / (peak.cores * peak.rates[dtype])
        if implied > clocks[unit]:
            notes.append(Note("clock_raised", {"dtype": dtype, "rate": rate,
                                               "computed": peak.gflops[dtype], "unit": unit,
                                               "old": clocks[unit], "new": implied}))
            clocks[unit] = implied
    if not notes:
        return peak
    gflops = {d: peak.cores * clocks[peak.units[d]] * r for d, r in peak.rates.items()}
    basis = peak.clock_basis + ("; raised to the clock the measured GEMM rate implies"
                                if clocks["vector"] != peak.clock_ghz else "")
    return replace(peak, gflops=gflops, clocks=clocks, clock_ghz=clocks["vector"],
                   clock_basis=basis, assumptions=peak.assumptions + notes)


def gpu_theoretical(gpu: dict[str, Any], entry: HardwareSpec | None = None) -> dict[str, Any]:
    """Datasheet peaks of the matching entry, and the bandwidth NVML's clocks imply."""
    result: dict[str, Any] = {"gemm_gflops": {}, "bandwidth_gbs": {}, "assumptions": []}
    if entry is not None:
        result["gemm_gflops"] = {d: v * 1000 for d, v in entry.peak_tflops.items()}
        result["assumptions"].append(Note("gpu_peaks_from_entry", {"entry": entry.name}))
    if gpu.get("theoretical_bandwidth_gbs"):
        result["bandwidth_gbs"]["device"] = gpu["theoretical_bandwidth_gbs"]
        result["assumptions"].append(Note("gpu_bandwidth_from_nvml"))
    elif entry is not None:
        result["bandwidth_gbs"]["device"] = entry.bandwidth_gbs
    if entry is not None and entry.host_link_gbs:
        result["bandwidth_gbs"]["host_to_device"] = entry.host_link_gbs
    return result
