"""Identification and theoretical peaks, against fake /proc, sysfs, py-cpuinfo and pynvml."""

from __future__ import annotations

import sys

import pytest
from _probe_fakes import CPUINFO, fake_pynvml

from roofline.hardware.catalog import list_hardware, load_hardware
from roofline.output.probe_notes import note_text
from roofline.probe import ceilings, identify

PROC = """processor\t: 0
physical id\t: 0
core id\t\t: 0

processor\t: 1
physical id\t: 0
core id\t\t: 0

processor\t: 2
physical id\t: 1
core id\t\t: 0

processor\t: 3
physical id\t: 1
core id\t\t: 1
"""


def test_topology_counts_physical_cores_not_threads(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(PROC)
    # cpus 0 and 1 are hyperthreads of one core: 3 cores on 2 sockets
    assert identify.topology([0, 1, 2, 3], path)[:2] == (2, 3)
    assert identify.topology([0, 1], path)[:2] == (1, 1)


def test_topology_without_core_ids_assumes_one_core_per_cpu(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\n\nprocessor\t: 1\n")
    sockets, cores, source = identify.topology([0, 1], path)
    assert (sockets, cores) == (1, 2)
    assert "assumed" in source


def test_sysfs_caches(tmp_path):
    for cpu, l3_shared in ((0, "0-1"), (1, "0-1")):
        for index, (level, kind, size, shared) in enumerate(
                [(1, "Data", "48K", str(cpu)), (1, "Instruction", "32K", str(cpu)),
                 (2, "Unified", "2048K", str(cpu)), (3, "Unified", "260M", l3_shared)]):
            folder = tmp_path / f"cpu{cpu}" / "cache" / f"index{index}"
            folder.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size),
                                ("shared_cpu_list", shared)):
                (folder / name).write_text(f"{value}\n")
    caches = identify.sysfs_caches([0, 1], tmp_path)
    assert caches[2] == (2048 * 1024, 2)  # one L2 per core
    assert caches[3] == (260 * 2**20, 1)  # one shared L3
    assert caches[1] == (48 * 1024, 2)  # data caches only


def test_identify_cpu_from_a_cpuinfo_dict():
    cpu = identify.identify_cpu(CPUINFO)
    assert cpu.brand == CPUINFO["brand_raw"]
    assert cpu.vendor == "Intel"
    assert cpu.clock_hz == 2.1e9
    assert "AVX-512F" in cpu.isa and "AMX-BF16" in cpu.isa
    assert cpu.to_dict()["isa"] == cpu.isa


def test_identify_cpu_survives_an_empty_cpuinfo():
    cpu = identify.identify_cpu({})
    assert cpu.brand == "unknown CPU" and cpu.clock_hz is None
    assert ceilings.cpu_peak(cpu) is None


def test_unknown_cpu_peak_is_derived_and_states_assumptions():
    cpu = identify.identify_cpu(CPUINFO)
    peak = ceilings.cpu_peak(cpu)
    # cores x 2.1 GHz x 2 FMA x 16 fp32 lanes x 2 = cores x 134.4 GFLOP/s
    assert peak.gflops["fp32"] == pytest.approx(cpu.cores * 134.4)
    assert peak.gflops["fp64"] == pytest.approx(cpu.cores * 67.2)
    # AMX: 1024 bf16 ops per cycle per core; int8 2048
    assert peak.gflops["bf16"] == pytest.approx(cpu.cores * 2.1 * 1024)
    assert peak.gflops["int8"] == pytest.approx(cpu.cores * 2.1 * 2048)
    assert "fp16" not in peak.gflops  # neither avx512_fp16 nor amx_fp16 in the fake flags
    text = " ".join(map(note_text, peak.assumptions))
    assert "2 FMA units" in text and "base clock" in text
    assert peak.cpu_block()["simd_bits"] == 512


def test_zen4_avx512_counts_256_bit_units():
    info = CPUINFO | {"vendor_id_raw": "AuthenticAMD", "family": 25, "brand_raw": "AMD EPYC",
                      "flags": ["avx2", "fma", "avx512f"]}
    cpu = identify.identify_cpu(info)
    peak = ceilings.cpu_peak(cpu)
    assert peak.simd_bits == 256
    assert peak.gflops["fp32"] == pytest.approx(cpu.cores * 2.1 * 2 * 8 * 2)


