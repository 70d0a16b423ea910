"""Reading a hardware entry: every field of a ``hwdb/**/*.yaml`` mapping checked (types,
choices, plausible ranges, sources covering every figure) and built into a ``HardwareSpec``.
The schema is docs/hwdb-schema.md; the values it builds are in ``hardware.spec``."""

from __future__ import annotations

import copy
from typing import Any

from ..errors import InputError
from ..files.fields import Fields, check_plain
from ..files.numbers import PLAUSIBLE, parse_int, plausible
from ..model.dtypes import DTYPES
from .sanity import impossible
from .spec import (
    CALIBRATION_LIBRARIES,
    CALIBRATION_VERSIONS,
    CLOCK_ISAS,
    CLOCK_KINDS,
    CLOCK_TAGS,
    CLOCK_UNITS,
    FIGURE_KEYS,
    GPU_TIMINGS,
    KINDS,
    NAME_CHARS,
    OP_LIBRARIES,
    OP_RATE_KEYS,
    ORIGINS,
    TOP_KEYS,
    Alignment,
    Calibration,
    CalibrationLibrary,
    Clock,
    CpuBlock,
    CpuOpsCalibration,
    GemmEfficiency,
    GpuBlock,
    GpuOpsCalibration,
    HardwareSpec,
    HostLink,
    Source,
    Theoretical,
)


def parse_entry(data: Any, source: str, location: str = "") -> HardwareSpec:
    """Validate a parsed entry; problems raise InputError naming ``source`` and the field."""
    top = Fields(data, source)
    top.reject_unknown(TOP_KEYS)
    name = _entry_name(top, "name")
    kind = top.choice("kind", KINDS)
    vendor, model = top.string("vendor"), top.string("model")
    architecture = top.string("architecture")
    _check_sections(top)
    gpu, cpu = _gpu_block(top, kind), _cpu_block(top, kind)
    sources = _sources(top)
    _check_covered(top, sources)
    spec = HardwareSpec(
        name=name,
        kind=kind,
        vendor=vendor,
        model=model,
        architecture=architecture,
        peak_tflops=_dtype_numbers(top, "peak_tflops"),
        bandwidth_gbs=top.positive_number("bandwidth_gbs"),
        alignment=_alignment(top),
        sources=sources,
        notes=top.string("notes"),
        aliases=tuple(_entry_name(top, f"aliases[{i}]", alias)
                      for i, alias in enumerate(top.strings("aliases"))),
        origin=top.choice("origin", ORIGINS, "datasheet"),
        location=location,
        host_link=_host_link(top),
        gpu=gpu,
        cpu=cpu,
        theoretical=_theoretical(top),
        calibration=_calibration(top),
        nvml_names=top.strings("nvml_names"),
        cpu_brands=top.strings("cpu_brands"),
        vector_tflops=_dtype_numbers(top, "vector_tflops", required=False),
        sparse_tflops=_dtype_numbers(top, "sparse_tflops", required=False),
        memory_type=_memory_type(top),
        memory_capacity_gb=_memory_capacity(top),
        memory_reported_bytes=_memory_reported(top),
        llc_mb=top.positive_number("llc_mb", None),
        tdp_w=top.positive_number("tdp_w", None),
        stored=copy.deepcopy(dict(data)),
    )
    check_plausible(top)  # after the type checks, which give the clearer message
    check_one_line(top)
    refused = impossible(spec)
    if refused is not None:
        raise top.fail(*refused)
    return spec


#: The entry's text that may run over several lines (the rest is shown one field a line).
MULTILINE_KEYS = ("notes", "measured")


