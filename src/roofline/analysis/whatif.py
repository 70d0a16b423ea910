"""What-if questions: one GEMM shape, one model on several devices, one model over batches.

- ``gemm_report(m, n, k, hardware)``: a bare shape analyzed as the forward GEMM of a linear
  layer (in = K, out = N) at batch M, so batch advice is about M: the report says so.
- ``compare(model, [A, B, ...])``: per-GEMM and whole-step time on each device, the speedup
  over the first and why (a GEMM memory-bound on both gains the bandwidth ratio, one
  compute-bound on both the peak ratio, one that changes side says so), and one plain sentence.
  A device without the model's dtype runs the nearest one it has (``nearest_dtype``).
- ``sweep(model, hardware, batches)``: time, samples/s and bound per GEMM per batch, and the
  batch at which each GEMM turns compute-bound (closed form, ``advisor.min_compute_bound_batch``).

Numbers stay raw here; ``whatif_format`` renders them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError
from ..hardware.catalog import load_hardware
from ..hardware.spec import HardwareSpec
from ..model.dtypes import DTYPES, check_dtype, itemsize
from ..model.layers import Linear
from ..model.network import Network, load_network
from ..roof import bound as roof_bound
from . import advisor
from .report import Report, analyze

GEMM_LAYER = "gemm"
#: What ``roofline gemm`` prints under its table: how it reads a bare shape.
GEMM_NOTE = ("M is read as the batch: the shape is the forward GEMM of a linear layer with K "
             "inputs and N outputs\n(C(M, N) = A(M, K) . B(K, N)), so batch advice is about M.")
#: The most points ``--batch a..b`` may give (2^0 .. 2^30).
MAX_SWEEP_POINTS = 31


def _spec(hardware: HardwareSpec | str) -> HardwareSpec:
    return hardware if isinstance(hardware, HardwareSpec) else load_hardware(hardware)


def _network(model: Network | str | os.PathLike[str], **overrides: Any) -> Network:
    network = model if isinstance(model, Network) else load_network(model)
    return network.with_overrides(**overrides)


# ---------------------------------------------------------------------------------------- gemm

def parse_dimension(value: Any, name: str) -> int:
    """A GEMM dimension from the command line: a positive integer, else InputError."""
    text = str(value).strip().replace("_", "")
    if not text.isdigit() or int(text) <= 0:
        raise InputError("gemm", name, f"expected a positive integer, got {str(value)!r}")
    return int(text)


def gemm_network(m: int | str, n: int | str, k: int | str, dtype: str = "fp16",
                 output_dtype: str | None = None) -> Network:
    """The shape as a one-layer network: a linear layer with in = K, out = N, run forward at
    batch M (inference), so its single GEMM MM1 is (M, N, K) with M the batch dimension."""
    dims = [parse_dimension(v, name) for v, name in ((m, "M"), (n, "N"), (k, "K"))]
    check_dtype(dtype)
    network = Network(f"gemm-{dims[0]}x{dims[1]}x{dims[2]}", dims[0], dtype, "inference",
                      (Linear(GEMM_LAYER, dims[2], dims[1]),))
    return network.with_overrides(output_dtype=output_dtype)


def gemm_report(m: int | str, n: int | str, k: int | str, hardware: HardwareSpec | str,
                dtype: str = "fp16", output_dtype: str | None = None,
                quantization: bool = False) -> Report:
    """One GEMM's full verdict: the analyze Report of ``gemm_network(m, n, k)``."""
    return analyze(gemm_network(m, n, k, dtype, output_dtype), _spec(hardware), quantization)


# ------------------------------------------------------------------------------------- compare

def _is_float(dtype: str) -> bool:
    return not dtype.startswith("int")