def test_known_cpu_uses_the_hwdb_block():
    brand = "Intel(R) Xeon(R) Platinum 8180 CPU @ 2.50GHz"
    entry = identify.match_cpu(brand, list_hardware())
    assert entry is not None and entry.name == "xeon-platinum-8180"
    cpu = identify.identify_cpu(CPUINFO | {"brand_raw": brand})
    peak = ceilings.cpu_peak(cpu, entry)
    # the entry's AVX-512 all-core turbo, not the 2.5 GHz base: cores x 2.3 x 2 x 16 x 2
    assert peak.gflops["fp32"] == pytest.approx(cpu.cores * 2.3 * 64)
    # the entry's two sockets' 2 x 6 x 2666 x 8 = 255.9 GB/s, scaled to this process's sockets
    assert peak.bandwidth_gbs == pytest.approx(entry.bandwidth_gbs * cpu.sockets / 2)
    assert identify.match_cpu("AMD EPYC", list_hardware()) is None


@pytest.mark.parametrize(("name", "sockets", "hand"), [
    # one socket of the two-socket entry: 1 socket x 8 channels x 4800 MT/s x 8 B (Intel ARK:
    # 8 x DDR5-4800 a socket) = 307.2 GB/s, not the entry's 614.4
    ("xeon-platinum-8480plus", 1, 1 * 8 * 4800 * 8 / 1000),
    ("xeon-platinum-8480plus", 2, 2 * 8 * 4800 * 8 / 1000),
    # Cooper Lake is a 4- and 8-socket platform: 4 x 6 x 3200 x 8 = 614.4 GB/s, where the
    # two-socket entry's 307.2 would have put a good DRAM stream over its ceiling
    ("xeon-platinum-8380h", 4, 4 * 6 * 3200 * 8 / 1000),
    ("epyc-9654", 1, 1 * 12 * 4800 * 8 / 1000),
])
def test_the_entrys_dram_ceiling_is_scaled_to_the_sockets_probed(name, sockets, hand):
    """The probe's theoretical DRAM bandwidth from a matched entry is that of the sockets this
    process runs on: the entry's figure covers its own cpu.sockets (found on the CPU tour: a
    one-socket 8480+ would read its DRAM stream as a share of two sockets' 614.4 GB/s)."""
    import dataclasses

    entry = load_hardware(name)
    cpu = dataclasses.replace(identify.identify_cpu(CPUINFO | {"brand_raw": entry.cpu_brands[0]}),
                              sockets=sockets)
    peak = ceilings.cpu_peak(cpu, entry)
    assert peak.bandwidth_gbs == pytest.approx(hand)
    note = next(n for n in peak.assumptions if n.code == "dram_from_entry")
    assert note_text(note) == (f"DRAM bandwidth {hand:g} GB/s from hwdb entry {name}: its "
                               f"{entry.bandwidth_gbs:g} GB/s over the 2 socket(s) it models, "
                               f"for the {sockets} socket(s) this process runs on")


def test_identify_gpus_with_a_fake_pynvml(monkeypatch):
    nv = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    gpus, reason = identify.identify_gpus()
    assert reason is None and len(gpus) == 1
    gpu = gpus[0]
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB"
    assert (gpu["pcie_generation"], gpu["pcie_width"], gpu["sm_clock_max_mhz"]) == (4, 16, 1410)
    assert gpu["compute_capability"] is None  # NOT_SUPPORTED is tolerated
    # 2 x 1593 MHz x 5120 bit / 8 / 1000 = 2039.04 GB/s (A100 80GB datasheet: 2039)
    assert gpu["theoretical_bandwidth_gbs"] == pytest.approx(2039.04)
    assert nv.calls == ["init", "shutdown"]
    assert identify.match_gpu(gpu["name"], list_hardware()).name == "a100-sxm4-80gb"
    theory = ceilings.gpu_theoretical(gpu, load_hardware("a100-sxm4-80gb"))
    assert theory["gemm_gflops"]["fp16"] == pytest.approx(312_000)


