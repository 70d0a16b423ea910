"""``compare`` and ``sweep`` results as table, JSON, CSV and Markdown (display only); their
HTML pages are ``output.html.whatif``'s."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..analysis.predict import basis_of, fit_of, predicts
from ..model.repeats import distinct, float_total, named
from ..units import rate_unit, seconds, si, times
from . import generations
from .advice import past_context_text, whatif_warnings
from .hardware import capacity_text
from .json import to_json
from .report import (
    LAYER_COLUMN,
    PASS_SHORT,
    compact_names,
    optimizer_states_text,
    peak_text,
    precision_text,
    quantization_line,
    ridge_text,
    step_line,
    step_text,
    whole_generation_text,
)
from .table import Fit, aligned, markdown, markdown_text
from .times import STEP_ROOF_TEXT, basis_sentence

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.whatif import Comparison, GemmChange, Sweep


#: What ``roofline gemm`` prints under its table: how it reads a bare shape
#: (``analysis.whatif.gemm_network``).
GEMM_NOTE = ("M is read as the batch: the shape is the forward GEMM of a linear layer with K "
             "inputs and N outputs\n(C(M, N) = A(M, K) . B(K, N)), so batch advice is about M.")


def _split(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """``(header, body)`` of rows whose first row is the header."""
    return rows[0], rows[1:]


# ------------------------------------------------------------------------------------- compare

def dtype_note(c: Comparison, report: Report) -> str | None:
    """Why a device runs another dtype than the model's, or None."""
    if not c.substituted(report):
        return None
    return (f"{report.hardware.name} has no {c.requested_dtype} peak: runs "
            f"{report.dtype}, the nearest it has")


def change_text(change: GemmChange, baseline: str) -> str:
    """Why one GEMM gains or loses on a device (``Comparison.why``), as a clause."""
    if change.kind == "memory":
        text = (f"memory-bound on both: the bandwidth ratio {change.other:g}/{change.base:g} = "
                f"{times(change.other / change.base)}")
        if change.bytes_ratio != 1.0:
            text += f", moving {change.bytes_ratio:.2g}x the bytes"
        return text
    if change.kind == "compute":
        base_dtype, dtype = change.dtypes
        peaks = (f"{change.other:g}/{change.base:g}" if base_dtype == dtype else
                 f"{change.other:g} ({dtype})/{change.base:g} ({base_dtype})")
        return (f"compute-bound on both: the peak ratio {peaks} = "
                f"{times(change.other / change.base)}")
    relation = ">=" if change.bound == "compute" else "<"
    return (f"turns {change.bound}-bound (intensity {change.intensity:.1f} {relation} "
            f"ridge {change.ridge:.1f}; {change.base_bound}-bound on {baseline})")


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
    not explain); else nothing."""
    t, b = report.totals, base.totals
    if not (t["op_time_s"] and b["op_time_s"] and t["gemm_time_s"] and b["gemm_time_s"]):
        return ""
    return (f" (GEMMs {times(b['gemm_time_s'] / t['gemm_time_s'])}, other ops "
            f"{times(b['op_time_s'] / t['op_time_s'])})")


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
    fitting = [r for r in c.reports if c.fits(r)]
    if c.fits(fastest) is False and fitting:
        best = min(fitting, key=lambda r: _rank(c, r))
        text += f"; the fastest that holds it is {best.hardware.name}, {at(best)}"
    return text


def _rank(c: Comparison, report: Report, predicted: bool = False) -> float:
    """What a verdict ranks devices by: the step time, or a generation's latency."""
    if c.generating:
        return c.latency(report, predicted)
    return report.totals["predicted_time_s" if predicted else "time_s"]


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
        best = min(c.reports[1:], key=lambda r: r.totals["time_s"])
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
    fastest = min(c.reports, key=lambda r: _rank(c, r))
    slowest = max(c.reports, key=lambda r: _rank(c, r))
    what = f"the whole generation (prompt {g.prompt} + {g.generate} tokens, batch {g.batch})"
    short = no_fit_text(fastest)
    if fastest is base:
        best = min(c.reports[1:], key=lambda r: _rank(c, r))
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
    """``2.41 ktokens/s (latency 6.8 s)``: a device's generation, roofline or predicted."""
    g = report.generation
    assert g is not None
    rate = g.predicted_tokens_per_s if predicted else g.tokens_per_s
    latency = g.predicted_latency_s if predicted else g.latency_s
    return f"{si(rate, '')}tokens/s (latency {seconds(latency)})"


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
    best = min(predicted, key=lambda r: _rank(c, r, True)) if len(predicted) > 1 else None
    without = [r.hardware.name for r in c.reports if not c.predicts(r)]
    none = (f"{', '.join(without)}: datasheet, no prediction beyond the roofline"
            if without else "")
    if best is None:
        return f"Predicted: {none}." if without else ""
    bases = ", ".join(f"{r.hardware.name} {basis_of(r.hardware)}" for r in predicted)
    runner = min((r for r in predicted if r is not best), key=lambda r: _rank(c, r, True))
    ratio = _rank(c, runner, True) / _rank(c, best, True)
    short = " (does not fit)" if c.fits(best) is False else ""
    at = (_rate(best, predicted=True) if c.generating else
          f"{seconds(best.totals['predicted_time_s'])} per {_step(c)}")
    text = (f"Predicted ({bases}): {best.hardware.name}{short} at {at}, {times(ratio)} "
            f"faster than {runner.hardware.name}")
    base = c.baseline
    if len(predicted) > 2 and c.predicts(base) and base not in (best, runner):
        # the roofline's sentence is against the baseline: say this one's too, beside the next
        against = _rank(c, base, True) / _rank(c, best, True)
        text += f" (the next), {times(against)} faster than {base.hardware.name} (the baseline)"
    fastest = min(c.reports, key=lambda r: _rank(c, r))
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