def nearest_dtype(dtype: str, available: tuple[str, ...]) -> str | None:
    """The dtype a device runs a model of ``dtype`` in: ``dtype`` itself if it has a peak for
    it; else, in this order, one of the same element size and the same kind (float or integer:
    fp16 -> bf16, fp32 -> tf32), the narrowest wider one of the same kind (fp16 -> fp32), a
    wider one of the other kind, the widest narrower one of the same kind, then any. Ties go
    to the canonical dtype order (fp64, fp32, tf32, fp16, bf16, int8, fp8). None if the
    device has no peak at all."""
    if dtype in available:
        return dtype
    size, kind = itemsize(dtype), _is_float(dtype)

    def rank(other: str) -> tuple:
        other_size, same_kind = itemsize(other), _is_float(other) == kind
        if other_size == size:
            order = 0 if same_kind else 2
        elif other_size > size:
            order = 1 if same_kind else 2
        else:
            order = 3 if same_kind else 4
        distance = other_size - size if other_size >= size else size - other_size
        return order, distance, DTYPES.index(other)

    return min(available, key=rank) if available else None


@dataclass(frozen=True)
class Comparison:
    """One model on several devices; ``reports[0]`` is the baseline."""

    reports: tuple[Report, ...]
    requested_dtype: str

    @property
    def baseline(self) -> Report:
        return self.reports[0]

    def dtype_note(self, report: Report) -> str | None:
        """Why a device runs another dtype than the model's, or None."""
        if report.dtype == self.requested_dtype:
            return None
        return (f"{report.hardware.name} has no {self.requested_dtype} peak: runs "
                f"{report.dtype}, the nearest it has")

    def speedup(self, report: Report) -> float:
        return self.baseline.totals["time_s"] / report.totals["time_s"]

    def why(self, index: int, report: Report) -> str:
        """Why GEMM ``index`` runs faster or slower on ``report``'s device than on the baseline."""
        base, other = self.baseline.results[index], report.results[index]
        b_hw, o_hw = self.baseline.hardware, report.hardware
        if base.bound == other.bound == "memory":
            ratio = o_hw.bandwidth_gbs / b_hw.bandwidth_gbs
            text = (f"memory-bound on both: the bandwidth ratio {o_hw.bandwidth_gbs:g}/"
                    f"{b_hw.bandwidth_gbs:g} = {ratio:.2f}x")
            if other.gemm.bytes != base.gemm.bytes:
                text += f", moving {other.gemm.bytes / base.gemm.bytes:.2g}x the bytes"
            return text
        if base.bound == other.bound == "compute":
            b_peak = self.baseline.hardware.peak_tflops[base.gemm.dtype]
            o_peak = report.hardware.peak_tflops[other.gemm.dtype]
            return (f"compute-bound on both: the peak ratio {o_peak:g}/{b_peak:g} = "
                    f"{o_peak / b_peak:.2f}x")
        ridge = report.hardware.ridge(other.gemm.dtype)
        relation = ">=" if other.bound == "compute" else "<"
        return (f"turns {other.bound}-bound (intensity {other.gemm.intensity:.1f} {relation} "
                f"ridge {ridge:.1f}; {base.bound}-bound on {b_hw.name})")

    def verdict(self) -> str:
        """One plain sentence: who is fastest, by how much, and what decides it."""
        base = self.baseline
        others = sorted(self.reports[1:], key=lambda r: r.totals["time_s"])
        best = others[0]
        from ..units import seconds

        def reason(report: Report) -> str:
            fraction = report.totals["memory_bound_time_fraction"]
            hw, b_hw = report.hardware, base.hardware
            if fraction >= 0.5:
                return (f"{fraction:.0%} of its step is memory-bound, so bandwidth decides "
                        f"({hw.bandwidth_gbs:g} vs {b_hw.bandwidth_gbs:g} GB/s)")
            peak, b_peak = hw.peak_tflops[report.dtype], b_hw.peak_tflops[base.dtype]
            return (f"{1 - fraction:.0%} of its step is compute-bound, so the {report.dtype} "
                    f"peak decides ({peak:g} vs {b_peak:g} TFLOP/s)")

        x = self.speedup(best)
        faster = f"{x:.2f}x faster than" if x >= 1 else f"{1 / x:.2f}x slower than"
        if x < 1:
            text = (f"{base.hardware.name} (the baseline) stays fastest at "
                    f"{seconds(base.totals['time_s'])} per step; the next, {best.hardware.name}, "
                    f"is {faster} it: {reason(best)}")
        else:
            text = (f"{best.hardware.name} is the fastest: {seconds(best.totals['time_s'])} per "
                    f"step, {faster} {base.hardware.name}; {reason(best)}")
        if len(others) > 1:
            worst = others[-1]
            y = self.speedup(worst)
            text += f"; the slowest, {worst.hardware.name}, runs at {y:.2f}x"
        return text + "."

    def to_dict(self) -> dict[str, Any]:
        """The compare JSON contract of docs/design.md (plus ``why``, ``dtype_note``, ``batch``,
        ``mode``)."""
        base = self.baseline
        devices = []
        for report in self.reports:
            totals = report.totals
            devices.append({"hardware": report.hardware.name, "dtype": report.dtype,
                            "time_s": totals["time_s"], "speedup": self.speedup(report),
                            "memory_bound_time_fraction": totals["memory_bound_time_fraction"],
                            "predicted_gemm_time_s": totals["predicted_gemm_time_s"],
                            "dtype_note": self.dtype_note(report)})
        gemms = []
        for index, result in enumerate(base.results):
            row: dict[str, Any] = {"name": result.gemm.name, "layer": result.gemm.layer,
                                   "pass": result.gemm.pass_}
            row["time_s"] = {r.hardware.name: r.results[index].time_s for r in self.reports}
            row["predicted_time_s"] = {r.hardware.name: r.results[index].predicted_time_s
                                       for r in self.reports}
            row["speedup"] = {r.hardware.name: result.time_s / r.results[index].time_s
                              for r in self.reports}
            row["bound"] = {r.hardware.name: r.results[index].bound for r in self.reports}
            row["why"] = {r.hardware.name: self.why(index, r) for r in self.reports[1:]}
            gemms.append(row)
        return {"model": base.network.name, "baseline": base.hardware.name,
                "batch": base.network.batch, "mode": base.network.mode,
                "quantization_in_time": base.quantization,
                "devices": devices, "gemms": gemms, "verdict": self.verdict()}

    def plot(self, ax: Any = None, **options: Any) -> Any:
        from ..plot import plot_comparison

        return plot_comparison(self, ax=ax, **options)


