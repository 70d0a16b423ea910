"""The host's own speed beside a benchmark's timings: the kernel an entry's fp32 peak was
measured with, timed in the same run and held against the peak the entry holds; and how long a
two-thread call waits for its second thread (``thread_check``). A shared VM's speed moves
between runs and within them; a benchmark that prints these lines says which stretch it ran
on."""

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


#: The thread check's GEMM: the smallest square OpenBLAS splits over two threads (it runs M N K
#: <= 262,144 on one), where a second thread that starts late shows most.
THREAD_CHECK_N = 96


def thread_check() -> tuple[float, float]:
    """A THREAD_CHECK_N^3 fp32 GEMM's best time through numpy's BLAS on one thread and on all
    its threads. On the development VM (2 vCPUs) two threads take about 0.7 of one thread's time
    while the host runs both vCPUs promptly, and 1.0 or more through its slow stretches, when
    the held-out shapes' small squares missed (README, "Validation")."""
    from threadpoolctl import threadpool_limits

    from roofline.kernels.cpu import shaped_gemm_kernel
    from roofline.kernels.timing import measure

    run = shaped_gemm_kernel(THREAD_CHECK_N, THREAD_CHECK_N, THREAD_CHECK_N, "fp32").run
    with threadpool_limits(1):
        one = measure(run, repeats=5, min_time_s=0.005).best_s
    return one, measure(run, repeats=5, min_time_s=0.005).best_s


def thread_line(before: tuple[float, float], after: tuple[float, float], what: str) -> str:
    """``thread_check`` before and after ``what`` in one line."""
    return (f"host: a {THREAD_CHECK_N}^3 fp32 GEMM on all the BLAS's threads took "
            + " and ".join(f"{two / one:.2f} of one thread's time ({two * 1e6:.1f} / "
                           f"{one * 1e6:.1f} us) {when}" for (one, two), when in
                           ((before, f"before {what}"), (after, "after")))
            + " (about 0.7: both vCPUs ran promptly; 1.0 or more: the second thread waited)")