def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The compare JSON contract: ``Comparison.to_dict``'s numbers with the sentences."""
    data = c.to_dict()
    for device, report in zip(data["devices"], c.reports):
        device["dtype_note"] = dtype_note(c, report)
    whys = {r.hardware.name: why_texts(c, r) for r in c.reports[1:]}
    for index, row in enumerate(data["gemms"]):
        row["why"] = {name: texts[index][1] for name, texts in whys.items()}
    data["verdict"] = verdict_text(c)
    data["warnings"] = list(compare_warnings(c))
    return data


def _compare_header(c: Comparison) -> list[str]:
    net = c.baseline.network
    origins = ", ".join(sorted({r.hardware.origin for r in c.reports}))
    # the model's precision, from a device that runs it (the baseline may run another dtype)
    model = next((r for r in c.reports if not c.substituted(r)), c.baseline).network
    other = any(c.substituted(r) for r in c.reports)
    g = c.baseline.generation
    step = (step_text(net) if g is None else
            f"{net.mode}, a whole generation at batch {net.batch}")
    lines = [f"{net.name}: {step}; baseline {c.baseline.hardware.name}",
             "precision"
             + (" (the model's; a device without its dtype runs the nearest, as noted)"
                if other else "") + f": {precision_text(model)}",
             f"step time: {STEP_ROOF_TEXT}, at each entry's peak and bandwidth ({origins}); "
             f"predicted: each device's own basis (the verdict names it)"]
    if g is not None:
        lines += [generations.terms_line(g),
                  f"the step and GEMM tables: {generations.step_shown(c.baseline)}"]
    if c.baseline.quantization:
        lines.append(quantization_line(False, [r.hardware for r in c.reports]))
    held = [f"{r.hardware.name} {_capacity(r)}" for r in c.reports
            if r.memory is not None and r.memory.capacity_bytes is not None]
    if held:
        lines.append("memory" + peak_text(c.baseline) + " against: " + ", ".join(held))
    if left := optimizer_states_text(net):  # the same parameters on every device
        lines.append(f"memory: not counted: {left}")
    notes = (dtype_note(c, r) for r in c.reports)
    return (lines + [f"note: {note}" for note in notes if note]
            + [f"warning: {text}" for text in compare_warnings(c)])


def compare_warnings(c: Comparison) -> tuple[str, ...]:
    """compare's warnings: the model's and each device entry's (``advice.whatif_warnings``)."""
    return whatif_warnings(c.baseline.network, (r.hardware for r in c.reports))