def compare(model: Network | str | os.PathLike[str], hardware: list[HardwareSpec | str],
            quantization: bool = False, **overrides: Any) -> Comparison:
    """Analyze ``model`` on each device; the first is the baseline. A device without the
    model's dtype runs ``nearest_dtype`` (the Comparison notes it). Needs two devices or more."""
    if len(hardware) < 2:
        raise InputError("compare", "--hw", "give two devices or more (the first is the "
                                            "baseline), e.g. --hw v100 --hw a100")
    network = _network(model, **overrides)
    network.check()  # a missing batch, dtype or seq is named once, not per device
    requested = network.operand_dtype
    reports = []
    for entry in hardware:
        spec = _spec(entry)
        dtype = nearest_dtype(requested, spec.dtypes)
        if dtype is None:
            spec.peak_flops_per_s(requested)  # raises: the entry has no peak at all
            raise AssertionError("unreachable: an entry without peaks fails validation")
        run = network if dtype == requested else substitute_dtype(network, dtype)
        reports.append(analyze(run, spec, quantization))
    names = [r.hardware.name for r in reports]
    if len(set(names)) < len(names):
        raise InputError("compare", "--hw", f"a device is given twice: {', '.join(names)}")
    return Comparison(tuple(reports), requested)


def substitute_dtype(network: Network, dtype: str) -> Network:
    """``network`` run in ``dtype`` and otherwise unchanged: every other field (seq, phase,
    optimizer, repeats, accumulation, source ...) is kept by construction (``replace``). An
    explicit output dtype equal to the old operand dtype follows the operands."""
    output = None if network.output_dtype == network.dtype else network.output_dtype
    return replace(network, dtype=dtype, output_dtype=output)


# --------------------------------------------------------------------------------------- sweep

