"""The host's own speed beside a benchmark's timings: the kernel an entry's fp32 peak was
measured with, timed in the same run and held against the peak the entry holds. A shared VM's
speed moves between runs and within them; a benchmark that prints this line says which
stretch it ran on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def peak_kernel(hw: Any) -> tuple[str, Any] | None:
    """(label, kernel): the square fp32 GEMM at the calibration's ``peak_n``, through the
    library the entry was calibrated through (numpy's BLAS or torch); None for an entry without
    an fp32 calibration."""
    from roofline.analysis.predict import library_of

    calibration = hw.calibration
    eff = calibration.efficiency.get("fp32") if calibration is not None else None
    library = library_of(hw)
    if eff is None or library is None:
        return None
    if library["name"] == "torch":
        from roofline.kernels.torch_cpu import gemm_kernel
    else:
        from roofline.kernels.cpu import gemm_kernel
    return f"fp32 GEMM n={eff.peak_n}", gemm_kernel(eff.peak_n, "fp32")


def host_line(label: str, rates: Sequence[float], calibrated: float) -> str:
    """The rates ``label`` ran at (FLOP/s) against ``calibrated``, the entry's fp32 peak."""
    low, high = min(rates), max(rates)
    span = (f"{low / 1e9:.0f}-{high / 1e9:.0f} GFLOP/s through the rounds, "
            f"{low / calibrated:.0%}-{high / calibrated:.0%}" if len(rates) > 1 else
            f"{low / 1e9:.0f} GFLOP/s, {low / calibrated:.0%}")
    return (f"host: {label} (the entry's fp32 peak kernel) ran at {span} of the "
            f"{calibrated / 1e9:.1f} the entry holds")