def _capacity(report: Report) -> str:
    """``the 85 GB CUDA reports``: a device's capacity with its basis (``capacity_text``)."""
    memory = report.memory
    assert memory is not None and memory.capacity_bytes is not None
    return capacity_text(si(memory.capacity_bytes, "B"), memory.capacity_basis)


def _device_rows(c: Comparison) -> list[list[str]]:
    """A row per device: its step (of generations, its last decode step: the memory and fits
    columns are the generation table's, ``_generation_rows``)."""
    held = not c.generating
    rows = [["hardware", "dtype", "ridge", "step time", "speedup", "predicted", "pred. speedup",
             "memory-bound time", *(["memory", "fits"] if held else [])]]
    for r in c.reports:
        t = r.totals
        rows.append([r.hardware.name, r.dtype, f"{r.ridge:.1f}", seconds(t["time_s"]),
                     times(c.speedup(r)), predicted_cell(c, r),
                     speedup_text(c.predicted_speedup(r)),
                     f"{t['memory_bound_time_fraction']:.0%}",
                     *([memory_cell(r), fits_cell(c, r)] if held else [])])
    return rows


def _generation_rows(c: Comparison) -> list[list[str]]:
    """A row per device's whole generation: TTFT, TPOT, latency, tokens/s, its speedup over the
    baseline's; predicted where any device predicts beyond its roofline (``= roof`` where
    that device does not); its memory at the generation's peak, and whether it fits. Empty
    where the comparison is not of generations."""
    if not c.generating:
        return []
    predicted = any(c.predicts(r) for r in c.reports)
    rows = [["hardware", "dtype", *generations.columns(False), "speedup",
             *(["pred. tokens/s", "pred. speedup"] if predicted else []), "memory", "fits"]]
    for r in c.reports:
        g = r.generation
        assert g is not None
        rows.append([r.hardware.name, r.dtype, *generations.cells(g, False),
                     speedup_text(c.generation_speedup(r)),
                     *([generations.rate(g.predicted_tokens_per_s) if c.predicts(r)
                        else "= roof",
                        speedup_text(c.generation_speedup(r, True))] if predicted else []),
                     memory_cell(r), fits_cell(c, r)])
    return rows


def _generation_table(c: Comparison, markdown_rows: bool = False) -> list[str]:
    """The generation table (``_generation_rows``) and the caption of the step table after
    it, as text or Markdown; nothing for a comparison of steps."""
    rows = _generation_rows(c)
    if not rows:
        return []
    left = {0, 1}
    table = markdown(*_split(rows), left) if markdown_rows else aligned(*_split(rows), left)
    step = f"{generations.step_shown(c.baseline)}:"
    step = step[0].upper() + step[1:]
    # Markdown: a blank line before the step table, which may not interrupt a paragraph
    return [*table, "", markdown_text(step), ""] if markdown_rows else [*table, "", step]


def memory_cell(report: Report) -> str:
    """The step's memory on a device against its capacity, ``192 GB of 80 GB`` (analyze's
    total); the total alone where the entry states no capacity."""
    memory = report.memory
    if memory is None:
        return "-"
    total = si(memory.total_bytes, "B")
    if memory.capacity_bytes is None:
        return total
    return f"{total} of {si(memory.capacity_bytes, 'B')}"


def fits_cell(c: Comparison, report: Report) -> str:
    """``yes`` or ``no``: whether the device holds the step (``Comparison.fits``); ``-``
    where its entry states no capacity, so it is not checked."""
    return {True: "yes", False: "no", None: "-"}[c.fits(report)]


def predicted_cell(c: Comparison, report: Report) -> str:
    """A device's predicted step time; ``= roof`` where it has no prediction beyond its
    roofline (a datasheet entry)."""
    return seconds(report.totals["predicted_time_s"]) if c.predicts(report) else "= roof"


def speedup_text(ratio: float | None) -> str:
    """A speedup as ``1.83x``; ``-`` where there is none (``Comparison.predicted_speedup``)."""
    return "-" if ratio is None else times(ratio)


