"""The roofline itself: attainable throughput, the ridge point, which ceiling binds.

attainable = min(peak, intensity x bandwidth); ridge = peak / bandwidth (FLOP/B). A GEMM whose
intensity is below the ridge is memory-bound. This assumes the GEMM is large enough to fill the
device (NVIDIA's caveat: not limited by latency or by tile and wave quantization).
"""

from __future__ import annotations


def ridge_point(peak_flops_per_s: float, bandwidth_bytes_per_s: float) -> float:
    """The ops:byte ratio in FLOP/B at which the memory slope meets the compute ceiling."""
    return peak_flops_per_s / bandwidth_bytes_per_s


def attainable_flops_per_s(intensity: float, peak_flops_per_s: float,
                           bandwidth_bytes_per_s: float) -> float:
    """``min(peak, intensity * bandwidth)`` in FLOP/s."""
    return min(peak_flops_per_s, intensity * bandwidth_bytes_per_s)


def bound(intensity: float, ridge: float) -> str:
    """``"memory"`` below the ridge, ``"compute"`` at or above it."""
    return "memory" if intensity < ridge else "compute"


def roofline_time_s(flops: float, nbytes: float, peak_flops_per_s: float,
                    bandwidth_bytes_per_s: float) -> float:
    """Time at the roofline: ``max(flops / peak, bytes / bandwidth)``, which is
    ``flops / attainable`` written so that work without FLOPs (a copy, a gather) has a time."""
    return max(flops / peak_flops_per_s, nbytes / bandwidth_bytes_per_s)
