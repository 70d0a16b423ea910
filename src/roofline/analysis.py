"""Analyze a network's GEMMs against one hardware entry: the Report behind every output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import advisor
from .gemm import Gemm
from .hardware import HardwareSpec
from .network import Network
from .roof import attainable_flops_per_s, bound, ridge_point


@dataclass(frozen=True, slots=True)  # no per-result __dict__: 300,000 of them in a deep MLP
class GemmResult:
    """One GEMM placed on the roofline, with its alignment warnings and batch advice."""

    gemm: Gemm
    bound: str
    attainable_flops_per_s: float
    time_s: float
    aligned: bool
    warnings: tuple[str, ...]
    advice: tuple[str, ...]
    min_compute_bound_batch: int | None

    def to_dict(self) -> dict[str, Any]:
        g = self.gemm
        return {
            "name": g.name, "layer": g.layer, "pass": g.pass_,
            "m": g.m, "n": g.n, "k": g.k, "dtype": g.dtype,
            "flops": g.flops, "bytes": g.bytes, "intensity": g.intensity,
            "bound": self.bound,
            "attainable_tflops": self.attainable_flops_per_s / 1e12,
            "time_s": self.time_s,
            "aligned": self.aligned,
            "warnings": list(self.warnings),
            "advice": list(self.advice),
            "min_compute_bound_batch": self.min_compute_bound_batch,
        }


@dataclass(frozen=True)
class Report:
    """A network analyzed on one device: per-GEMM results and the step's totals."""

    network: Network
    hardware: HardwareSpec
    ridge: float
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    results: tuple[GemmResult, ...]

    @property
    def dtype(self) -> str:
        return self.network.dtype

    @property
    def totals(self) -> dict[str, float]:
        time_s = sum(r.time_s for r in self.results)
        memory_s = sum(r.time_s for r in self.results if r.bound == "memory")
        return {
            "flops": sum(r.gemm.flops for r in self.results),
            "bytes": sum(r.gemm.bytes for r in self.results),
            "time_s": time_s,
            "memory_bound_time_fraction": memory_s / time_s,
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of docs/design.md (plus peak and bandwidth used)."""
        return {
            "model": self.network.name,
            "hardware": self.hardware.name,
            "dtype": self.dtype,
            "batch": self.network.batch,
            "mode": self.network.mode,
            "ridge": self.ridge,
            "peak_basis": "dense",
            "peak_tflops": self.peak_flops_per_s / 1e12,
            "bandwidth_gbs": self.bandwidth_bytes_per_s / 1e9,
            "gemms": [r.to_dict() for r in self.results],
            "totals": self.totals,
        }

    def _repr_html_(self) -> str:
        from .format import report_html

        return report_html(self)

    def plot(self, ax: Any = None, **options: Any) -> Any:
        """Draw the roofline chart (``roofline.plot.plot_roofline``) and return the Axes.

        Without ``ax`` the chart gets a figure of its own, which Jupyter shows inline as
        ``report.plot().figure``; pyplot is never touched.
        """
        from .plot import plot_roofline

        return plot_roofline(self, ax=ax, **options)


def analyze_gemm(gemm: Gemm, hardware: HardwareSpec) -> GemmResult:
    """Place one GEMM on ``hardware``'s roofline for the GEMM's dtype."""
    peak = hardware.peak_flops_per_s(gemm.dtype)
    bandwidth = hardware.bandwidth_bytes_per_s
    ridge = ridge_point(peak, bandwidth)
    attainable = attainable_flops_per_s(gemm.intensity, peak, bandwidth)
    which = bound(gemm.intensity, ridge)
    rule = hardware.alignment.get(gemm.dtype)
    aligned, warnings = advisor.alignment_warnings(gemm, rule)
    if which == "compute":  # a memory-bound GEMM is limited by bandwidth, not tile slots
        quantization = advisor.quantization_warning(gemm, hardware.sms, hardware.tiles)
        warnings += [quantization] if quantization else []
    batch, advice = None, []
    if which == "memory":
        batch, sentence = advisor.batch_advice(gemm, ridge, rule)
        advice.append(sentence)
    return GemmResult(gemm, which, attainable, gemm.flops / attainable, aligned,
                      tuple(warnings), tuple(advice), batch)


def analyze(network: Network, hardware: HardwareSpec) -> Report:
    """Every GEMM of one training (or inference) step of ``network`` on ``hardware``."""
    peak = hardware.peak_flops_per_s(network.dtype)
    bandwidth = hardware.bandwidth_bytes_per_s
    results = tuple(analyze_gemm(g, hardware) for g in network.gemms())
    return Report(network, hardware, ridge_point(peak, bandwidth), peak, bandwidth, results)