def _gemm_rows(c: Comparison) -> list[list[str]]:
    short = [r.hardware.name for r in c.reports]
    rows = [["GEMM", "layer", "pass", "M", "N", "K", *short]]
    for i, result in enumerate(c.baseline.results):
        g = result.gemm
        if g.copy:  # a repeated block's rows are shown once (the totals count every copy)
            continue
        cells = []
        for r in c.reports:
            other = r.results[i]
            cell = f"{seconds(other.time_s)} {other.bound[0]}"
            if r is not c.baseline:
                cell += f" {times(result.time_s / other.time_s)}"
            cells.append(cell)
        rows.append([g.name, g.layer, PASS_SHORT[g.pass_], str(g.m), str(g.n),
                     str(g.k), *cells])
    return rows


def _hidden_note(c: Comparison) -> list[str]:
    """Says how many rows the GEMM table leaves out as repeated copies, if any."""
    hidden = sum(1 for _, _, copy, _ in named(c.baseline.results, lambda r: r.gemm) if copy)
    return [f"({hidden} rows of repeated layer copies not shown: each repeats its first copy's; "
            f"the step times count every copy)"] if hidden else []


def why_texts(c: Comparison, report: Report) -> list[tuple[str, str]]:
    """Every GEMM's name and why it gains or loses on ``report``'s device, in order
    (``Comparison.changes``; each distinct change written once)."""
    texts: dict[int, str] = {}
    baseline = c.baseline.hardware.name
    return [(name, texts.get(id(change)) or texts.setdefault(id(change),
                                                             change_text(change, baseline)))
            for name, change in c.changes(report)]


def why_groups(c: Comparison, report: Report) -> dict[str, list[str]]:
    """The GEMMs' names grouped by why they gain or lose on ``report``'s device."""
    groups: dict[str, list[str]] = {}
    for name, why in why_texts(c, report):
        groups.setdefault(why, []).append(name)
    return groups


def _why_lines(c: Comparison) -> list[str]:
    """Per device, the GEMMs grouped by why they gain or lose."""
    lines = []
    for r in c.reports[1:]:
        lines.append(f"{r.hardware.name} vs {c.baseline.hardware.name}:")
        lines += [f"  {compact_names(names, 8)}: {why}"
                  for why, names in why_groups(c, r).items()]
    return lines


def slow_kernel_lines(c: Comparison) -> list[str]:
    """Per device that runs Tensor-Core GEMMs through TMA, those whose rows miss 16 bytes and
    their predicted time as they are and padded (``predict.misaligned_rows``); per device whose
    fast kernels take only K-major operands, those with one that is not, as they are and as
    if K-major (``predict.strided_gemms``)."""
    from ..analysis.predict import misaligned_rows, strided_gemms

    # what slows them, and what the other figure is
    kinds = ((misaligned_rows, "have rows off 16 bytes: older kernels (TMA needs 16-byte rows)",
              "padded to the 16-byte rule"),
             (strided_gemms, "have TF32 operands not K-major: other kernels (the fast ones "
                             "take K-major only)", "were both K-major"))
    lines = []
    for r in c.reports:
        for slowed, why, otherwise in kinds:
            names, count, now, other = slowed(r)
            if count:
                lines.append(f"{r.hardware.name}: {_slowed_names(names, count)} {why}, "
                             f"predicted {seconds(now)} as they are, {seconds(other)} "
                             f"{otherwise}")
    return lines


def _slowed_names(names: list[str], count: int) -> str:
    """``compact_names`` of the GEMMs a table lists, and how many repeated copies besides."""
    more = f" (and {count - len(names):,} in repeated copies)" if count > len(names) else ""
    return compact_names(names, 8) + more


def comparison_table(c: Comparison, width: int | None = None) -> str:
    """Devices (step time, speedup), then per GEMM ``time bound speedup`` on each device
    (m / c: memory- or compute-bound), why, and the verdict; the GEMM table's layer names cut
    to fit ``width`` characters where it is given (``report.View.width``)."""
    fit = None if width is None else Fit(width, LAYER_COLUMN)
    out = [*_compare_header(c), "", *_generation_table(c),
           *aligned(*_split(_device_rows(c)), {0, 1}), "",
           *aligned(*_split(_gemm_rows(c)), {0, 1, 2}, fit),
           "(per device: time, m/c = memory/compute-bound, speedup over the baseline)",
           *_hidden_note(c), "",
           *_why_lines(c), *slow_kernel_lines(c), "", f"verdict: {verdict_text(c)}"]
    return "\n".join(out) + "\n"


