"""Theoretical ceilings of the probed machine, with every assumption written down.

CPU: peak FLOP/s = cores x clock x FMA units x SIMD lanes x 2 (an FMA is 2 FLOPs). Lanes come
from the ISA flags; FMA units and clock from the matching hwdb entry's ``cpu:`` block when the
brand is known, else assumed (2 FMA units; the advertised base clock, which is neither the
AVX-512 all-core clock, usually lower, nor the turbo clock, usually higher). The core count is
always the physical cores this process may run on, so a VM slice gets its own share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

AMX_OPS_PER_CYCLE = {"bf16": 1024, "fp16": 1024, "int8": 2048}  # per core (Intel)


@dataclass(frozen=True)
class CpuPeak:
    cores: int
    sockets: int
    simd_bits: int
    fma_units: int
    clock_ghz: float
    clock_basis: str
    gflops: dict[str, float]
    bandwidth_gbs: float | None
    assumptions: list[str] = field(default_factory=list)

    def cpu_block(self) -> dict[str, Any]:
        """The hwdb ``cpu:`` block (docs/hwdb-schema.md) for these figures."""
        return {"sockets": self.sockets, "cores_per_socket": -(-self.cores // self.sockets),
                "simd_bits": self.simd_bits, "fma_units": self.fma_units,
                "clock_ghz": round(self.clock_ghz, 3), "clock_basis": self.clock_basis}


def simd_bits_for(cpu) -> tuple[int, str | None]:
    """Vector width that sets the FMA rate; AMD Zen 2-4 run AVX-512 on 256-bit units."""
    flags = set(cpu.flags)
    if "avx512f" in flags:
        if cpu.vendor == "AMD" and (cpu.family or 0) < 26:
            return 256, "AMD family < 26 (Zen 4 and older) executes AVX-512 on 256-bit units"
        return 512, None
    if "avx2" in flags or "avx" in flags:
        return 256, None
    return 128, "no AVX flags seen: 128-bit SIMD assumed"


def _per_core_cycle(simd_bits: int, fma_units: int, flags: set[str]) -> tuple[dict, list[str]]:
    fp32 = fma_units * simd_bits / 32 * 2
    rates = {"fp64": fp32 / 2, "fp32": fp32}
    notes = []
    for dtype, amx_flag, vec_flag in (("bf16", "amx_bf16", "avx512_bf16"),
                                      ("fp16", "amx_fp16", "avx512_fp16"),
                                      ("int8", "amx_int8", "avx512_vnni")):
        if amx_flag in flags:
            rates[dtype] = AMX_OPS_PER_CYCLE[dtype]
            notes.append(f"{dtype}: AMX, {AMX_OPS_PER_CYCLE[dtype]} ops/cycle/core at the same "
                         f"clock (the sustained AMX clock is not published; an upper bound)")
        elif vec_flag in flags:
            rates[dtype] = fp32 * (4 if dtype == "int8" else 2)
            notes.append(f"{dtype}: {vec_flag.upper()}, {4 if dtype == 'int8' else 2}x the "
                         f"fp32 rate")
    return rates, notes


def cpu_peak(cpu, entry=None) -> CpuPeak | None:
    """Theoretical peaks of ``cpu`` (a machine.CpuInfo), ``entry`` its hwdb match or None."""
    assumptions = [f"{cpu.cores} physical cores usable by this process "
                   f"({cpu.topology_source}), {cpu.sockets} socket(s)"]
    block = entry.cpu if entry is not None else None
    if block:
        simd, fma, clock_ghz = block.simd_bits, block.fma_units, block.clock_ghz
        basis = f"from hwdb entry {entry.name}: {block.clock_basis or 'clock as listed'}"
        assumptions.append(f"SIMD width, FMA units and clock from hwdb entry {entry.name}")
    else:
        if not cpu.clock_hz:
            return None
        simd, why = simd_bits_for(cpu)
        fma, clock_ghz = 2, cpu.clock_hz / 1e9
        basis = ("advertised base clock (py-cpuinfo hz_advertised); the AVX-512 all-core clock "
                 "is usually lower, turbo higher")
        assumptions += [f"{simd}-bit SIMD from the ISA flags", "2 FMA units per core assumed "
                        "(true for recent server cores; some Xeon Silver/Gold 5xxx have 1)",
                        f"clock {clock_ghz:.2f} GHz = {basis}"] + ([why] if why else [])
    rates, notes = _per_core_cycle(simd, fma, set(cpu.flags))
    gflops = {d: cpu.cores * clock_ghz * r for d, r in rates.items()}
    bandwidth = None
    if entry is not None:
        bandwidth = entry.bandwidth_gbs
        assumptions.append(f"DRAM bandwidth {bandwidth:g} GB/s from hwdb entry {entry.name} "
                           f"(all sockets and channels it models)")
    else:
        assumptions.append("theoretical DRAM bandwidth unknown: channels and memory speed are "
                           "not visible without root (dmidecode)")
    return CpuPeak(cpu.cores, max(1, cpu.sockets), simd, fma, clock_ghz, basis, gflops,
                   bandwidth, assumptions + notes)


def gpu_theoretical(gpu: dict[str, Any], entry=None) -> dict[str, Any]:
    """Datasheet peaks of the matching entry, and the bandwidth NVML's clocks imply."""
    result: dict[str, Any] = {"gemm_gflops": {}, "bandwidth_gbs": {}, "assumptions": []}
    if entry is not None:
        result["gemm_gflops"] = {d: v * 1000 for d, v in entry.peak_tflops.items()}
        result["assumptions"].append(f"peaks: dense datasheet figures of hwdb entry {entry.name}")
    if gpu.get("theoretical_bandwidth_gbs"):
        result["bandwidth_gbs"]["device"] = gpu["theoretical_bandwidth_gbs"]
        result["assumptions"].append("device bandwidth = 2 x NVML max memory clock x bus width")
    elif entry is not None:
        result["bandwidth_gbs"]["device"] = entry.bandwidth_gbs
    if entry is not None and entry.host_link_gbs:
        result["bandwidth_gbs"]["host_to_device"] = entry.host_link_gbs
    return result
