"""compare's verdict, one plain sentence: who is fastest, by how much and what decides it (the
roof most of its step is bound by), who is slowest, who cannot hold the step; of generations,
the phase that takes most of the fastest's latency and the roof deciding it; then the same at
the predicted times, each device on its own basis, with the clocks those rest on where their
bases differ."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..analysis.predict import basis_of, fit_of
from ..model.repeats import distinct, float_total
from ..units import rate_unit, seconds, si, times
from .hardware import capacity_text
from .serving_tp import served_gpus
from .whatif_cells import speedup_text

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.whatif_comparison import Comparison


def _decider(report: Report, base: Report) -> str:
    """What sets ``report``'s step against the baseline's: bandwidth or the dtype's peak when
    both steps are mostly bound by the same roof; both roofs when they are not."""
    hw, b_hw = report.hardware, base.hardware
    fraction = report.totals["memory_bound_time_fraction"]
    b_fraction = base.totals["memory_bound_time_fraction"]
    bandwidths = f"{hw.bandwidth_gbs:g} vs {b_hw.bandwidth_gbs:g} GB/s"
    peaks = _peaks(report, base)
    if (fraction >= 0.5) != (b_fraction >= 0.5):
        mine, theirs = (("memory", "compute") if fraction >= 0.5 else ("compute", "memory"))
        share = fraction if fraction >= 0.5 else 1 - fraction
        return (f"{share:.0%} of its step is {mine}-bound where {b_hw.name}'s is mostly "
                f"{theirs}-bound, so each runs at a different roof (peaks {peaks}; bandwidth "
                f"{bandwidths})")
    if fraction >= 0.5:
        # a device that runs another dtype moves other bytes: the ratio is not bandwidth alone
        moved = report.totals["bytes"] / base.totals["bytes"]
        other = (f", and it runs {report.dtype} for {base.dtype}, moving {moved:.2g}x the bytes"
                 if report.dtype != base.dtype and abs(moved - 1) > 0.005 else "")
        return (f"{fraction:.0%} of its step is memory-bound, so bandwidth decides "
                f"({bandwidths}){other}")
    return (f"{1 - fraction:.0%} of its step is compute-bound, so the compute peak decides "
            f"({peaks})")


def _step(c: Comparison) -> str:
    """What one step is: a decode step makes a token a sequence."""
    net = c.baseline.network
    return "decode step (a token a sequence)" if (
        net.seq is not None and net.step_phase == "decode") else "step"


def _parts(report: Report, base: Report) -> str:
    """`` (GEMMs 3.43x, other ops 1.64x)``: how much faster ``report``'s GEMMs and other ops
    run than ``base``'s, where both steps have ops (a speedup that the peak ratio alone does
    not explain), and the forward work recomputation runs again, where both run some; else
    nothing."""
    t, b = report.totals, base.totals
    if not (t["op_time_s"] and b["op_time_s"] and t["gemm_time_s"] and b["gemm_time_s"]):
        return ""
    again = (f", recomputation {times(b['recompute_time_s'] / t['recompute_time_s'])}"
             if t["recompute_time_s"] and b["recompute_time_s"] else "")
    return (f" (GEMMs {times(b['gemm_time_s'] / t['gemm_time_s'])}, other ops "
            f"{times(b['op_time_s'] / t['op_time_s'])}{again})")


def _peaks(report: Report, base: Report) -> str:
    """The two peaks a verdict compares, ``fp16 989.5 vs 312 TFLOP/s``; each with its dtype
    and its entry's basis where the two differ in either (a probed CPU's measured fp32 rate
    beside a GPU's datasheet fp16 peak)."""
    hw, b_hw = report.hardware, base.hardware
    dtype, b_dtype = _peak_dtype(report), _peak_dtype(base)
    peak, b_peak = hw.peak_tflops[dtype], b_hw.peak_tflops[b_dtype]
    unit, b_unit = rate_unit(dtype), rate_unit(b_dtype)
    if dtype == b_dtype and hw.origin == b_hw.origin:
        return f"{dtype} {peak:g} vs {b_peak:g} {unit}"
    return (f"{dtype} {peak:g} {unit}, {hw.origin}, vs {b_dtype} {b_peak:g}"
            f"{'' if b_unit == unit else ' ' + b_unit}, {b_hw.origin}")


def _peak_dtype(report: Report) -> str:
    """The dtype whose peak holds most of ``report``'s compute-bound GEMM time: the step's, or
    TF32 where its fp32 GEMMs run so (a captured module's convolutions on a GPU with a TF32
    peak, ``GemmShape.tf32``; the verdict named the fp32 peak, 19.5 vs 67 TFLOP/s, for GEMMs at
    156 vs 494.5)."""
    dtypes = {r.gemm.dtype for r in distinct(report.results)} - {report.dtype}
    if not dtypes:
        return report.dtype

    def held_in(dtype: str) -> float:
        return float_total(report.results, lambda r: r.time_s * (
            r.bound == "compute" and r.gemm.dtype == dtype))

    held = {d: held_in(d) for d in (report.dtype, *dtypes)}
    best = max(held, key=held.__getitem__)
    return best if held[best] > held[report.dtype] else report.dtype