def comparison_markdown(c: Comparison) -> str:
    """``comparison_table`` as Markdown: its tables as Markdown's, its sentences escaped
    (``table.markdown_text``), the why nested as in the text and the verdict in bold."""
    out = ["  \n".join(map(markdown_text, _compare_header(c))), "",
           *_generation_table(c, markdown_rows=True),
           *markdown(*_split(_device_rows(c)), {0, 1}), "",
           *markdown(*_split(_gemm_rows(c)), {0, 1, 2}), "",
           "(per device: time, m/c = memory/compute-bound, speedup over the baseline)",
           *map(markdown_text, _hidden_note(c)), "",
           *(f"{'  ' if line.startswith(' ') else ''}- {markdown_text(line.strip())}"  # nested
             for line in (*_why_lines(c), *slow_kernel_lines(c))), "",
           f"**{markdown_text(verdict_text(c))}**"]
    return "\n".join(out) + "\n"


def comparison_csv(c: Comparison) -> str:
    """One row per (GEMM, device): raw seconds, speedup over the baseline, bound, why; then the
    GEMM's shape and its predicted time (the JSON's ``gemms`` fields; after ``why`` so that the
    first nine columns keep their places); then, of generations, the device's whole
    generation (``generations.CSV_FIELDS``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["name", "layer", "pass", "hardware", "dtype", "time_s", "speedup", "bound",
                     "why", "m", "n", "k", "batch_count", "predicted_time_s",
                     *generations.csv_fields(c.generating)])
    whys = [why_texts(c, r) if r is not c.baseline else None for r in c.reports]
    for i, base in enumerate(c.baseline.results):
        for r, texts in zip(c.reports, whys):
            other = r.results[i]
            why = "" if texts is None else texts[i][1]
            gemm = base.gemm
            writer.writerow([gemm.name, gemm.layer, gemm.pass_, r.hardware.name,
                             r.dtype, other.time_s, base.time_s / other.time_s, other.bound, why,
                             gemm.m, gemm.n, gemm.k, gemm.batch_count, other.predicted_time_s,
                             *generations.csv_values(r)])
    return buffer.getvalue()


def comparison_html(c: Comparison, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.comparison_page``)."""
    from .html import comparison_page

    return comparison_page(c, command)


COMPARE_FORMATS = {"table": comparison_table, "markdown": comparison_markdown,
                   "csv": comparison_csv, "json": lambda c: to_json(comparison_dict(c)) + "\n",
                   "html": comparison_html}


# --------------------------------------------------------------------------------------- sweep

def fit_text(max_batch: int | None, seq: int | None, generation: bool = False) -> str | None:
    """The largest batch that fits in memory (with ``generation``, whose whole generation
    does: ``report.whole_generation_text``), in words (None: no capacity stated)."""
    if max_batch is None:
        return None
    if generation:
        return whole_generation_text(max_batch)
    at = f" at seq {seq}" if seq is not None else ""
    return (f"batch <= {max_batch} fits in memory{at}" if max_batch else
            f"no batch fits in memory{at}")


def seq_fit_text(max_seq: int | None, batch: int | None, context: bool = False) -> str | None:
    """The largest seq that fits in memory at a batch, in words (None: not known);
    ``context``: the model's context is the limit, memory would allow more."""
    if max_seq is None:
        return None
    if context:
        return f"every seq up to the model's context ({max_seq}) fits in memory at batch {batch}"
    return (f"seq <= {max_seq} fits in memory at batch {batch}" if max_seq else
            f"no seq fits in memory at batch {batch}")


def no_fit_label(limit: int, axis: str = "batch", context: bool = False,
                 generation: bool = False) -> str:
    """A sweep chart's label for the batches (or seqs) whose step (with ``generation``, whose
    whole generation) does not fit in memory, or (``context``) the seqs past the model's
    context, the memory limit lying beyond it; where none fits (``limit`` 0), it says so (not
    ``batch > 0``, as if batch 0 did)."""
    if context:
        return f"past the model's context (seq > {limit})"
    what = "the generation does not fit" if generation else "does not fit"
    if not limit:
        return f"{what} in memory (no {axis} fits)"
    return f"{what} in memory ({axis} > {limit})"


