"""Who is this machine: CPU (py-cpuinfo, /proc/cpuinfo, sysfs caches), BLAS (threadpoolctl),
GPUs (pynvml), and which hwdb entries they match. Identification only: nothing is timed here.

Every heavy or optional import (cpuinfo, threadpoolctl, pynvml) happens inside a function.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# kernel flag name -> how we print it; the ones that change a peak or a kernel choice
ISA_FLAGS = {"fma": "FMA", "avx2": "AVX2", "avx512f": "AVX-512F", "avx512_vnni": "AVX512_VNNI",
             "avx_vnni": "AVX_VNNI", "avx512_bf16": "AVX512_BF16", "avx512_fp16": "AVX512_FP16",
             "amx_tile": "AMX-TILE", "amx_bf16": "AMX-BF16", "amx_int8": "AMX-INT8",
             "amx_fp16": "AMX-FP16", "asimd": "NEON", "asimdhp": "ASIMDHP", "bf16": "BF16",
             "sve": "SVE"}
VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}


@dataclass(frozen=True)
class CpuInfo:
    brand: str
    vendor: str
    family: int | None
    model: int | None
    sockets: int
    cores: int  # physical cores we may run on (affinity), all sockets
    logical_cpus: int
    usable_cpus: int
    flags: tuple[str, ...]  # the ISA_FLAGS keys present
    clock_hz: float | None  # py-cpuinfo hz_advertised: the base clock, never an AVX clock
    l2_bytes_total: int | None
    llc_bytes: int | None  # one instance of the last-level cache
    llc_instances: int
    topology_source: str

    @property
    def isa(self) -> list[str]:
        return [ISA_FLAGS[f] for f in ISA_FLAGS if f in self.flags]

    @property
    def llc_bytes_total(self) -> int | None:
        return self.llc_bytes * self.llc_instances if self.llc_bytes else None

    @property
    def cores_per_socket(self) -> int:
        return -(-self.cores // max(1, self.sockets))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flags"] = list(self.flags)
        data.update(isa=self.isa, llc_bytes_total=self.llc_bytes_total,
                    cores_per_socket=self.cores_per_socket)
        return data


def cpuinfo_dict() -> dict[str, Any]:
    """py-cpuinfo's view (about 1 s: it runs a subprocess); {} if it fails."""
    try:
        import cpuinfo

        return cpuinfo.get_cpu_info()
    except Exception:  # noqa: BLE001 - identification must never stop a probe
        return {}


def usable_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return list(range(os.cpu_count() or 1))


def parse_proc_cpuinfo(text: str) -> dict[int, tuple[str, str]]:
    """processor number -> (physical id, core id), for the blocks that give both."""
    result = {}
    for block in text.split("\n\n"):
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if "processor" in fields and "core id" in fields:
            result[int(fields["processor"])] = (fields.get("physical id", "0"), fields["core id"])
    return result