def no_fit_text(report: Report) -> str | None:
    """``the step does not fit in its memory: needs 192 GB of 80 GB`` where ``report``'s
    device cannot hold the step (``Comparison.fits``, analyze's figure; a generation's at its
    peak); else None."""
    memory = report.memory
    if memory is None or memory.capacity_bytes is None or memory.fits:
        return None
    return (f"the {_held(report)} does not fit in its memory: needs "
            f"{si(memory.total_bytes, 'B')} of {_capacity(report)}")


def _held(report: Report) -> str:
    """What a device's memory must hold: the ``step``, or the whole ``generation``."""
    return "step" if report.generation is None else "generation"


def _capacity(report: Report) -> str:
    """``the 85 GB CUDA reports``: a device's capacity with its basis (``capacity_text``)."""
    memory = report.memory
    assert memory is not None and memory.capacity_bytes is not None
    return capacity_text(memory.capacity_bytes, memory.capacity_basis)


def _memory_clauses(c: Comparison, fastest: Report, at: Callable[[Report], str]) -> str:
    """What the verdict adds where a device cannot hold the step (or generation; the fastest,
    ``fastest``, already says it): that none can; else which others cannot and, when the
    fastest cannot, the fastest that can, ``at(it)``."""
    unheld = [r for r in c.reports if c.fits(r) is False]
    held = _held(c.baseline)
    if not unheld:
        return ""
    if len(unheld) == len(c.reports):
        return f"; none of them can hold the {held}"
    text = ""
    others = [r.hardware.name for r in unheld if r is not fastest]
    if others:
        text += f"; the {held} does not fit in the memory of {', '.join(others)}"
    best = c.fastest_fitting
    if c.fits(fastest) is False and best is not None:
        text += f"; the fastest that holds it is {best.hardware.name}, {at(best)}"
    return text


def verdict_text(c: Comparison) -> str:
    """One plain sentence: who is fastest, by how much, what decides it, and who is slowest
    (the baseline included); where a device cannot hold the step, the fastest says so, and
    so do the others or the fastest that can (``_memory_clauses``). Of generations,
    ``generation_verdict_text``."""
    if c.generating:
        return generation_verdict_text(c)
    base, fastest, slowest = c.baseline, c.fastest, c.slowest
    short = no_fit_text(fastest)
    if fastest is base:
        best = c.fastest_of(c.reports[1:])
        baseline = f"the baseline; {short}" if short else "the baseline"
        text = (f"{base.hardware.name} ({baseline}) stays fastest at "
                f"{seconds(base.totals['time_s'])} per {_step(c)}; the next, {best.hardware.name}, "
                f"is {times(1 / c.speedup(best))} slower than it{_parts(base, best)}: "
                f"{_decider(best, base)}")
    else:
        text = (f"{fastest.hardware.name} is the fastest{f' ({short})' if short else ''}: "
                f"{seconds(fastest.totals['time_s'])} per {_step(c)}, "
                f"{times(c.speedup(fastest))} faster than {base.hardware.name}"
                f"{_parts(fastest, base)}; {_decider(fastest, base)}")
    text += _slowest(c, slowest, c.speedup(slowest))
    text += _memory_clauses(c, fastest, lambda r: f"at {seconds(r.totals['time_s'])} per "
                                                  f"{_step(c)}")
    predicted = predicted_verdict_text(c)
    return text + "." + (f" {predicted}" if predicted else "")


def _slowest(c: Comparison, slowest: Report, speedup: float | None) -> str:
    """The verdict's clause on the slowest device, where there are three or more."""
    if len(c.reports) <= 2:
        return ""
    if slowest is c.baseline:
        return f"; the baseline, {slowest.hardware.name}, is the slowest"
    return f"; the slowest, {slowest.hardware.name}, runs at {speedup_text(speedup)}"


def generation_verdict_text(c: Comparison) -> str:
    """``verdict_text`` of whole generations: who serves the generation fastest (its latency,
    so its tokens/s), by how much in each phase, what decides it (the phase that takes most
    of its latency, and that phase's roof: ``_decider``), who is slowest, who cannot hold it;
    then the same at the predicted times."""
    base = c.baseline
    g = base.generation
    assert g is not None, "a comparison of generations"
    fastest, slowest = c.fastest, c.slowest
    what = f"the whole generation (prompt {g.prompt} + {g.generate} tokens, batch {g.batch})"
    short = no_fit_text(fastest)
    if fastest is base:
        best = c.fastest_of(c.reports[1:])
        baseline = f"the baseline; {short}" if short else "the baseline"
        ratio = c.generation_speedup(best)
        assert ratio is not None
        text = (f"{base.hardware.name} ({baseline}) stays fastest over {what}: {_rate(base)}; "
                f"the next, {best.hardware.name}, is {times(1 / ratio)} slower than it"
                f"{_phases(base, best)}: {_phase_decider(best, base)}")
    else:
        text = (f"{fastest.hardware.name} is the fastest over {what}"
                f"{f' ({short})' if short else ''}: {_rate(fastest)}, "
                f"{speedup_text(c.generation_speedup(fastest))} the tokens/s of "
                f"{base.hardware.name}{_phases(fastest, base)}; "
                f"{_phase_decider(fastest, base)}")
    text += _slowest(c, slowest, c.generation_speedup(slowest))
    text += _memory_clauses(c, fastest, _rate)
    predicted = predicted_verdict_text(c)
    return text + "." + (f" {predicted}" if predicted else "")