def test_identify_gpus_without_a_driver(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(init_error=OSError("no driver")))
    gpus, reason = identify.identify_gpus()
    assert gpus == [] and "NVML is not available" in reason


def test_identify_gpus_without_pynvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import raises ImportError
    assert identify.identify_gpus() == ([], "pynvml (nvidia-ml-py) is not installed")


def test_blas_info_reports_numpys_blas():
    info = identify.blas_info()
    assert info and {"internal_api", "num_threads"} <= set(info[0])


def test_measured_clock_above_base_sets_the_theoretical_peak():
    cpu = identify.identify_cpu(CPUINFO)  # advertised 2.1 GHz
    peak = ceilings.cpu_peak(cpu, effective_ghz=3.5)
    # cores x 3.5 GHz x 2 FMA x 16 fp32 lanes x 2 = cores x 224 GFLOP/s
    assert peak.gflops["fp32"] == pytest.approx(cpu.cores * 224)
    assert peak.gflops["bf16"] == pytest.approx(cpu.cores * 3.5 * 1024)  # AMX, same clock
    assert "measured 3.50 GHz" in " ".join(map(note_text, peak.assumptions))
    assert peak.cpu_block()["clock_ghz"] == 3.5


def test_measured_clock_below_base_keeps_the_base_clock():
    cpu = identify.identify_cpu(CPUINFO)
    peak = ceilings.cpu_peak(cpu, effective_ghz=1.5)
    assert peak.clock_ghz == 2.1
    assert "measured under load was 1.50 GHz" in " ".join(map(note_text, peak.assumptions))


def test_zen4_measured_clock_counts_256_bit_units():
    info = CPUINFO | {"vendor_id_raw": "AuthenticAMD", "family": 25, "brand_raw": "AMD EPYC",
                      "hz_advertised": [2600000000, 0], "flags": ["avx2", "fma", "avx512f"]}
    cpu = identify.identify_cpu(info)
    peak = ceilings.cpu_peak(cpu, effective_ghz=3.5)
    # the Zen 4 VM: 2 cores x 3.5 GHz x 2 FMA x 8 lanes x 2 = 224 GFLOP/s, not the
    # 166.2 at the 2.6 GHz base, and AVX-512 doubles nothing (256-bit units)
    assert peak.gflops["fp32"] == pytest.approx(cpu.cores * 3.5 * 32)


def test_a_measured_rate_above_the_peak_raises_the_clock_and_says_why():
    cpu = identify.identify_cpu(CPUINFO)
    peak = ceilings.cpu_peak(cpu)  # 2.1 GHz: fp32 = cores x 134.4
    measured = {"fp32": cpu.cores * 3.0 * 64, "fp64": cpu.cores * 10.0}  # fp32 implies 3.0 GHz
    raised = ceilings.raise_to_measured(peak, measured)
    assert raised.gflops["fp32"] == pytest.approx(measured["fp32"])
    assert raised.gflops["fp64"] == pytest.approx(cpu.cores * 3.0 * 32)  # same vector unit
    assert raised.gflops["bf16"] == peak.gflops["bf16"]  # AMX: no measurement, not raised
    assert raised.clock_ghz == pytest.approx(3.0)
    assert "the vector clock is raised from 2.10 to the 3.00 GHz" in note_text(raised.assumptions[-1])
    assert ceilings.raise_to_measured(peak, {"fp32": 1.0}) is peak


def test_known_cpu_notes_the_measured_clock_but_keeps_its_isa_clock():
    brand = "Intel(R) Xeon(R) Platinum 8480+"
    entry = identify.match_cpu(brand, list_hardware())
    cpu = identify.identify_cpu(CPUINFO | {"brand_raw": brand})
    peak = ceilings.cpu_peak(cpu, entry, effective_ghz=3.0)
    # AVX-512 and AMX at the entry's 2.0 GHz (upper bounds), not the 3.0 GHz scalar clock
    assert peak.gflops["fp32"] == pytest.approx(cpu.cores * 2.0 * 64)
    assert peak.gflops["bf16"] == pytest.approx(cpu.cores * 2.0 * 1024)
    assert "3.00 GHz (not used" in " ".join(map(note_text, peak.assumptions))
