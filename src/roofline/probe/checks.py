"""The probe's own checks on a result before it is saved as a hardware entry: a result they
call unstable is refused (``save_entry`` raises) unless the caller forces it.

- fp32 slower than fp64 (on the CPU, or on the GPU measured): a wider type never runs faster
  on the same units, so one of the two figures was disturbed (not checked where fp64's
  theoretical ceiling reaches fp32's: FP64 Tensor Cores beside FP32 CUDA cores);
- an efficiency above ``EFFICIENCY_LIMIT``: a measured rate over its theoretical ceiling
  (GEMM per dtype, DRAM bandwidth), or a calibration GEMM's rate over the theoretical ceiling
  (over the measured peak it is a share of when no ceiling is known); more than the limit is
  a cache or a clock the ceiling does not know, or a disturbed timing, never noise;
- a spread (MAD / median of the timed values) above ``SPREAD_LIMIT`` on a figure the entry
  saves (the GEMM rate per dtype at its best size, the DRAM read stream): other programs
  shared the machine while it was timed;
- other programs keeping more than ``SHARED_LIMIT`` CPUs busy on average through the probe
  (``details.other_load_cpus``, from /proc/stat): a multi-threaded call waits for the thread
  another program holds, and every figure timed then, the op costs' as much as the GEMMs', is
  a shared machine's (a quick probe saved under 0.43 CPUs of other load kept a softmax at 0.33
  GB/s, against 14.7-15.9 in quiet runs).

Each failed check is a name (``CHECKS``) and one sentence; ``failed_checks`` lists both,
``unstable_reasons`` the sentences, ``check_stable`` raises with the first ones; a result saved
past them with ``force`` records them (``entry``: ``measured.forced_past``). Only the standard
library is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ProbeSaveError, option
from ..hardware.sanity import OVER_CEILING

if TYPE_CHECKING:
    from .result import ProbeResult

#: An efficiency (measured / ceiling) above this fails: 5 % for timer and clock noise, the
#: one allowance ``hardware.sanity`` holds a saved entry's figures to, and ``analyze
#: --measure`` gives a GEMM before it flags it as beating its roof.
EFFICIENCY_LIMIT = OVER_CEILING
#: A saved figure whose timed values spread (MAD / median) more than this fails; a spread
#: above 10 % only warns (``kernels.timing.UNSTABLE_SPREAD``).
SPREAD_LIMIT = 0.25
#: Other programs' load (CPUs, averaged over the probe) above which a result is refused; above
#: ``kernels.load.BUSY_CPUS`` (0.15) it only warns (``shared_machine``).
SHARED_LIMIT = 0.25


def _order(where: str, gflops: dict[str, float], ceilings: dict[str, float]) -> list[str]:
    """fp32 slower than fp64 where the two run on the same units: unless the theoretical fp64
    ceiling reaches fp32's (H100's and A100's FP64 Tensor Cores: 67 and 19.5 TFLOP/s beside
    the CUDA cores' FP32 67 and 19.5, where a lent H100 ran fp64 at 55 and fp32 at 51)."""
    fp32, fp64 = gflops.get("fp32"), gflops.get("fp64")
    ceil32, ceil64 = ceilings.get("fp32"), ceilings.get("fp64")
    if ceil32 and ceil64 and ceil64 >= ceil32:
        return []
    if fp32 and fp64 and fp32 < fp64:
        return [f"{where}fp32 GEMM ran slower than fp64 ({fp32:,.1f} < {fp64:,.1f} GFLOP/s)"]
    return []


def _over(what: str, measured: float | None, ceiling: float | None, unit: str) -> list[str]:
    if not measured or not ceiling or measured <= EFFICIENCY_LIMIT * ceiling:
        return []
    return [f"{what} {measured:,.1f} {unit} is {_times(measured / ceiling)} its ceiling "
            f"{ceiling:,.1f} (more than {EFFICIENCY_LIMIT:g}x)"]


def _times(ratio: float) -> str:
    """``1.25x``; ``335,693x`` (an entry saved before probe method 5 could hold a calibration
    GEMM timed below the per-call overhead at a floor of 1e-12 s; the probe now floors its
    math time at the ceiling, ``calibrate.gemm_efficiency``)."""
    return f"{ratio:,.2f}x" if ratio < 1000 else f"{ratio:,.0f}x"


_SIZE = {"square": "n", "thin": "M", "thin_dram": "M"}


def _calibration(efficiency: dict[str, Any], measured: dict[str, float],
                 ceilings: dict[str, float]) -> list[str]:
    """A calibration GEMM's efficiency is a share of the measured peak after the per-call
    time; it is checked against the theoretical ceiling (efficiency x measured peak / ceiling)
    where one is known: a small GEMM's share of the measured peak is the difference of two
    near-equal times (its call and the overhead), and can pass 1 with no disturbance, but no
    GEMM outruns the ceiling."""
    out = []
    for dtype, block in efficiency.items():
        peak, ceiling = measured.get(dtype), ceilings.get(dtype)
        scale = peak / ceiling if peak and ceiling else 1.0
        against = (f"the theoretical {ceiling:,.1f} GFLOP/s" if peak and ceiling
                   else f"the measured {dtype} peak")
        for kind in ("square", "thin", "thin_dram"):
            for size, value in (block.get(kind) or {}).items():
                if value * scale > EFFICIENCY_LIMIT:
                    out.append(f"calibration {dtype} {kind} GEMM ({_SIZE[kind]} = {size}) "
                               f"ran at {_times(value * scale)} {against} (more than "
                               f"{EFFICIENCY_LIMIT:g}x)")
    return out