def topology(cpus: list[int], proc_cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[int, int, str]:
    """(sockets, physical cores) among ``cpus``, and where that came from."""
    try:
        ids = parse_proc_cpuinfo(proc_cpuinfo.read_text())
    except OSError:
        ids = {}
    known = [ids[c] for c in cpus if c in ids]
    if not known:
        return 1, len(cpus), "assumed one core per usable logical CPU and one socket"
    return len({p for p, _ in known}), len(set(known)), str(proc_cpuinfo)


def parse_size(text: str) -> int:
    """sysfs cache sizes: '48K', '2048K', '260M' -> bytes."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMGB") or 0) * scale


def sysfs_caches(cpus: list[int], root: Path = Path("/sys/devices/system/cpu")
                 ) -> dict[int, tuple[int, int]]:
    """cache level -> (bytes per instance, distinct instances among ``cpus``), data/unified."""
    levels: dict[int, tuple[int, set[str]]] = {}
    for cpu in cpus:
        for index in sorted((root / f"cpu{cpu}" / "cache").glob("index*")):
            try:
                if (index / "type").read_text().strip() == "Instruction":
                    continue
                level = int((index / "level").read_text())
                size = parse_size((index / "size").read_text())
                shared = (index / "shared_cpu_list").read_text().strip()
            except (OSError, ValueError):
                continue
            levels.setdefault(level, (size, set()))[1].add(shared)
    return {level: (size, len(shared)) for level, (size, shared) in levels.items()}


def identify_cpu(info: dict[str, Any] | None = None) -> CpuInfo:
    """The CPU we run on; ``info`` is a py-cpuinfo dict (read with cpuinfo_dict if None)."""
    info = cpuinfo_dict() if info is None else info
    cpus = usable_cpus()
    sockets, cores, source = topology(cpus)
    caches = sysfs_caches(cpus)
    l2 = caches.get(2)
    llc_level = max(caches) if caches else None
    llc, instances = caches[llc_level] if llc_level and llc_level >= 2 else (None, 1)
    if llc is None and info.get("l3_cache_size"):
        llc = int(info["l3_cache_size"])  # unreliable (per-core L2 on AMD); only a fallback
    hz = info.get("hz_advertised") or [0]
    flags = set(info.get("flags", []))
    return CpuInfo(
        brand=info.get("brand_raw") or "unknown CPU",
        vendor=VENDORS.get(info.get("vendor_id_raw", ""), info.get("vendor_id_raw") or "unknown"),
        family=info.get("family"), model=info.get("model"),
        sockets=sockets, cores=cores, logical_cpus=os.cpu_count() or len(cpus),
        usable_cpus=len(cpus), flags=tuple(f for f in ISA_FLAGS if f in flags),
        clock_hz=float(hz[0]) if hz and hz[0] else None,
        l2_bytes_total=l2[0] * l2[1] if l2 else info.get("l2_cache_size"),
        llc_bytes=llc, llc_instances=instances, topology_source=source)


def machine_text(hostname: str, cpu: CpuInfo, platform_text: str) -> str:
    """The machine as an entry records it (``measured.machine``): ``host: CPU brand, N cores,
    platform``. ``analysis.measure.check_measurable`` reads the host and the CPU back from it
    to tell whether ``--measure`` runs where the entry was measured."""
    return f"{hostname}: {cpu.brand}, {cpu.cores} cores, {platform_text}"


def this_machine() -> str:
    """This machine in the words of ``machine_text``."""
    import platform

    return machine_text(platform.node(), identify_cpu(), platform.platform())


def blas_info() -> list[dict[str, Any]]:
    """threadpoolctl's entries for the BLAS libraries loaded (numpy's), with thread counts."""
    import numpy  # noqa: F401 - loads the BLAS so that threadpoolctl can see it
    from threadpoolctl import threadpool_info

    keys = ("internal_api", "version", "num_threads", "threading_layer", "architecture",
            "prefix", "filepath")
    return [{k: entry.get(k) for k in keys} for entry in threadpool_info()
            if entry.get("user_api") == "blas"]


#: threadpoolctl's ``internal_api`` -> how the BLAS names itself
BLAS_NAMES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS", "flexiblas": "FlexiBLAS",
              "accelerate": "Accelerate", "open": "OpenBLAS"}  # open: torch's BLAS_INFO


def numpy_library(blas: list[dict[str, Any]]) -> dict[str, Any]:
    """numpy as a calibration's library (``hardware.spec.CalibrationLibrary``): its version,
    its BLAS (``blas_info``'s first entry: ``OpenBLAS 0.3.31``) and that BLAS's threads."""
    import numpy

    first = blas[0] if blas else {}
    api = str(first.get("internal_api") or "")
    name = " ".join(str(part) for part in (BLAS_NAMES.get(api, api), first.get("version"))
                    if part) or None
    return {"name": "numpy", "version": numpy.__version__, "blas": name,
            "threads": first.get("num_threads")}


def torch_library() -> dict[str, Any]:
    """torch as a calibration's library: its version, the GEMM libraries it was built with as
    ``torch.__config__.show()`` names them (``MKL 2024.2, oneDNN 3.12.0``; its
    ``BLAS_INFO`` when no version is printed) and ``torch.get_num_threads()``."""
    import torch

    return {"name": "torch", "version": str(torch.__version__),
            "blas": torch_blas(torch.__config__.show()), "threads": torch.get_num_threads()}


def torch_blas(config: str) -> str | None:
    """The GEMM libraries in torch's build description (``torch.__config__.show()``)."""
    import re

    found = []
    mkl = re.search(r"Math Kernel Library Version ([0-9.]+)", config)
    info = re.search(r"BLAS_INFO=(\w+)", config)
    if mkl:
        found.append(f"MKL {mkl.group(1)}")
    elif info:
        found.append(BLAS_NAMES.get(info.group(1).lower(), info.group(1)))
    dnn = re.search(r"(?:MKL-DNN|oneDNN) v?([0-9][0-9.]*)", config)
    if dnn and "USE_MKLDNN=OFF" not in config:
        found.append(f"oneDNN {dnn.group(1)}")
    return ", ".join(found) or None


def match_cpu(brand: str, specs: list) -> Any:
    """The first datasheet cpu entry one of whose ``cpu_brands`` is a substring of ``brand``."""
    for spec in specs:
        if spec.kind == "cpu" and spec.origin == "datasheet" and any(
                b.strip() and b.strip() in brand for b in spec.cpu_brands):
            return spec
    return None


def match_gpu(name: str, specs: list) -> Any:
    """The datasheet gpu entry whose ``nvml_names`` holds ``name`` (case-insensitive)."""
    for spec in specs:
        names = [n.lower() for n in spec.nvml_names]
        if spec.kind == "gpu" and spec.origin == "datasheet" and name.lower() in names:
            return spec
    return None


def datasheet_entries() -> list:
    """Bundled and user entries; [] if the database cannot be read (identification goes on)."""
    from ..errors import RooflineError
    from ..hardware.catalog import list_hardware

    try:
        return list_hardware()
    except RooflineError:
        return []


def _nvml(call: Any, *args: Any) -> Any:
    """One NVML query; None when the driver or device does not support it."""
    try:
        value = call(*args)
    except Exception:  # noqa: BLE001 - pynvml raises NVMLError subclasses per code
        return None
    return value.decode() if isinstance(value, bytes) else value


def _gpu_facts(nv: Any, index: int) -> dict[str, Any]:
    handle = nv.nvmlDeviceGetHandleByIndex(index)
    memory = _nvml(nv.nvmlDeviceGetMemoryInfo, handle)
    mem_mhz = _nvml(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM)
    bus_bits = _nvml(nv.nvmlDeviceGetMemoryBusWidth, handle)
    facts = {
        "index": index, "name": _nvml(nv.nvmlDeviceGetName, handle) or f"GPU {index}",
        "memory_bytes": getattr(memory, "total", None),
        "sm_clock_max_mhz": _nvml(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM),
        "memory_clock_max_mhz": mem_mhz, "memory_bus_bits": bus_bits,
        "pcie_generation": _nvml(nv.nvmlDeviceGetMaxPcieLinkGeneration, handle),
        "pcie_width": _nvml(nv.nvmlDeviceGetMaxPcieLinkWidth, handle),
        "compute_capability": _nvml(nv.nvmlDeviceGetCudaComputeCapability, handle),
    }
    if mem_mhz and bus_bits:  # double data rate: 2 x clock x bus bytes
        facts["theoretical_bandwidth_gbs"] = 2 * mem_mhz * bus_bits / 8 / 1000
    return facts


def identify_gpus() -> tuple[list[dict[str, Any]], str | None]:
    """NVIDIA GPUs seen by NVML (pynvml), and why none could be listed (None if fine)."""
    try:
        import pynvml as nv
    except ImportError:
        return [], "pynvml (nvidia-ml-py) is not installed"
    try:
        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound, DriverNotLoaded...
        return [], f"NVML is not available ({exc or type(exc).__name__}): no NVIDIA driver?"
    try:
        return [_gpu_facts(nv, i) for i in range(nv.nvmlDeviceGetCount())], None
    except Exception as exc:  # noqa: BLE001
        return [], f"NVML query failed: {exc or type(exc).__name__}"
    finally:
        _nvml(nv.nvmlShutdown)
