"""The calibration's rounds (``calibrate.calibrate``): every calibration kernel, a large GEMM
per dtype and the DRAM read stream timed round-robin (``kernels.rounds.RoundRobin``), each
figure its best over the rounds, the rounds' starts spread over ``plan.cal_span_s`` (full
preset 40 s), and more rounds while the figures say the machine was busy:

- a figure contradicts its neighbours: a square GEMM's efficiency more than ``MONOTONE_TOL``
  under a smaller square's, a thin GEMM's (M >= 2; M = 1 is the BLAS's GEMV, another kernel)
  under a smaller M's at the same N = K, or a square's efficiency more than ``MONOTONE_TOL``
  over the peak (then the peak is the low one). Efficiency grows with size on every BLAS
  measured here (the development VM: squares 0.32 at n = 32 to 0.99 at 512); one that drops
  was slowed while it was timed, as the full probe's fp64 squares were on 2026-11-26
  ({128: 0.47, 256: 0.76, 512: 0.83} where the quick probe a minute earlier got {128: 0.80,
  256: 0.95});
- no round ran on an otherwise idle machine (``kernels.load``: other programs kept more than
  ``BUSY_CPUS`` busy through every round).

Up to ``plan.cal_extra_rounds`` more rounds of every kernel, so they are spread in time as the
first ones are; what is still contradicted after them is named in a warning (a real step of the
BLAS, or a machine busy throughout), as is a calibration no round of which was quiet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..kernels.load import BUSY_CPUS
from .calibrate import EFFICIENCY_KINDS, efficiencies

if TYPE_CHECKING:
    from ..kernels.rounds import RoundRobin
    from .calibrate import CalKernel
    from .runner import Session

#: How far an efficiency may fall under a smaller size's (or a square's rise over the peak)
#: before the rounds take it for a disturbed figure.
MONOTONE_TOL = 0.10


def time_rounds(s: Session, kernels: list[CalKernel],
                ceilings: dict[str, float] | None = None) -> list[float]:
    """Each kernel's best time over the rounds; raises the session's peaks and DRAM figure
    to the rounds' best (``raise_figures``) and records the rounds in ``details``. The first
    ``plan.cal_rounds`` start spread over ``plan.cal_span_s`` (the session idles between
    them): this VM's host slows 2-thread GEMMs for 25-45 s at a time (a 128^3 fp64 GEMM 100
    us against 60, a 1024^3 fp32 one 10 % slower), which no in-guest counter shows, so rounds
    a second apart can all fall in one such stretch."""
    from ..kernels.rounds import RoundRobin

    p, loads = s.plan, []
    before = own_figures(s)
    meter = s.load_meter()
    timer = RoundRobin([k.kernel.run for k in kernels], p.cal_min_time_s, p.warmups, s.clock)
    start = s.clock()
    for i in range(p.cal_rounds):
        if i and p.cal_span_s > 0:  # round i starts i / (rounds - 1) of the span in, at least
            s.sleep(max(0.0, start + i * p.cal_span_s / (p.cal_rounds - 1) - s.clock()))
            meter.lap()  # the load while idle is not the round's
        timer.rounds(1, p.cal_values, after_round=lambda _: loads.append(meter.lap()))
    flagged, extra = _flagged(s, kernels, timer, ceilings or {}), 0
    first_flagged = [kernels[i].kernel.label for i in flagged]
    while (flagged or not quiet(loads)) and extra < p.cal_extra_rounds:
        timer.rounds(1, p.cal_values, after_round=lambda _: loads.append(meter.lap()))
        flagged, extra = _flagged(s, kernels, timer, ceilings or {}), extra + 1
    _record(s, kernels, timer, loads, first_flagged, [kernels[i].kernel.label for i in flagged])
    _say_raised(s, before)
    return [r.best_s for r in timer.results()]


def _flagged(s: Session, kernels: list[CalKernel], timer: RoundRobin,
             ceilings: dict[str, float]) -> list[int]:
    best = [r.best_s for r in timer.results()]
    raise_figures(s, kernels, best)
    call_s = s.measured["small_gemm_overhead_s"]
    effs: list[float | None] = [None] * len(kernels)
    for dtype in dict.fromkeys(k.dtype for k in kernels if k.dtype):
        peak = s.measured["gemm_gflops"][dtype] * 1e9
        table = efficiencies(kernels, best, dtype, call_s, peak,
                             max(peak, ceilings.get(dtype, 0.0) * 1e9))
        for i, k in enumerate(kernels):
            if k.dtype == dtype and k.kind in EFFICIENCY_KINDS:
                effs[i] = table[k.kind][str(k.size)]
    return contradicting(kernels, effs)


def raise_figures(s: Session, kernels: list[CalKernel], best: list[float]) -> None:
    """The session's peak per dtype and DRAM figure raised to the rounds' best rate of the
    large GEMM and of the read stream (never lowered: each is a best)."""
    gflops, bandwidth = s.measured["gemm_gflops"], s.measured["bandwidth_gbs"]
    for k, best_s in zip(kernels, best):
        rate = k.kernel.work / best_s / 1e9
        if k.kind == "peak" and k.dtype:
            gflops[k.dtype] = max(gflops[k.dtype], rate)
        elif k.kind == "dram":
            bandwidth["dram"] = max(bandwidth["dram"], rate)


def own_figures(s: Session) -> dict[str, float]:
    """The figures ``raise_figures`` may raise, as their own measurements left them: each
    GEMM peak (``gemm_gflops.<dtype>``) and the DRAM read stream (``bandwidth_gbs.dram``)."""
    out = {f"gemm_gflops.{dtype}": rate for dtype, rate in s.measured["gemm_gflops"].items()}
    if "dram" in s.measured["bandwidth_gbs"]:
        out["bandwidth_gbs.dram"] = s.measured["bandwidth_gbs"]["dram"]
    return out


def _say_raised(s: Session, before: dict[str, float]) -> None:
    """Where the rounds raised a figure above its own measurement's best (``bandwidth_stats``,
    ``details.gemm_<dtype>``), an assumption (``raised_by_rounds``) and a progress line say
    so: the result then shows one figure where its statistics show another (a quick probe
    here: dram 16.79 GB/s beside its read stream's best of 16.25)."""
    from .result import Note

    for figure, own in before.items():
        group, key = figure.split(".")
        rate = s.measured[group][key]
        if rate <= own:
            continue
        gemm = group == "gemm_gflops"
        unit = "GFLOP/s" if gemm else "GB/s"
        s.assumptions.append(Note("raised_by_rounds", {
            "figure": figure, "rate": rate, "own": own, "unit": unit,
            "own_at": f"details.gemm_{key}" if gemm else "bandwidth_stats.dram"}))
        s.say(f"  {figure} {rate:.4g} {unit}: the rounds' best, above its own measurement's "
              f"{own:.4g}")


def contradicting(kernels: list[CalKernel], effs: list[float | None],
                  tol: float = MONOTONE_TOL) -> list[int]:
    """The indices of the kernels whose efficiency (``effs``, None where a kernel has none)
    contradicts its neighbours (the module docstring), sorted."""
    groups: dict[tuple[str | None, str], list[int]] = {}
    for i, k in enumerate(kernels):
        if effs[i] is not None and (k.kind == "square" or k.size > 1):
            groups.setdefault((k.dtype, k.kind), []).append(i)
    out = set()
    for members in groups.values():
        top = 0.0
        for i in sorted(members, key=lambda i: kernels[i].size):
            value = effs[i] or 0.0
            if value < (1 - tol) * top:
                out.add(i)
            top = max(top, value)
    for (dtype, kind), members in groups.items():
        if kind == "square" and max(effs[i] or 0.0 for i in members) > 1 + tol:
            out |= {i for i, k in enumerate(kernels) if k.dtype == dtype and k.kind == "peak"}
    return sorted(out)


def quiet(loads: list[float | None]) -> bool:
    """Whether a round ran on an otherwise idle machine (or nothing says: no load measured)."""
    known = [load for load in loads if load is not None]
    return not known or min(known) <= BUSY_CPUS


def _record(s: Session, kernels: list[CalKernel], timer: RoundRobin,
            loads: list[float | None], first: list[str], left: list[str]) -> None:
    """``details.calibration_rounds`` and the warnings the rounds call for."""
    from .result import Note

    results = timer.results()
    known = [load for load in loads if load is not None]
    s.details["calibration_rounds"] = {
        "rounds": timer.rounds_run, "extra_rounds": timer.rounds_run - s.plan.cal_rounds,
        "other_load_cpus": [round(load, 3) for load in known],
        "contradicting_first": first, "contradicting_left": left,
        "kernels": {k.kernel.label: _stats(r) for k, r in zip(kernels, results)}}
    if left:
        s.warnings.append(Note("calibration_contradiction", {
            "kernels": ", ".join(left), "rounds": timer.rounds_run}))
    if not quiet(loads):
        s.warnings.append(Note("shared_machine", {
            "what": f"every one of the calibration's {len(known)} rounds",
            "cpus": sum(known) / len(known)}))
    worst = max(range(len(results)), key=lambda i: results[i].round_spread)
    s.say(f"  {timer.rounds_run} rounds ({timer.rounds_run - s.plan.cal_rounds} more for "
          f"{len(first)} contradicted figures); other programs' load "
          f"{_range(known)} CPUs; {spread_text(kernels[worst].kernel.label, results[worst])}")


def spread_text(label: str, result: Any) -> str:
    """The progress line's widest gap between one kernel's rounds, as the slowest round's best
    over the fastest one's (``BenchResult.round_spread`` + 1) with the kernel named: a
    preempted round reads ``590x``, which a percentage wrote as 58,900%."""
    return (f"rounds at most {result.round_spread + 1:.3g}x apart at their best "
            f"({label})")


def _stats(result: Any) -> dict[str, Any]:
    return {"best_s": result.best_s, "median_s": result.median_s,
            "round_spread": result.round_spread, "values": len(result.samples_s)}


def _range(loads: list[float]) -> str:
    return f"{min(loads):.2f}-{max(loads):.2f}" if loads else "unknown"