def sweep_header(s: Sweep) -> list[str]:
    if s.generating:
        return _generation_header(s)
    first = s.reports[0]
    net = first.network
    what = {"batch": "batch sweep", "seq": f"seq sweep at batch {net.batch}"}[s.axis]
    lines = [f"{net.name} on {s.hardware.name}: {first.dtype}, {net.mode}"
             + (f", {net.step_phase}" if net.seq is not None and net.step_phase != net.mode
                else "")
             + f" ({'batch x seq grid' if s.grid else what})",
             f"precision: {precision_text(net)}",
             ridge_text(first),
             f"step time, {s.unit}/s: {STEP_ROOF_TEXT}; memory-bound time: its share in "
             f"memory-bound GEMMs and ops"
             + (("; a decode step makes one token a sequence" if net.step_phase == "decode"
                 else "; tokens/s: batch x seq tokens a step") if s.unit == "tokens" else ""),
             basis_sentence(s.hardware) + " (the predicted column: GEMMs and ops)"]
    if first.quantization:
        lines.append(quantization_line(False, [s.hardware]))
    capacity = first.memory.capacity_bytes if first.memory else None
    at_context = first.memory is not None and first.memory.seq_limit == "context"
    fit = (seq_fit_text(s.max_seq, net.batch, at_context) if s.axis == "seq" else
           fit_text(s.max_batch, net.seq))
    if fit is not None and capacity is not None:
        larger = "longer sequences" if s.axis == "seq" else "larger batches"
        # past the context the limit is the model's, not memory's: a row says its own fit
        limit = s.max_seq if s.axis == "seq" else s.max_batch
        marked = ("every row is marked 'does not fit'" if limit == 0 else
                  "a row whose step does not fit is marked 'does not fit'" if at_context and
                  s.axis == "seq" else f"{larger} are marked 'does not fit'")
        basis = first.memory.capacity_basis if first.memory else None
        left = optimizer_states_text(net)
        lines.append(f"memory: {fit} ({capacity_text(si(capacity, 'B'), basis)})"
                     + (f"; not counted: {left}" if left else "") + f"; {marked}"
                     + ("; each row says whether its step fits" if s.grid else ""))
    context = net.context
    past = [seq for seq in s.seqs if context is not None and seq > context]
    if past and context is not None:
        lines.append(f"note: {past_context_text(past, context)}")
    return lines + [f"warning: {text}" for text in sweep_warnings(s)]


def _generation_header(s: Sweep) -> list[str]:
    """``sweep_header`` of generations: what each column is, which step the step columns
    are, and the batch the whole generation fits."""
    first = s.reports[0]
    net, g = first.network, first.generation
    assert g is not None
    lines = [f"{net.name} on {s.hardware.name}: {first.dtype}, {net.mode}, a whole generation "
             f"at each batch (batch sweep)",
             f"precision: {precision_text(net)}", ridge_text(first), generations.terms_line(g),
             f"memory-bound time (its share in memory-bound GEMMs and ops), the compute-bound "
             f"batches and the step's verdict: {generations.step_shown(first)}",
             basis_sentence(s.hardware) + (" (the predicted columns: GEMMs and ops)"
                                           if predicts(s.hardware) else
                                           " (so no predicted columns)")]
    if first.quantization:
        lines.append(quantization_line(False, [s.hardware]))
    memory = first.memory
    if memory is not None and memory.capacity_bytes is not None and s.max_batch is not None:
        marked = ("every row is marked 'does not fit'" if s.max_batch == 0 else
                  "larger batches are marked 'does not fit'")
        lines.append(f"memory{peak_text(first)}: {fit_text(s.max_batch, None, True)} "
                     f"({capacity_text(si(memory.capacity_bytes, 'B'), memory.capacity_basis)})"
                     f"; {marked}")
    return lines + [f"warning: {text}" for text in sweep_warnings(s)]


def sweep_warnings(s: Sweep) -> tuple[str, ...]:
    """sweep's warnings: the model's, but its seq past the context, which a note names with
    every swept seq past it, and its device entry's (``advice.whatif_warnings``)."""
    return whatif_warnings(s.reports[0].network, [s.hardware], context=False)