def _spreads(details: dict[str, Any], dtypes: list[str], prefix: str) -> list[str]:
    out = []
    for dtype in dtypes:
        block = details.get(f"{prefix}gemm_{dtype}")
        if not block:
            continue
        stats = block["sizes"][str(block["best_n"])]
        if stats["spread"] > SPREAD_LIMIT:
            out.append(f"{prefix.replace('gpu_', 'GPU ')}{dtype} GEMM n={block['best_n']} spread "
                       f"{stats['spread']:.0%} (MAD / median, more than {SPREAD_LIMIT:.0%})")
    return out


#: The name of each check (``failed_checks``), as an entry saved past it records it
#: (``measured.forced_past``): fp32 slower than fp64, a rate over its ceiling, a calibration
#: GEMM over the ceiling, a saved figure's spread, other programs' load.
CHECKS = ("fp32_below_fp64", "over_ceiling", "calibration_over_ceiling", "spread",
          "shared_machine")


def failed_checks(result: ProbeResult) -> list[tuple[str, str]]:
    """``(check, sentence)`` for each check ``result`` fails (empty: it may be saved); the
    check is one of ``CHECKS``."""
    measured, theory, details = result.measured, result.theoretical, result.details
    gflops = measured.get("gemm_gflops", {})
    failed = _named("fp32_below_fp64", _order("", gflops, theory.get("gemm_gflops", {})))
    for dtype, rate in gflops.items():
        failed += _named("over_ceiling", _over(f"measured {dtype} GEMM", rate,
                                               theory.get("gemm_gflops", {}).get(dtype),
                                               "GFLOP/s"))
    dram = measured.get("bandwidth_gbs", {}).get("dram")
    failed += _named("over_ceiling", _over("the DRAM read stream", dram,
                                           theory.get("bandwidth_gbs", {}).get("dram"), "GB/s"))
    failed += _named("calibration_over_ceiling", _calibration(
        measured.get("calibration", {}).get("gemm_efficiency", {}), gflops,
        theory.get("gemm_gflops", {})))
    failed += _named("spread", _spreads(details, list(gflops), ""))
    load = details.get("other_load_cpus")
    if load is not None and load > SHARED_LIMIT:
        failed.append(("shared_machine", f"other programs kept {load:.2f} CPUs busy on average "
                                         f"while it ran (more than {SHARED_LIMIT:g})"))
    read = details.get("dram_read")
    if dram and read and read.get("spread", 0) > SPREAD_LIMIT:
        failed.append(("spread", f"DRAM read stream spread {read['spread']:.0%} (MAD / median, "
                                 f"more than {SPREAD_LIMIT:.0%})"))
    gpu = measured.get("gpu")
    if gpu:
        failed += _gpu_checks(gpu, theory.get("gpu", {}), details)
    return failed


def _gpu_checks(gpu: dict[str, Any], gpu_theory: dict[str, Any],
                details: dict[str, Any]) -> list[tuple[str, str]]:
    failed = _named("fp32_below_fp64", _order("GPU ", gpu.get("gemm_gflops", {}),
                                              gpu_theory.get("gemm_gflops", {})))
    for dtype, rate in gpu.get("gemm_gflops", {}).items():
        failed += _named("over_ceiling", _over(f"measured GPU {dtype} GEMM", rate,
                                               gpu_theory.get("gemm_gflops", {}).get(dtype),
                                               "GFLOP/s"))
    failed += _named("over_ceiling", _over("GPU device bandwidth",
                                           gpu.get("bandwidth_gbs", {}).get("device"),
                                           gpu_theory.get("bandwidth_gbs", {}).get("device"),
                                           "GB/s"))
    return failed + _named("spread", _spreads(details, list(gpu.get("gemm_gflops", {})),
                                              "gpu_"))


def _named(check: str, sentences: list[str]) -> list[tuple[str, str]]:
    return [(check, sentence) for sentence in sentences]


def unstable_reasons(result: ProbeResult) -> list[str]:
    """One sentence per check ``result`` fails (empty: it may be saved): ``failed_checks``'
    sentences."""
    return [sentence for _, sentence in failed_checks(result)]


def check_stable(result: ProbeResult, name: str) -> None:
    """Raise ProbeSaveError, in one line naming the failed check, if ``result`` fails one."""
    reasons = unstable_reasons(result)
    if reasons:
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        raise ProbeSaveError(f"not saving {name!r}: the probe's own check failed: "
                             f"{reasons[0]}{more}; rerun on an idle machine, or pass "
                             f"{option('force', 'True')} to save it anyway")
