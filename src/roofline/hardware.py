"""A hardware entry: the validated, immutable form of one ``hwdb/**/*.yaml`` file.

The schema is documented in docs/hwdb-schema.md. Units are in the key names: TFLOP/s
(10^12 FLOP/s, a multiply-add is 2 FLOPs), decimal GB/s (10^9 B/s), GB, MB, GHz, W.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from .dtypes import DTYPES
from .errors import UnsupportedDtypeError
from .fields import Fields

KINDS = ("gpu", "cpu")
ORIGINS = ("datasheet", "measured")
FIGURE_KEYS = ("peak_tflops", "vector_tflops", "sparse_tflops", "bandwidth_gbs", "memory",
               "llc_mb", "host_link", "nvlink", "tdp_w", "gpu", "cpu", "alignment")
_DESCRIPTIVE_KEYS = ("name", "kind", "vendor", "model", "architecture", "aliases", "nvml_names",
                     "cpu_brands", "sources", "notes", "origin", "theoretical", "measured")
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
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def peak_flops_per_s(self, dtype: str) -> float:
        """Dense peak for ``dtype`` in FLOP/s; UnsupportedDtypeError if the device lacks it."""
        if dtype not in self.peak_tflops:
            supported = ", ".join(self.dtypes) or "none"
            raise UnsupportedDtypeError(
                f"{self.name} has no {dtype} peak (its entry lists: {supported}; "
                f"choose one with --dtype)")
        return self.peak_tflops[dtype] * 1e12

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_gbs * 1e9

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this entry has a peak for, in the canonical order."""
        return tuple(d for d in DTYPES if d in self.peak_tflops)

    def ridge(self, dtype: str) -> float:
        """Ridge point (ops:byte ratio) in FLOP/B: dense peak / DRAM bandwidth."""
        return self.peak_flops_per_s(dtype) / self.bandwidth_bytes_per_s

    @property
    def sms(self) -> int | None:
        return self.raw.get("gpu", {}).get("sms")

    @cached_property
    def tiles(self) -> tuple[tuple[int, int], ...]:
        """Thread-block tiles (rows x columns of C) worth modelling on this GPU; () for a CPU."""
        return tuple((int(a), int(b)) for a, b in self.raw.get("gpu", {}).get("tiles", ()))

    @property
    def host_link_gbs(self) -> float | None:
        return self.raw.get("host_link", {}).get("bandwidth_gbs")

    def to_dict(self) -> dict[str, Any]:
        """The entry as stored (a deep copy), plus where it was loaded from."""
        data = copy.deepcopy(self.raw)
        data["location"] = self.location
        return data

    @classmethod
    def from_dict(cls, data: Any, source: str, location: str = "") -> HardwareSpec:
        """Validate a parsed entry; problems raise InputError naming ``source`` and the field."""
        top = Fields(data, source)
        top.reject_unknown(TOP_KEYS)
        name = _entry_name(top, "name")
        kind = top.choice("kind", KINDS)
        vendor, model = top.string("vendor"), top.string("model")
        architecture = top.string("architecture")
        _check_sections(top, kind)
        sources = _sources(top)
        _check_covered(top, sources)
        return cls(
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
            raw=copy.deepcopy(dict(data)),
        )


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


def _check_sections(top: Fields, kind: str) -> None:
    """Type-check the optional figure sections and the kind-specific block."""
    _dtype_numbers(top, "vector_tflops", required=False)
    _dtype_numbers(top, "sparse_tflops", required=False)
    for key in ("llc_mb", "tdp_w"):
        top.positive_number(key, None)
    link = top.sub("host_link", None)
    if link is not None:
        link.reject_unknown(frozenset({"type", "generation", "lanes", "bandwidth_gbs"}))
        link.choice("type", ("pcie", "nvlink"))
        link.positive_number("bandwidth_gbs")
    for key in ("memory", "nvlink", "theoretical", "measured"):
        top.sub(key, None)
    if kind == "gpu":
        gpu = top.sub("gpu")
        gpu.positive_int("sms")
        gpu.positive_number("boost_clock_ghz")
        for i, tile in enumerate(gpu.items("tiles", [])):
            ok = isinstance(tile, list) and len(tile) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in tile)
            if not ok:
                raise gpu.fail(f"tiles[{i}]", f"expected [rows, columns] of positive integers, "
                                              f"got {tile!r}")
    else:
        cpu = top.sub("cpu")
        for key in ("sockets", "cores_per_socket", "simd_bits", "fma_units"):
            cpu.positive_int(key)
        cpu.positive_number("clock_ghz")
    top.strings("nvml_names")
    top.strings("cpu_brands")


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