def sweep_dict(s: Sweep) -> dict[str, Any]:
    """The sweep JSON contract: ``Sweep.to_dict``'s numbers with the model's warnings."""
    return s.to_dict() | {"warnings": list(sweep_warnings(s))}


def sweep_memory_cell(r: Report) -> str:
    """A sweep row's memory: its total, marked where it does not fit (empty without a
    capacity model), in the text, Markdown and HTML tables alike."""
    memory = r.memory
    if memory is None:
        return ""
    text = si(memory.total_bytes, "B")
    return text + (": does not fit" if memory.fits is False else "")


def memory_bound_gemms(r: Report) -> str:
    """A sweep row's memory-bound GEMMs: ``all``, ``none`` or their names, compacted (each
    named beside its stored result, none built: a deep model has thousands)."""
    memory = [name for name, _, _, x in named(r.results, lambda x: x.gemm)
              if x.bound == "memory"]
    if memory and len(memory) == len(r.results):
        return "all"
    return compact_names(memory, 6) or "none"


def _sweep_rows(s: Sweep) -> list[list[str]]:
    if s.generating:
        return _generation_sweep_rows(s)
    with_seq = len(s.seqs) > 1
    rows = [["batch", *(["seq"] if with_seq else []), "step time", f"{s.unit}/s", "predicted",
             f"pred. {s.unit}/s", "memory", "memory-bound time", "memory-bound GEMMs"]]
    for r in s.reports:
        t = r.totals
        rows.append([str(r.network.batch), *([str(r.network.seq)] if with_seq else []),
                     seconds(t["time_s"]), si(s.rate(r, t["time_s"]), ""),
                     seconds(t["predicted_time_s"]), si(s.rate(r, t["predicted_time_s"]), ""),
                     sweep_memory_cell(r), f"{t['memory_bound_time_fraction']:.0%}",
                     memory_bound_gemms(r)])
    return rows


def _generation_sweep_rows(s: Sweep) -> list[list[str]]:
    """A row per batch's whole generation (``generations.cells``; predicted where the entry
    predicts beyond its roofline), its memory at its peak and the last step's memory-bound
    share."""
    predicted = predicts(s.hardware)
    rows = [["batch", *generations.columns(predicted), "memory", "memory-bound time"]]
    for r in s.reports:
        assert r.generation is not None
        rows.append([str(r.network.batch), *generations.cells(r.generation, predicted),
                     sweep_memory_cell(r), f"{r.totals['memory_bound_time_fraction']:.0%}"])
    return rows


def _left(s: Sweep) -> set[int]:
    """The left-aligned columns of the sweep table (memory, memory-bound GEMMs)."""
    if s.generating:
        return {len(generations.columns(predicts(s.hardware))) + 1}
    shift = 1 if len(s.seqs) > 1 else 0
    return {5 + shift, 7 + shift}


def _grouped(transitions: dict[str, int | None], unit: str, limit: int | None,
             never: str = "never") -> list[str]:
    groups: dict[int | None, list[str]] = {}
    for name, value in transitions.items():
        groups.setdefault(value, []).append(name)
    order = sorted(groups, key=lambda b: (b is None, b or 0))

    def mark(b: int | None) -> str:
        if b is None or limit is None or b <= limit:
            return ""
        return (f" (does not fit in memory: at most {unit} {limit})" if limit else
                f" (does not fit in memory: no {unit} fits)")

    return [f"  {never if b is None else f'{unit} >= {b}'}: {compact_names(groups[b], 8)}"
            f"{mark(b)}" for b in order]