def _rate(report: Report, predicted: bool = False) -> str:
    """``2.41 ktokens/s (latency 6.8 s)``: a device's generation, roofline or predicted
    (``2.41 ktokens/s on its 8 GPUs (...)`` served over several, ``--tp``, ``--pp``)."""
    g = report.generation
    assert g is not None
    rate = g.predicted_tokens_per_s if predicted else g.tokens_per_s
    latency = g.predicted_latency_s if predicted else g.latency_s
    served = report.tensor_parallel or report.pipeline_parallel
    group = f" on its {served_gpus(report)} GPUs" if served else ""
    return f"{si(rate, '')}tokens/s{group} (latency {seconds(latency)})"


def _phases(report: Report, base: Report) -> str:
    """`` (time to first token 3.1x, time per output token 1.64x)``: how much faster each
    phase of ``report``'s generation runs than ``base``'s."""
    g, b = report.generation, base.generation
    assert g is not None and b is not None
    parts = [f"time to first token {times(b.ttft_s / g.ttft_s)}"]
    if g.tpot_s and b.tpot_s:
        parts.append(f"time per output token {times(b.tpot_s / g.tpot_s)}")
    return f" ({', '.join(parts)})"


def _phase_decider(report: Report, base: Report) -> str:
    """What sets ``report``'s generation against ``base``'s: the phase that takes most of its
    latency, and in it the roof that decides (``_decider`` of the two prefills, or of the two
    last decode steps)."""
    g, b = report.generation, base.generation
    assert g is not None and b is not None
    share = g.decode_s / g.latency_s
    if share >= 0.5:
        return (f"its decode steps take {share:.0%} of its latency, and in the last of them "
                f"{_decider(report, base)}")
    return (f"its prefill takes {1 - share:.0%} of its latency, and there "
            f"{_decider(g.prefill, b.prefill)}")


def predicted_verdict_text(c: Comparison) -> str:
    """The same question at the predicted step times, among the devices that have a
    prediction beyond their roofline (``Comparison.predicts``), each on its own basis; whether
    they pick another device than the roofline; which devices have none."""
    predicted = [r for r in c.reports if c.predicts(r)]
    best = c.predicted_fastest
    without = [r.hardware.name for r in c.reports if not c.predicts(r)]
    none = (f"{', '.join(without)}: datasheet, no prediction beyond the roofline"
            if without else "")
    if best is None:
        return f"Predicted: {none}." if without else ""
    bases = ", ".join(f"{r.hardware.name} {basis_of(r.hardware)}" for r in predicted)
    runner = c.fastest_of([r for r in predicted if r is not best], True)
    ratio = c.rank(runner, True) / c.rank(best, True)
    short = " (does not fit)" if c.fits(best) is False else ""
    at = (_rate(best, predicted=True) if c.generating else
          f"{seconds(best.totals['predicted_time_s'])} per {_step(c)}")
    text = (f"Predicted ({bases}): {best.hardware.name}{short} at {at}, {times(ratio)} "
            f"faster than {runner.hardware.name}")
    base = c.baseline
    if len(predicted) > 2 and c.predicts(base) and base not in (best, runner):
        # the roofline's sentence is against the baseline: say this one's too, beside the next
        against = c.rank(base, True) / c.rank(best, True)
        text += f" (the next), {times(against)} faster than {base.hardware.name} (the baseline)"
    fastest = c.fastest
    if best is not fastest:
        text += f" (the roofline picks {fastest.hardware.name})"
    clocks = clocks_text(predicted)
    if clocks:
        text += f"; {clocks}"
    return text + (f"; {none}." if without else ".")


def clocks_text(reports: list[Report]) -> str:
    """Where fitted predictions run their devices at clocks of different bases (one a sustained
    clock its entry gives, another its boost clock, its entry giving none), which at which:
    their ratio holds only as far as the boost clock does."""
    fits = [(r.hardware.name, fit_of(r.hardware)) for r in reports]
    clocks = [(name, fit["clock"]) for name, fit in fits if fit is not None]
    if len({clock["basis"] for _, clock in clocks}) < 2:
        return ""
    return "the clocks differ in basis: " + ", ".join(
        f"{name} at the {clock['ghz']:g} GHz its entry says it holds through a long GEMM"
        if clock["basis"] == "sustained" else
        f"{name} at its {clock['ghz']:g} GHz boost (its entry gives no sustained clock)"
        for name, clock in clocks)