def check_one_line(top: Fields) -> None:
    """Refuse a tab or line break in any text of the entry but ``notes`` and the probe's
    ``measured`` record: the loader (``files.safe_yaml``) refuses every other control
    character, but lets these two through for notes; in a name, vendor or title a newline adds
    a line of its own to ``hw show`` (``vendor: "Acme\\nInjected: line"``)."""
    stack: list[tuple[Any, str]] = [(top.data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack += reversed([(v, f"{path}.{k}" if path else str(k))
                               for k, v in value.items() if path or k not in MULTILINE_KEYS])
        elif isinstance(value, list):
            stack += reversed([(v, f"{path}[{i}]") for i, v in enumerate(value)])
        elif isinstance(value, str) and ("\n" in value or "\t" in value):
            what = "a line break" if "\n" in value else "a tab"
            raise InputError(top.source, path, f"text holds {what}, which only notes may: "
                                               f"give it on one line")


def _entry_name(top: Fields, key: str, value: str | None = None) -> str:
    name = top.string(key) if value is None else value
    if not set(name) <= NAME_CHARS:
        raise top.fail(key, f"names use lowercase letters, digits and . - _ + only, got {name!r}")
    return name


def _dtype_numbers(top: Fields, key: str, required: bool = True) -> dict[str, float]:
    section = top.sub(key) if required else top.sub(key, None)
    if section is None:
        return {}
    section.reject_unknown(frozenset(DTYPES))
    if not section.data:
        raise top.fail(key, "expected at least one dtype")
    return {dtype: section.positive_number(dtype) for dtype in DTYPES if section.has(dtype)}


def _alignment(top: Fields) -> dict[str, Alignment]:
    section = top.sub("alignment", None)
    if section is None:
        return {}
    section.reject_unknown(frozenset(DTYPES))
    result = {}
    for dtype in DTYPES:
        rule = section.sub(dtype, None)
        if rule is None:
            continue
        rule.reject_unknown(frozenset({"multiple", "preferred"}))
        multiple = rule.positive_int("multiple")
        preferred = rule.positive_int("preferred", multiple)
        if preferred % multiple:
            raise rule.fail("preferred", f"expected a multiple of {multiple}, got {preferred}")
        result[dtype] = Alignment(multiple, preferred)
    return result


def _check_sections(top: Fields) -> None:
    """Type-check the optional figure sections that have no typed field of their own; their
    content must be plain data JSON can print (the loader already bounds depth and aliases)."""
    for key in ("nvlink", "measured", "memory"):
        if top.sub(key, None) is not None:
            check_plain(top.data[key], top.fail, key)


def check_plausible(top: Fields) -> None:
    """Refuse figures outside their plausible range (``files.numbers.PLAUSIBLE``), naming the
    field (peak_tflops.fp16, gpu.sms)."""
    stack: list[tuple[Any, str, str]] = [(top.data, "", "")]
    while stack:
        value, path, key = stack.pop()
        if isinstance(value, dict):
            stack += [(v, f"{path}.{k}" if path else str(k), str(k) if k not in DTYPES else key)
                      for k, v in value.items() if k not in ("measured", "sources")]
        elif key in PLAUSIBLE and isinstance(value, (int, float)) and not isinstance(value, bool):
            problem = plausible(value, key)
            if problem:
                raise InputError(top.source, path, problem)


def _memory_type(top: Fields) -> str | None:
    memory = top.sub("memory", None)
    return None if memory is None else memory.string("type", None)


def _memory_capacity(top: Fields) -> float | None:
    memory = top.sub("memory", None)
    return None if memory is None else memory.positive_number("capacity_gb", None)


def _memory_reported(top: Fields) -> int | None:
    memory = top.sub("memory", None)
    return None if memory is None else memory.positive_int("reported_bytes", None)


def _host_link(top: Fields) -> HostLink | None:
    link = top.sub("host_link", None)
    if link is None:
        return None
    link.reject_unknown(frozenset({"type", "generation", "lanes", "bandwidth_gbs"}))
    return HostLink(link.choice("type", ("pcie", "nvlink")), link.positive_number("bandwidth_gbs"),
                    link.positive_int("generation", None), link.positive_int("lanes", None))


def _gpu_block(top: Fields, kind: str) -> GpuBlock | None:
    if kind != "gpu":
        return None
    gpu = top.sub("gpu")
    gpu.reject_unknown(frozenset({"sms", "boost_clock_ghz", "tiles", "simt_tiles",
                                  "sustained_clock_ghz", "vector_clock_ghz",
                                  "resident_threads", "pcie_p2p"}))
    sms, clock = gpu.positive_int("sms"), gpu.positive_number("boost_clock_ghz")
    vector = gpu.positive_number("vector_clock_ghz", None)
    if vector is not None and vector < clock:
        # the model scales FP32 / FP64 peaks by boost / vector: below 1 only, never above the
        # datasheet figure (and the roofline)
        raise gpu.fail("vector_clock_ghz", f"{vector} is below boost_clock_ghz ({clock}): it is "
                       f"the higher clock the FP32 and FP64 figures assume")
    return GpuBlock(sms, clock, _tiles(gpu, "tiles"), _tiles(gpu, "simt_tiles"),
                    gpu.positive_number("sustained_clock_ghz", None), vector,
                    gpu.positive_int("resident_threads", None), gpu.boolean("pcie_p2p", None))


def _tiles(gpu: Fields, key: str) -> tuple[tuple[int, int], ...]:
    tiles = []
    for i, tile in enumerate(gpu.items(key, [])):
        ok = isinstance(tile, list) and len(tile) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in tile)
        if not ok:
            raise gpu.fail(f"{key}[{i}]", f"expected [rows, columns] of positive integers, "
                                          f"got {tile!r}")
        tiles.append((tile[0], tile[1]))
    return tuple(tiles)


def _cpu_block(top: Fields, kind: str) -> CpuBlock | None:
    if kind != "cpu":
        return None
    cpu = top.sub("cpu")
    cpu.reject_unknown(frozenset({"sockets", "cores_per_socket", "simd_bits", "fma_units",
                                  "clock_ghz", "clock_basis", "clocks", "peak_clock",
                                  "amx_ops_per_cycle"}))
    sockets, cores, simd, fma = (cpu.positive_int(key) for key in (
        "sockets", "cores_per_socket", "simd_bits", "fma_units"))
    amx = _amx_ops(cpu)
    if not cpu.has("clocks"):  # the single-clock form
        if amx or cpu.has("peak_clock"):
            raise cpu.fail("clocks", "missing required field (amx_ops_per_cycle and "
                                     "peak_clock need per-ISA clocks)")
        return CpuBlock(sockets, cores, simd, fma, clock_ghz=cpu.positive_number("clock_ghz"),
                        clock_basis=cpu.string("clock_basis", ""))
    if cpu.has("clock_ghz"):
        raise cpu.fail("clock_ghz", "give either clock_ghz or clocks and peak_clock, not both")
    clocks = _clocks(cpu.sub("clocks"))
    peak = _peak_clock(cpu, clocks, bool(amx))
    isa, kind_ = peak["vector"]
    return CpuBlock(sockets, cores, simd, fma, clock_ghz=clocks[isa][kind_].ghz,
                    clock_basis=cpu.string("clock_basis", ""), clocks=clocks,
                    peak_clock=peak, amx_ops_per_cycle=amx)


def _amx_ops(cpu: Fields) -> dict[str, int]:
    section = cpu.sub("amx_ops_per_cycle", None)
    if section is None:
        return {}
    section.reject_unknown(frozenset(DTYPES))
    return {d: section.positive_int(d) for d in DTYPES if section.has(d)}


def _clocks(section: Fields) -> dict[str, dict[str, Clock]]:
    """``cpu.clocks``: isa -> kind -> {ghz, tag, source, bound}."""
    section.reject_unknown(frozenset(CLOCK_ISAS))
    result: dict[str, dict[str, Clock]] = {}
    for isa in (i for i in CLOCK_ISAS if section.has(i)):
        kinds = section.sub(isa)
        kinds.reject_unknown(frozenset(CLOCK_KINDS))
        for kind in (k for k in CLOCK_KINDS if kinds.has(k)):
            leaf = kinds.sub(kind)
            leaf.reject_unknown(frozenset({"ghz", "tag", "source", "bound"}))
            result.setdefault(isa, {})[kind] = Clock(
                leaf.positive_number("ghz"), leaf.choice("tag", CLOCK_TAGS),
                leaf.string("source"), leaf.choice("bound", ("upper", "lower"), None))
    if not result:
        raise InputError(section.source, section.path, "expected at least one clock")
    return result


def _peak_clock(cpu: Fields, clocks: dict[str, dict[str, Clock]],
                has_amx: bool) -> dict[str, tuple[str, str]]:
    """``cpu.peak_clock``: unit -> "isa.kind", each naming a figure of ``cpu.clocks``."""
    section = cpu.sub("peak_clock")
    section.reject_unknown(frozenset(CLOCK_UNITS))
    result = {}
    for unit in CLOCK_UNITS:
        if unit == "amx" and not has_amx:
            if section.has("amx"):
                raise section.fail("amx", "given without cpu.amx_ops_per_cycle")
            continue
        isa, _, kind = section.string(unit).partition(".")
        if kind not in clocks.get(isa, {}):
            raise section.fail(unit, f"expected isa.kind naming a figure of cpu.clocks "
                                     f"({', '.join(_clock_names(clocks))}), "
                                     f"got {section.data[unit]!r}")
        result[unit] = (isa, kind)
    return result


def _clock_names(clocks: dict[str, dict[str, Clock]]) -> list[str]:
    return [f"{isa}.{kind}" for isa, kinds in clocks.items() for kind in kinds]


def _theoretical(top: Fields) -> Theoretical | None:
    """``theoretical: {peak_tflops: {dtype: x}, bandwidth_gbs: x | {dram: x}}``."""
    theory = top.sub("theoretical", None)
    if theory is None:
        return None
    theory.reject_unknown(frozenset({"peak_tflops", "bandwidth_gbs"}))
    empty = theory.get("peak_tflops", None) == {}  # a probe that knew no clock computed none
    peaks = {} if empty else _dtype_numbers(theory, "peak_tflops", required=False)
    bandwidth = theory.get("bandwidth_gbs", None)
    if isinstance(bandwidth, dict):
        bandwidth = theory.sub("bandwidth_gbs").positive_number("dram", None)
    elif bandwidth is not None:
        bandwidth = theory.positive_number("bandwidth_gbs")
    return Theoretical(peaks, bandwidth)


def _calibration(top: Fields) -> Calibration | None:
    """``calibration: {version, call_overhead_s, gemm_efficiency: {dtype: {square: {n: eff},
    thin: {m: eff}, thin_nk, thin_dram: {m: eff}, thin_dram_nk, c_write: {passes, m, n, k,
    time_s}, peak_n}}, library: {name, version, blas, threads}}``; version 1 had no thin_dram
    and one top-level ``c_write`` (with its dtype) for every dtype; ``library`` is version 4's."""
    block = top.sub("calibration", None)
    if block is None:
        return None
    block.reject_unknown(frozenset({"version", "call_overhead_s", "gemm_efficiency", "c_write",
                                    "gpu", "library", "ops"}))
    version = block.positive_int("version")
    if version not in CALIBRATION_VERSIONS:
        raise block.fail("version", f"expected one of {', '.join(map(str, CALIBRATION_VERSIONS))}"
                                    f" (the calibration versions this roofline reads), got "
                                    f"{version}; re-run `roofline probe --save NAME --force`")
    if block.has("gpu") and version < 3:
        raise block.fail("gpu", "a GPU calibration needs calibration version 3")
    if block.has("library") and version < 4:
        raise block.fail("library", f"a calibration's library needs calibration version 4, "
                                    f"got version {version}")
    library = _calibration_library(block.sub("library", None))
    gpu = _gpu_calibration(block.sub("gpu", None), version)
    if block.has("ops") and version < 4:
        raise block.fail("ops", "op costs need calibration version 4")
    ops = _cpu_ops_calibration(block.sub("ops", None))
    efficiency = {}
    # a GPU's calibration (version 3) may have no GEMM efficiency tables
    section = block.sub("gemm_efficiency") if gpu is None or block.has(
        "gemm_efficiency") else Fields({}, block.source, block.where("gemm_efficiency"))
    section.reject_unknown(frozenset(DTYPES))
    for dtype in (d for d in DTYPES if section.has(d)):
        one = section.sub(dtype)
        one.reject_unknown(frozenset({"square", "thin", "thin_nk", "peak_n", "thin_dram",
                                      "thin_dram_nk", "c_write"}))
        dram = _size_table(one, "thin_dram") if one.has("thin_dram") else ()
        efficiency[dtype] = GemmEfficiency(
            _size_table(one, "square"), _size_table(one, "thin"), one.positive_int("thin_nk"),
            one.positive_int("peak_n"), dram, one.positive_int("thin_dram_nk") if dram else 0,
            _c_write_passes(one.sub("c_write", None), has_dtype=False))
    passes = _c_write_passes(block.sub("c_write", None), has_dtype=True)
    call_s = block.positive_number("call_overhead_s") if gpu is None else (
        block.positive_number("call_overhead_s") if block.has("call_overhead_s") else 0.0)
    return Calibration(version, call_s, efficiency, passes, gpu, library, ops)


def _calibration_library(library: Fields | None) -> CalibrationLibrary | None:
    """``library: {name, version, blas, threads}`` (calibration version 4 on): ``name`` one of
    CALIBRATION_LIBRARIES, ``version`` and ``blas`` text (``blas`` optional), ``threads`` a
    positive integer (optional)."""
    if library is None:
        return None
    library.reject_unknown(frozenset({"name", "version", "blas", "threads"}))
    return CalibrationLibrary(library.choice("name", CALIBRATION_LIBRARIES),
                              library.string("version"), library.string("blas", None),
                              library.positive_int("threads", None))


#: A share of the peak a fused attention kernel may claim (a little over 1: timer noise).
MAX_ATTENTION_SHARE = 1.5


def _cpu_ops_calibration(ops: Fields | None) -> CpuOpsCalibration | None:
    """``ops: {library, dtype, threads, call_s, rates_gbs: {class: GB/s}, attention: {seq:
    share}, attention_causal: {seq: share}, attention_head_dim, missing: {class: why}}``
    (calibration version 4 on): a probe's op costs on a CPU."""
    if ops is None:
        return None
    ops.reject_unknown(frozenset({"library", "dtype", "threads", "call_s", "rates_gbs",
                                  "attention", "attention_causal", "attention_head_dim",
                                  "missing"}))
    library, dtype = ops.choice("library", OP_LIBRARIES), ops.choice("dtype", DTYPES)
    threads, call_s = ops.positive_int("threads"), ops.positive_number("call_s")
    section = ops.sub("rates_gbs")
    section.reject_unknown(frozenset(OP_RATE_KEYS))
    rates = {}
    for key in (k for k in OP_RATE_KEYS if section.has(k) or k.startswith("stream_")):
        rates[key] = section.positive_number(key)
        problem = plausible(rates[key], "op_rate_gbs")
        if problem:
            raise section.fail(key, problem)
    tables = {}
    for key in ("attention", "attention_causal"):
        tables[key] = _size_table(ops, key) if ops.has(key) else ()
        for seq, share in tables[key]:
            if share > MAX_ATTENTION_SHARE:
                raise ops.sub(key).fail(str(seq), f"expected a share of the entry's peak (at "
                                                  f"most {MAX_ATTENTION_SHARE}), got {share}")
    head_dim = ops.positive_int("attention_head_dim", 0)
    if (tables["attention"] or tables["attention_causal"]) and not head_dim:
        raise ops.fail("attention_head_dim", "missing: the head dimension attention was "
                                             "timed at")
    missing = ops.sub("missing", None)
    reasons = {}
    if missing is not None:
        missing.reject_unknown(frozenset(OP_RATE_KEYS + ("attention",)))
        reasons = {str(key): missing.string(str(key)) for key in missing.data}
    return CpuOpsCalibration(library, dtype, threads, call_s, rates, tables["attention"],
                             tables["attention_causal"], head_dim, reasons)


def _gpu_calibration(gpu: Fields | None, version: int) -> GpuOpsCalibration | None:
    """``gpu: {dram_fraction, launch_s, tensor_core_fraction, cuda_core_fraction,
    min_kernel_s}`` (calibration version 3 on): a probe on a GPU; and from version 5
    ``timing`` (``graph`` or ``eager``: how its two small kernels were timed; eager without
    it)."""
    if gpu is None:
        return None
    keys = ("dram_fraction", "launch_s", "tensor_core_fraction", "cuda_core_fraction",
            "min_kernel_s")
    gpu.reject_unknown(frozenset(keys + (("timing",) if version >= 5 else ())))
    values = {key: gpu.positive_number(key) for key in keys}
    for key in ("dram_fraction", "tensor_core_fraction", "cuda_core_fraction"):
        if values[key] > 1.5:
            raise gpu.fail(key, f"expected a share of the entry's figure (at most 1.5), got "
                                f"{values[key]}")
    timing = gpu.get("timing", "eager")
    if timing not in GPU_TIMINGS:
        raise gpu.fail("timing", f"expected one of {', '.join(GPU_TIMINGS)}, got {timing!r}")
    return GpuOpsCalibration(**values, timing=timing)


def _c_write_passes(c_write: Fields | None, has_dtype: bool) -> float | None:
    """``c_write: {passes, m, n, k, time_s}`` (and ``dtype`` at the top, version 1)."""
    if c_write is None:
        return None
    c_write.reject_unknown(frozenset({"passes", "m", "n", "k", "time_s"} |
                                     ({"dtype"} if has_dtype else set())))
    passes = c_write.get("passes")
    if isinstance(passes, bool) or not isinstance(passes, (int, float)) or passes < 0:
        raise c_write.fail("passes", f"expected a number >= 0, got {passes!r}")
    return float(passes)


def _size_table(section: Fields, key: str) -> tuple[tuple[int, float], ...]:
    """``{size: positive number}`` (sizes as integers or digit strings), sorted by size."""
    table = section.sub(key)
    rows = []
    for size in table.data:
        text = str(size)
        try:  # an int key, or digits as text (what a JSON round trip makes of one)
            number = parse_int(text)
        except ValueError as exc:
            raise table.fail(text, f"expected a positive integer size as the key: {exc}") \
                from None
        rows.append((number, table.positive_number(size)))
    if not rows:
        raise section.fail(key, "expected at least one size")
    return tuple(sorted(rows))


def _sources(top: Fields) -> tuple[Source, ...]:
    entries = top.items("sources")
    if not entries:
        raise top.fail("sources", "expected at least one source")
    result = []
    for i, entry in enumerate(entries):
        src = Fields(entry, top.source, f"sources[{i}]")
        src.reject_unknown(frozenset({"title", "url", "command", "covers"}))
        url = src.string("url", None)
        command = src.string("command", None)
        if url is None and command is None:
            raise src.fail("url", "missing required field (or give a 'command' for a measurement)")
        if url is not None and not url.startswith(("https://", "http://")):
            raise src.fail("url", f"expected an http(s) URL, got {url!r}")
        covers = src.strings("covers")
        for j, key in enumerate(covers):
            if key not in FIGURE_KEYS:
                raise src.fail(f"covers[{j}]", f"{key!r} is not a figure key "
                                               f"({', '.join(FIGURE_KEYS)})")
        result.append(Source(src.string("title"), url, command, covers))
    return tuple(result)


def _check_covered(top: Fields, sources: tuple[Source, ...]) -> None:
    covered = {key for source in sources for key in source.covers}
    for key in FIGURE_KEYS:
        if top.has(key) and key not in covered:
            raise top.fail(key, "no entry in 'sources' covers this figure")