def transition_lines(s: Sweep) -> list[str]:
    """The batch (and, for a model with a sequence, the seq) at which each GEMM turns
    compute-bound, each marked when it does not fit in memory."""
    first = s.reports[0].network
    lines: list[str] = []
    if s.grid:
        limits = s.max_batch_by_seq()
        for seq, transitions in s.transitions_by_seq().items():
            lines += [f"compute-bound from (closed form, any batch) at seq {seq}:",
                      *_grouped(transitions, "batch", limits[seq])]
    elif s.generating:
        shown = generations.step_shown(s.reports[0], brackets=False)
        lines += [f"compute-bound from (closed form, any batch), {shown}:",
                  *_grouped(s.transitions(), "batch", s.max_batch)]
    elif s.axis == "batch":
        lines += ["compute-bound from (closed form, any batch)"
                  + (f" at seq {first.seq}:" if first.seq is not None else ":"),
                  *_grouped(s.transitions(), "batch", s.max_batch)]
    by_seq = s.seq_transitions()
    if by_seq is not None:
        which = " (the sweep's first)" if s.axis == "batch" and len(s.batches) > 1 else ""
        lines += [f"compute-bound from (searched, any seq up to {s.seq_limit}) at batch "
                  f"{first.batch}{which}:",
                  *_grouped(by_seq, "seq", s.max_seq, f"not up to {s.seq_limit}")]
    # the whole step's verdict (analyze's), at the first swept seq: the GEMMs' crossings
    # above are each GEMM's own, and a step with ops may never follow them
    head = s.reports[0]
    at = f" (at seq {head.network.seq})" if s.axis == "seq" or s.grid else ""
    line = step_line(head) + at
    if s.generating:  # "step (the last decode step, KV cache 2559 tokens): ..."
        line = f"step ({generations.step_shown(head, brackets=False)}):{line[len('step:'):]}"
    return lines + [line]


def sweep_table(s: Sweep) -> str:
    """One row per batch (or seq, or pair: step time, samples/s, memory, memory-bound share
    and GEMMs), then the batch (and seq) at which each GEMM turns compute-bound."""
    out = [*sweep_header(s), "", *aligned(*_split(_sweep_rows(s)), _left(s)), ""]
    out += transition_lines(s)
    return "\n".join(out) + "\n"


def sweep_markdown(s: Sweep) -> str:
    """``sweep_table`` as Markdown, its sentences escaped (``table.markdown_text``)."""
    out = ["  \n".join(map(markdown_text, sweep_header(s))), "",
           *markdown(*_split(_sweep_rows(s)), _left(s))]
    for line in map(markdown_text, transition_lines(s)):
        out += ["", line[0].upper() + line[1:], ""] if not line.startswith(" ") else [
            f"- {line.strip()}"]
    return "\n".join(out) + "\n"


def sweep_csv(s: Sweep) -> str:
    """One row per (batch, seq, GEMM), raw numbers; the step's totals repeated on each row;
    ``seq`` and ``compute_bound_from_seq`` at the end (empty without a sequence); then, of
    generations, the point's whole generation (``generations.CSV_FIELDS``), its step the
    last decode step."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["batch", "name", "intensity", "bound", "time_s", "step_time_s",
                     "samples_per_s", "memory_bound_time_fraction", "compute_bound_from",
                     "memory_bytes", "fits", "seq", "compute_bound_from_seq",
                     "predicted_time_s", "predicted_step_time_s",
                     *generations.csv_fields(s.generating)])
    # a row's batch crossings are at its own seq (a seq sweep's too, not only a grid's)
    by_seq = s.transitions_by_seq() if len(s.seqs) > 1 else None
    seq_transitions = s.seq_transitions() or {}
    for r in s.reports:
        t = r.totals
        transitions = by_seq[r.network.seq] if by_seq and r.network.seq else s.transitions()
        for x in r.results:
            name = x.gemm.name
            writer.writerow([r.network.batch, name, x.gemm.intensity, x.bound, x.time_s,
                             t["time_s"], r.batch / t["time_s"],
                             t["memory_bound_time_fraction"],
                             "" if transitions.get(name) is None else transitions[name],
                             r.memory.total_bytes if r.memory else "",
                             "" if r.memory is None or r.memory.fits is None
                             else r.memory.fits,
                             "" if r.network.seq is None else r.network.seq,
                             "" if seq_transitions.get(name) is None
                             else seq_transitions[name], x.predicted_time_s,
                             t["predicted_time_s"], *generations.csv_values(r)])
    return buffer.getvalue()


def sweep_html(s: Sweep, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.sweep_page``)."""
    from .html import sweep_page

    return sweep_page(s, command)


SWEEP_FORMATS = {"table": sweep_table, "markdown": sweep_markdown, "csv": sweep_csv,
                 "json": lambda s: to_json(sweep_dict(s)) + "\n", "html": sweep_html}
