"""A hardware entry: the validated, immutable form of one ``hwdb/**/*.yaml`` file.

Parsing and validation are in ``hardware.schema``; the schema is docs/hwdb-schema.md. Units
are in the key names: TFLOP/s (10^12 FLOP/s, a multiply-add is 2 FLOPs), decimal GB/s (10^9
B/s), GB, MB, GHz, W.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..errors import UnsupportedDtypeError, option
from ..model.dtypes import DTYPES
from ..roof import ridge_point

KINDS = ("gpu", "cpu")
ORIGINS = ("datasheet", "measured")
FIGURE_KEYS = ("peak_tflops", "vector_tflops", "sparse_tflops", "bandwidth_gbs", "memory",
               "llc_mb", "host_link", "nvlink", "tdp_w", "gpu", "cpu", "alignment")
_DESCRIPTIVE_KEYS = ("name", "kind", "vendor", "model", "architecture", "aliases", "nvml_names",
                     "cpu_brands", "sources", "notes", "origin", "theoretical", "measured",
                     "calibration")
# analysis.predict.CALIBRATION_VERSION and the ones it still reads
CALIBRATION_VERSIONS = (1, 2, 3, 4, 5)
#: The libraries a calibration's GEMMs can be timed through (``calibration.library.name``):
#: numpy's BLAS or torch on a CPU, torch or cupy on a GPU.
CALIBRATION_LIBRARIES = ("numpy", "torch", "cupy")
#: How a GPU calibration's two small kernels were timed (``GpuOpsCalibration.timing``)
GPU_TIMINGS = ("graph", "eager")
TOP_KEYS = frozenset(FIGURE_KEYS + _DESCRIPTIVE_KEYS)
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-_+")


@dataclass(frozen=True)
class Alignment:
    """Matrix-engine dimension multiples for one dtype, in elements.

    ``multiple`` is NVIDIA's 16-byte rule (FP16: 8); ``preferred`` the 128-byte rule that runs
    best on A100 and later (FP16: 64). Equal when the device states no preference.
    """

    multiple: int
    preferred: int


@dataclass(frozen=True)
class Source:
    title: str
    url: str | None
    command: str | None
    covers: tuple[str, ...]


_LINK_NAMES = {"pcie": "PCIe", "nvlink": "NVLink"}


@dataclass(frozen=True)
class HostLink:
    """The link host memory is reached through: its type and per-direction bandwidth."""

    type: str
    bandwidth_gbs: float
    generation: int | None = None
    lanes: int | None = None

    @property
    def label(self) -> str:
        """``"PCIe 4"``, ``"NVLink 2"``, or ``"host link"`` for an unknown type."""
        name = _LINK_NAMES.get(self.type, "host link")
        return f"{name} {self.generation}" if self.generation else name


@dataclass(frozen=True)
class GpuBlock:
    """A GPU's SM count, the clock its Tensor-Core peak assumes, and the tiles worth modelling:
    ``tiles`` for the Tensor Cores (empty before Volta), ``simt_tiles`` for CUDA-core GEMMs
    (empty: the GPU model's defaults, ``analysis.gpu_gemm.DEFAULT_CUDA_CORE_TILES``).
    ``sustained_clock_ghz``: the SM clock a published measurement saw this board hold through a
    long GEMM-heavy load (power or thermal limits, GPU Boost); None: the boost clock.
    ``vector_clock_ghz``: the clock the vendor's FP32 and FP64 peaks assume where it is not
    ``boost_clock_ghz`` (H100 SXM5: FP32 67 TFLOP/s is 132 SMs x 128 lanes x 2 x 1.98 GHz, its
    16-bit Tensor-Core figures 1.83 GHz); None: the same clock. ``resident_threads``: the most
    threads an SM holds at once (CUDA's technical specifications per compute capability), where
    it is not 2,048 (Turing 1,024; GA10x Ampere and Ada 1,536); None: 2,048. ``pcie_p2p``:
    False where two of these boards cannot read each other's memory over PCIe (peer-to-peer
    access; GeForce RTX 3090 and 4090: deviceQuery says ``Peer access ... : No``), so their
    all-reduces go through host memory and vLLM turns its custom all-reduce off
    (``plan.make_fabric``, ``serving_tp.allreduce``); None: they can."""

    sms: int
    boost_clock_ghz: float
    tiles: tuple[tuple[int, int], ...] = ()
    simt_tiles: tuple[tuple[int, int], ...] = ()
    sustained_clock_ghz: float | None = None
    vector_clock_ghz: float | None = None
    resident_threads: int | None = None
    pcie_p2p: bool | None = None


CLOCK_ISAS = ("non_avx", "avx2", "avx512", "amx")
CLOCK_KINDS = ("base", "all_core_turbo")
CLOCK_TAGS = ("R", "3P", "D", "unconfirmed")
CLOCK_UNITS = ("vector", "amx")


@dataclass(frozen=True)
class Clock:
    """One clock figure of ``cpu.clocks``: GHz, how sure (tag), where from, and whether the
    value is the figure itself (bound None) or only an upper / lower bound of it."""

    ghz: float
    tag: str
    source: str
    bound: str | None = None


@dataclass(frozen=True)
class CpuBlock:
    """What a CPU entry's peak is derived from: sockets x cores x clock x FMA units x lanes x 2
    (AMX: sockets x cores x clock x ops per cycle).

    ``clock_ghz`` is the vector units' clock. Datasheet entries give it as
    ``peak_clock.vector`` (an ``isa.kind`` of ``clocks``) and AMX dtypes run at
    ``peak_clock.amx``; the single-clock form (``clock_ghz``) has one clock for every unit.
    """

    sockets: int
    cores_per_socket: int
    simd_bits: int
    fma_units: int
    clock_ghz: float
    clock_basis: str = ""
    clocks: dict[str, dict[str, Clock]] = field(default_factory=dict)
    peak_clock: dict[str, tuple[str, str]] = field(default_factory=dict)
    amx_ops_per_cycle: dict[str, int] = field(default_factory=dict)

    def unit_for(self, dtype: str, vector_only: bool = False) -> str:
        """``"amx"`` for a dtype the matrix engine runs (unless ``vector_only``), else vector."""
        return "amx" if dtype in self.amx_ops_per_cycle and not vector_only else "vector"

    def clock_for(self, unit: str) -> float:
        """GHz the peak of ``unit`` ("vector" or "amx") assumes."""
        if unit not in self.peak_clock:
            return self.clock_ghz
        isa, kind = self.peak_clock[unit]
        return self.clocks[isa][kind].ghz

    def clock_label(self, unit: str) -> str:
        """``"2.3 GHz = avx512 all_core_turbo [3P]"``, or the single clock and its basis."""
        if unit not in self.peak_clock:
            return f"{self.clock_ghz:g} GHz ({self.clock_basis or 'one clock for every unit'})"
        isa, kind = self.peak_clock[unit]
        clock = self.clocks[isa][kind]
        bound = f", {clock.bound} bound" if clock.bound else ""
        return f"{clock.ghz:g} GHz = {isa} {kind}{bound} [{clock.tag}]"


@dataclass(frozen=True)
class Theoretical:
    """A measured entry's computed ceilings, beside its measured ones (``theoretical:``)."""

    peak_tflops: dict[str, float]
    bandwidth_gbs: float | None


@dataclass(frozen=True)
class GemmEfficiency:
    """What the probe measured of one dtype's GEMMs, as a share of its peak (after the per-call
    overhead): ``square`` (n, efficiency) for n^3 GEMMs, ``thin`` (m, efficiency) for
    m x ``thin_nk`` x ``thin_nk`` (B in cache), ``thin_dram`` the same at ``thin_dram_nk``
    (B beyond the LLC; empty before calibration version 2); ``peak_n`` is the size the peak
    itself was measured at; ``c_write_passes`` C's cost for this dtype (None before version 2:
    then the calibration's one figure holds)."""

    square: tuple[tuple[int, float], ...]
    thin: tuple[tuple[int, float], ...]
    thin_nk: int
    peak_n: int
    thin_dram: tuple[tuple[int, float], ...] = ()
    thin_dram_nk: int = 0
    c_write_passes: float | None = None


@dataclass(frozen=True)
class GpuOpsCalibration:
    """What a probe on a GPU measured (calibration version 3), against the entry's own measured
    peaks and bandwidth: for ``analysis.gpu_ops`` the share of the bandwidth a streaming kernel
    sustains and one small kernel's time back to back (``launch_s``); for the GPU GEMM model
    (``analysis.gpu_gemm``) the sustained share of the peak of Tensor-Core and CUDA-core GEMMs
    and a GEMM kernel's fixed time (``min_kernel_s``: a small GEMM's, back to back; the model
    adds it to every GEMM's main loop or DRAM stream). ``timing`` says how the two small kernels
    were timed: ``graph``, replayed from a CUDA graph, the GPU's time alone (calibration
    version 5 on), or ``eager``, called from Python, the host's per-call cost included."""

    dram_fraction: float
    launch_s: float
    tensor_core_fraction: float
    cuda_core_fraction: float
    min_kernel_s: float
    timing: str = "eager"


#: The op-cost rates a CPU calibration may hold (``CpuOpsCalibration.rates_gbs``), each the
#: bytes an op of its class moves (counted as roofline counts the op's bytes) per second of
#: its work: ``stream_cache`` / ``stream_dram`` an add within / beyond the last-level cache,
#: ``copy`` a permuted copy, ``tanh``, ``exp``, ``gelu`` (erf), ``softmax``, ``layernorm``,
#: ``batchnorm`` (training statistics), ``max_pool2d`` (3x3, stride 2, NCHW). What each kernel
#: is: ``kernels.cpu_ops``; how an op uses them: ``analysis.cpu_ops``.
OP_RATE_KEYS = ("stream_cache", "stream_dram", "copy", "tanh", "exp", "gelu", "softmax",
                "layernorm", "batchnorm", "max_pool2d")
OP_LIBRARIES = ("numpy", "torch")


@dataclass(frozen=True)
class CpuOpsCalibration:
    """What a probe on a CPU measured of the ops between the GEMMs (calibration version 4,
    ``ops``), timed through ``library`` with ``threads`` threads in ``dtype``: ``call_s`` one
    tiny op call (Python, dispatch, allocation), ``rates_gbs`` per op class (``OP_RATE_KEYS``;
    ``stream_cache`` and ``stream_dram`` always), fused attention (``scaled_dot_product_attention``)
    as a share of the entry's peak of ``dtype`` by sequence length, without and with the causal
    mask, at head dim ``attention_head_dim`` (empty: not measured), and ``missing``: each class
    not measured and why (``analysis.cpu_ops`` then streams it and says so)."""

    library: str
    dtype: str
    threads: int
    call_s: float
    rates_gbs: dict[str, float]
    attention: tuple[tuple[int, float], ...] = ()
    attention_causal: tuple[tuple[int, float], ...] = ()
    attention_head_dim: int = 0
    missing: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CalibrationLibrary:
    """The library a calibration's GEMMs were timed through (``calibration.library``, version 4
    on): ``name`` (one of ``CALIBRATION_LIBRARIES``), its ``version``, the GEMM library under it
    as it reports itself (``blas``: numpy's BLAS from threadpoolctl, ``OpenBLAS 0.3.31``; what
    torch was built with, ``MKL 2024.2, oneDNN 3.12.0``; ``cuBLAS``) and the ``threads`` it ran
    with; None where not known. The same shape of GEMM can run 1.0-1.7x apart in two libraries
    on one CPU, so a calibration describes the library it was timed through."""

    name: str
    version: str | None = None
    blas: str | None = None
    threads: int | None = None

    @property
    def words(self) -> str:
        """``torch 2.13.0 (MKL 2024.2, oneDNN 3.12.0; 2 threads)``; ``numpy's BLAS`` when
        nothing more is known (a block older than calibration version 4)."""
        inside = "; ".join(part for part in (
            self.blas, f"{self.threads} thread{'s' if self.threads != 1 else ''}"
            if self.threads else None) if part)
        if self.version is None and not inside:
            return "numpy's BLAS" if self.name == "numpy" else self.name
        return (f"{self.name}{f' {self.version}' if self.version else ''}"
                f"{f' ({inside})' if inside else ''}")


#: What a CPU calibration written before version 4 was timed through: numpy's BLAS, the only
#: library the probe used then (its version and BLAS not recorded).
UNRECORDED_NUMPY = CalibrationLibrary("numpy")


@dataclass(frozen=True)
class Calibration:
    """A measured entry's ``calibration:`` block (probe method 3 on): what roofline.analysis.predict
    needs for a calibrated time per GEMM. ``c_write_passes``: C's real traffic (write-allocate,
    the zero-fill of beta = 0) in passes over C at DRAM speed, version 1's one figure for every
    dtype (version 2 keeps one per dtype in ``efficiency``); None when not measured.
    ``library``: what the GEMMs were timed through (version 4 on); None in an older block."""

    version: int
    call_overhead_s: float
    efficiency: dict[str, GemmEfficiency]
    c_write_passes: float | None = None
    gpu_ops: GpuOpsCalibration | None = None  # a GPU's streaming kernels (version 3)
    library: CalibrationLibrary | None = None
    cpu_ops: CpuOpsCalibration | None = None  # a CPU's op costs (version 4, ``ops``)

    @property
    def through(self) -> CalibrationLibrary | None:
        """The library the calibration belongs to: ``library``, or for a CPU block without one
        (written before version 4) numpy's BLAS by definition (``UNRECORDED_NUMPY``); None for a
        GPU block without one (torch or cupy, not recorded)."""
        if self.library is not None:
            return self.library
        return UNRECORDED_NUMPY if self.gpu_ops is None else None


@dataclass(frozen=True)
class HardwareSpec:
    """One device's ceilings and the facts the advisor needs, as stored in hwdb/."""

    name: str
    kind: str
    vendor: str
    model: str
    architecture: str
    peak_tflops: dict[str, float]
    bandwidth_gbs: float
    alignment: dict[str, Alignment]
    sources: tuple[Source, ...]
    notes: str
    aliases: tuple[str, ...] = ()
    origin: str = "datasheet"
    location: str = ""
    host_link: HostLink | None = None
    gpu: GpuBlock | None = None
    cpu: CpuBlock | None = None
    theoretical: Theoretical | None = None
    calibration: Calibration | None = None
    nvml_names: tuple[str, ...] = ()
    cpu_brands: tuple[str, ...] = ()
    vector_tflops: dict[str, float] = field(default_factory=dict)
    sparse_tflops: dict[str, float] = field(default_factory=dict)
    memory_type: str | None = None
    memory_capacity_gb: float | None = None  # memory.capacity_gb (GB = 10^9 B); None: unknown
    #: memory.reported_bytes: the device memory CUDA reports (``totalGlobalMem``) where a reading
    #: is recorded; None: the datasheet's capacity_gb stands for it
    memory_reported_bytes: int | None = None
    llc_mb: float | None = None
    tdp_w: float | None = None  # board power
    stored: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    overrides: tuple[str, ...] = ()  # bundled names or aliases a user entry shadows

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak for ``dtype`` in FLOP/s; UnsupportedDtypeError if the device lacks it."""
        if dtype not in self.peak_tflops:
            supported = ", ".join(self.dtypes) or "none"
            raise UnsupportedDtypeError(
                f"{self.name} has no {dtype} peak (its entry lists: {supported}; "
                f"choose one with {option('dtype')})")
        return self.peak_tflops[dtype] * 1e12

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_gbs * 1e9

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this entry has a peak for, in the canonical order."""
        return tuple(d for d in DTYPES if d in self.peak_tflops)

    @property
    def product(self) -> str:
        """Vendor and model in words, the vendor once: a probed entry's model is the name the
        CPU or GPU gives itself (``AMD EPYC 9R45``, ``NVIDIA H100 80GB HBM3``), which names the
        vendor already."""
        if self.model.lower().startswith(self.vendor.lower()):
            return self.model
        return f"{self.vendor} {self.model}"

    def ridge(self, dtype: str) -> float:
        """Ridge point (ops:byte ratio) in FLOP/B: dense peak / DRAM bandwidth."""
        return ridge_point(self.peak_flops_per_s(dtype), self.bandwidth_bytes_per_s)

    @property
    def memory_capacity_bytes(self) -> float | None:
        """Device memory in bytes: what CUDA reports on the device where the entry records a
        reading (``memory.reported_bytes``: an H100 SXM5 80GB reports 85,017,493,504 B, its
        datasheet's "80GB" being binary gigabytes less what the driver reserves), else
        ``memory.capacity_gb`` x 10^9; None when the entry gives neither (a CPU entry may leave
        it unset)."""
        if self.memory_reported_bytes is not None:
            return float(self.memory_reported_bytes)
        gb = self.memory_capacity_gb
        return gb * 1e9 if gb is not None else None

    @property
    def memory_capacity_basis(self) -> str | None:
        """Where ``memory_capacity_bytes`` comes from: ``"cuda"`` (``memory.reported_bytes``,
        CUDA's report read on the device), ``"probe"`` (a measured entry's ``capacity_gb``, the
        device's own report as the probe read it), ``"datasheet"`` (``capacity_gb`` x 10^9: an
        H100 SXM5 80GB's 80 GB is 5.9% under the 85.0 GB CUDA reports); None without one."""
        if self.memory_reported_bytes is not None:
            return "cuda"
        if self.memory_capacity_gb is None:
            return None
        return "probe" if self.origin == "measured" else "datasheet"

    @property
    def sms(self) -> int | None:
        return self.gpu.sms if self.gpu else None

    @property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        """Thread-block tiles (rows x columns of C) worth modelling on this GPU; () for a CPU."""
        return self.gpu.tiles if self.gpu else ()

    @property
    def host_link_gbs(self) -> float | None:
        return self.host_link.bandwidth_gbs if self.host_link else None

    @property
    def forced_past(self) -> tuple[str, ...]:
        """The sentence of each of the probe's own checks a measured entry was saved past
        (``probe --save NAME --force``: ``measured.forced_past``, docs/hwdb-schema.md); empty
        for an entry saved without, or before it was recorded, and for a datasheet entry."""
        measured = self.stored.get("measured")
        forced = measured.get("forced_past") if isinstance(measured, dict) else None
        if not isinstance(forced, list):
            return ()
        return tuple(str(f.get("reason") or f.get("check")) if isinstance(f, dict) else str(f)
                     for f in forced)

    def alignment_dict(self) -> dict[str, dict[str, int]]:
        """The ``alignment:`` section in its stored form (to copy into another entry)."""
        return {d: {"multiple": a.multiple, "preferred": a.preferred}
                for d, a in self.alignment.items()}

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored (a deep copy), plus where it was loaded from."""
        data = copy.deepcopy(self.stored)
        data["location"] = self.location
        return data

    @classmethod
    def from_dict(cls, data: Any, source: str, location: str = "") -> HardwareSpec:
        """Validate a parsed entry (``hardware.schema.parse_entry``); problems raise
        InputError naming ``source`` and the field."""
        from .schema import parse_entry

        return parse_entry(data, source, location)