def parse_batches(text: str) -> tuple[int, ...]:
    """``--batch``: a comma list (``1,8,64,512``) or a range ``a..b``: every power of two from
    a to b inclusive (a and b need not be powers of two: ``3..100`` is 4, 8, 16, 32, 64; ``1..1``
    is 1). Sorted, duplicates dropped; InputError for anything else."""
    spec = str(text).strip()

    def fail(problem: str) -> InputError:
        return InputError("--batch", "", f"{problem}, got {spec!r} (use e.g. 1,8,64,512 or "
                                         f"1..4096: the powers of two from 1 to 4096)")

    if ".." in spec:
        low, _, high = spec.partition("..")
        if not (low.strip().isdigit() and high.strip().isdigit()):
            raise fail("expected a range a..b of positive integers")
        a, b = int(low), int(high)
        if a <= 0 or b < a:
            raise fail("expected 1 <= a <= b in a..b")
        batches = [2**i for i in range(MAX_SWEEP_POINTS) if a <= 2**i <= b]
        if not batches:
            raise fail(f"no power of two between {a} and {b}")
        return tuple(batches)
    pieces = [p.strip() for p in spec.split(",")]
    if not pieces or not all(p.isdigit() and int(p) > 0 for p in pieces):
        raise fail("expected positive integers separated by commas")
    return tuple(sorted({int(p) for p in pieces}))


@dataclass(frozen=True)
class Sweep:
    """One model on one device at several batches (``reports`` sorted by batch)."""

    reports: tuple[Report, ...]

    @property
    def hardware(self) -> HardwareSpec:
        return self.reports[0].hardware

    def transitions(self) -> dict[str, int | None]:
        """Per GEMM, the smallest batch at which it is compute-bound (closed form), or None if
        no batch makes it so; a GEMM whose shape does not depend on the batch gets 1 when it is
        compute-bound, else None."""
        report = self.reports[0]
        out: dict[str, int | None] = {}
        for result in report.results:
            gemm = result.gemm
            ridge = report.hardware.ridge(gemm.dtype)
            if not any(gemm.batch_dims):
                out[gemm.name] = 1 if roof_bound(gemm.intensity, ridge) == "compute" else None
            else:
                out[gemm.name] = advisor.min_compute_bound_batch(gemm, ridge)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The sweep JSON contract of docs/design.md (plus ``dtype``, ``mode``, ``ridge``)."""
        first = self.reports[0]
        points = []
        for report in self.reports:
            totals = report.totals
            points.append({
                "batch": report.network.batch, "time_s": totals["time_s"],
                "samples_per_s": report.batch / totals["time_s"],
                "memory_bound_time_fraction": totals["memory_bound_time_fraction"],
                "predicted_gemm_time_s": totals["predicted_gemm_time_s"],
                "gemms": [{"name": r.gemm.name, "intensity": r.gemm.intensity, "bound": r.bound,
                           "time_s": r.time_s, "predicted_time_s": r.predicted_time_s}
                          for r in report.results]})
        return {"model": first.network.name, "hardware": first.hardware.name,
                "dtype": first.dtype, "mode": first.network.mode, "ridge": first.ridge,
                "quantization_in_time": first.quantization,
                "points": points, "transitions": self.transitions()}

    def plot(self, ax: Any = None, **options: Any) -> Any:
        from ..plot import plot_batch_sweep

        return plot_batch_sweep(list(self.reports), ax=ax, **options)


def sweep(model: Network | str | os.PathLike[str], hardware: HardwareSpec | str,
          batches: str | list[int] | tuple[int, ...], quantization: bool = False,
          **overrides: Any) -> Sweep:
    """Analyze ``model`` on ``hardware`` at each batch (a list, or ``parse_batches`` text)."""
    values = parse_batches(batches) if isinstance(batches, str) else tuple(sorted(set(batches)))
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError("--batch", "", f"expected positive integers, got {value!r}")
    network, spec = _network(model, **overrides), _spec(hardware)
    return Sweep(tuple(analyze(network.with_overrides(batch=b), spec, quantization)
                       for b in values))
