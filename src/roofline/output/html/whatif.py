"""The compare and sweep pages: the verdict and why, bars of step time and one roofline per
device (compare); throughput (the roofline's and, where the device has one, the predicted) and
memory-bound share over batch with each GEMM's transition marked (sweep). Sentences are
``output.whatif``'s and its ``whatif_*`` modules'."""

from __future__ import annotations

import secrets
from html import escape
from typing import TYPE_CHECKING

from ...analysis.predict import basis_of, predicts
from ...model.repeats import first_copies, repeated_count
from ...units import nice_above, nice_below, rate_unit, seconds, si, times
from .. import generations
from ..fit_bands import no_fit_bands
from ..precision import precision_text
from ..report import (
    compact_names,
    optimizer_states_text,
    quantization_line,
    recompute_setting,
    step_text,
)
from ..serving_pp import device_lines
from ..serving_pp import group_line as pipeline_line
from ..serving_tp import device_comm_lines, group_line, served_gpus, shard_words, where_text
from ..times import parts_text, step_roof_text
from ..whatif_cells import (
    fits_cell,
    memory_bound_gemms,
    memory_cell,
    pp_comm_cell,
    pp_comm_s,
    predicted_cell,
    speedup_text,
    sweep_memory_cell,
    tp_comm_cell,
)
from ..whatif_header import (
    PP_COMM_TEXT,
    TP_COMM_TEXT,
    compare_warnings,
    dtype_note,
    sweep_header,
)
from ..whatif_transitions import transition_lines
from ..whatif_verdict import verdict_text
from ..whatif_why import slow_kernel_lines, why_groups
from . import svg
from .page import (
    Cell,
    block,
    bound_cell,
    document,
    facts,
    figures,
    fragment,
    gemm_tip,
    hardware_sources,
    name_cell,
    other_peaks,
    paragraphs,
    provenance,
    table,
    text,
)

if TYPE_CHECKING:
    from ...analysis.report import Report
    from ...analysis.whatif_comparison import Comparison
    from ...analysis.whatif_sweep import Sweep


# ------------------------------------------------------------------------------------- compare

def _compare_facts(c: Comparison) -> list[tuple[str, str]]:
    net, g = c.baseline.network, c.baseline.generation
    pairs = [("model", net.name), ("step", step_text(net)), ("precision", precision_text(net)),
             ("baseline", c.baseline.hardware.name)]
    if group := group_line(c.reports):
        pairs.append(("tensor parallelism", group))
    if pipeline := pipeline_line(c.reports):
        pairs.append(("pipeline parallelism", pipeline))
    if g is not None:
        pairs[1:2] = [("generation",
                       generations.terms_line(g, where_text(c.baseline)).partition(": ")[2]),
                      ("step and GEMM tables", generations.step_shown(c.baseline))]
    if c.baseline.quantization:
        pairs.append(("quantization", quantization_line(False, [r.hardware for r in c.reports])))
    if left := optimizer_states_text(net):
        pairs.append(("memory not counted", left))
    notes = [("note", note) for note in (dtype_note(c, r) for r in c.reports) if note]
    return pairs + notes + [("warning", text) for text in compare_warnings(c)]


def _device_table(c: Comparison) -> str:
    held = not c.generating  # a generation's memory and fits are its own table's
    header = (("hardware", True), ("dtype", True), ("ridge FLOP/B", False),
              ("step time", False), ("speedup", False), ("predicted", False),
              ("predicted speedup", False), ("memory-bound time", False),
              *((("memory", False), ("fits", True)) if held else ()))
    rows = []
    for r in c.reports:
        t, memory = r.totals, r.memory
        rows.append(("", [name_cell(r.hardware.name), text(r.dtype), Cell(f"{r.ridge:.1f}"),
                          Cell(seconds(t["time_s"]), t["time_s"]),
                          Cell(times(c.speedup(r)), c.speedup(r)),
                          Cell(predicted_cell(c, r), t["predicted_time_s"]),
                          Cell(speedup_text(c.predicted_speedup(r)), c.predicted_speedup(r)),
                          Cell(f"{t['memory_bound_time_fraction']:.0%}",
                               t["memory_bound_time_fraction"]),
                          *([Cell(memory_cell(r), memory.total_bytes if memory else None),
                             text(fits_cell(c, r))] if held else [])]))
    return table(header, rows)


def _generation_table(c: Comparison) -> str:
    """Of generations, a row per device's whole generation (``output.whatif``'s generation
    table: ``generations.cells``), its tokens/s over the baseline's, its memory at the
    generation's peak and whether it fits; nothing for a comparison of steps."""
    if not c.generating:
        return ""
    predicted = any(c.predicts(r) for r in c.reports)
    header = [("hardware", True), ("dtype", True),
              *((name, False) for name in generations.columns(False)), ("speedup", False),
              *((("predicted tokens/s", False), ("predicted speedup", False)) if predicted
                else ()), ("memory", False), ("fits", True)]
    rows = []
    for r in c.reports:
        g, memory = r.generation, r.memory
        assert g is not None
        speedup, guess = c.generation_speedup(r), c.generation_speedup(r, True)
        cells = [name_cell(r.hardware.name), text(r.dtype),
                 *(Cell(shown, value) for shown, value in
                   zip(generations.cells(g, False), generations.values(g, False))),
                 Cell(speedup_text(speedup), speedup)]
        if predicted:
            rate = g.predicted_tokens_per_s if c.predicts(r) else None
            cells += [Cell(generations.rate(rate) if rate is not None else "= roof", rate),
                      Cell(speedup_text(guess), guess)]
        cells += [Cell(memory_cell(r), memory.total_bytes if memory else None),
                  text(fits_cell(c, r))]
        rows.append(("", cells))
    step = generations.step_shown(c.baseline)
    group = (f" over {served_gpus(c.baseline)} GPUs, tp {c.tp} x pp {c.pp} (tokens/s the "
             f"pipeline's with its {c.pp} batches in flight)" if c.pp > 1 else
             f" over {c.tp} GPUs (tokens/s the group's)" if c.tp > 1 else "")
    return (table(header, rows, caption=f"the whole generation on each device{group}; its "
                                        f"memory at the generation's peak")
            + f"<p class=muted>The table below: {escape(step)}.</p>")


def _bars(c: Comparison) -> str:
    bars = []
    for r in c.reports:
        t = r.totals
        memory = t["time_s"] * t["memory_bound_time_fraction"]
        speed = "baseline" if r is c.baseline else times(c.speedup(r))
        short = ", does not fit" if c.fits(r) is False else ""
        bars.append(svg.Bar(r.hardware.name, memory, t["time_s"] - memory,
                            f"{seconds(t['time_s'])} ({speed}){short}"))
    chart = svg.bar_chart(bars, "step time by device")
    which = (f" ({generations.step_shown(c.baseline, brackets=False)})" if c.generating
             else "") + (f", one GPU of tp {c.tp} x pp {c.pp} each, one batch through every "
                         f"stage, its all-reduces and hand-offs included" if c.pp > 1 else
                         f", one GPU of tp {c.tp} each, its all-reduces included" if c.tp > 1
                         else "")
    return (f"<figure>{chart}<figcaption>Step time by device{escape(which)}, "
            f"{escape(step_roof_text(c.baseline))}: the hatched part is memory-bound "
            f"({escape(parts_text(c.baseline, 'ops'))}), the solid part compute-bound."
            "</figcaption></figure>")


def _why(c: Comparison) -> str:
    """Per device, the GEMMs grouped by why they gain or lose against the baseline."""
    out = []
    base = c.baseline.hardware.name
    for r in c.reports[1:]:
        groups = why_groups(c, r)
        items = "".join(f"<li><b>{escape(compact_names(names, 8))}</b>: {escape(why)}</li>"
                        for why, names in groups.items())
        out.append(f"<h4>{escape(r.hardware.name)} vs {escape(base)}</h4><ul>{items}</ul>")
    rows = slow_kernel_lines(c)
    if rows:
        out.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in rows) + "</ul>")
    return "".join(out)


def _compare_charts(c: Comparison, prefix: str) -> str:
    """One roofline per device on shared axes, the GEMMs (first copies) as points; a click
    finds the GEMM's row in the table below (the table has no op rows: the caption says the
    ops are counted in the step times, not drawn)."""
    per_device = []
    for r in c.reports:
        per_device.append([svg.Point(x.gemm.intensity, x.attainable_flops_per_s / 1e12, x.bound,
                                     False, f"{prefix}-{x.gemm.name}",
                                     f"{r.hardware.name}: " + gemm_tip(x))
                           for x in first_copies(r.results) if not x.gemm.copy])
    roofs = [(r.peak_flops_per_s / 1e12, r.bandwidth_bytes_per_s / 1e9) for r in c.reports]
    x_range, y_range = svg.roofline_ranges([(p.x, p.y) for ps in per_device for p in ps], roofs)
    charts = []
    for r, points, (peak, gbs) in zip(c.reports, per_device, roofs):
        chart = svg.roofline_chart(points, peak, gbs, x_range, y_range,
                                   f"roofline on {r.hardware.name}", rate_unit(r.dtype),
                                   other_peaks(r))
        ops = len(r.ops) - repeated_count(r.ops, lambda o: o.op.copy)
        drawn = (f": its GEMMs; its {ops} other op{'s' if ops != 1 else ''} (first copies) "
                 f"count in the step times above, not drawn here (analyze's page draws them)"
                 if ops else "")
        charts.append(f"<figure>{chart}<figcaption>{escape(r.hardware.name)} ({escape(r.dtype)})"
                      f"{escape(drawn)}</figcaption></figure>")
    return f'<div class="charts">{"".join(charts)}</div>'


def _gemm_table(c: Comparison, prefix: str) -> str:
    header: list[tuple[str, bool]] = [("GEMM", True), ("layer", True), ("M", False),
                                      ("N", False), ("K", False)]
    for r in c.reports:
        header.append((f"{r.hardware.name} time", False))
        if r is not c.baseline:
            header.append((f"{r.hardware.name} speedup", False))
    rows = []
    for results in c.first_copies():
        result = results[0]
        g = result.gemm
        cells = [name_cell(g.name), name_cell(g.layer), Cell(str(g.m)), Cell(str(g.n)),
                 Cell(str(g.k))]
        for r, other in zip(c.reports, results):
            bound = bound_cell(other.bound)
            cells.append(Cell(f"{bound.text.split()[0]} {seconds(other.time_s)}",
                              other.time_s))
            if r is not c.baseline:
                speedup = result.time_s / other.time_s
                cells.append(Cell(times(speedup), speedup))
        rows.append((f' id="{prefix}-{escape(g.name)}" tabindex="0" class="{result.bound[0]}"',
                     cells))
    return table(header, rows, caption="per device: \u25cf memory-bound, \u25a0 compute-bound "
                                       "(on that device); the row's shading is the baseline's")


def _comparison_body(c: Comparison, prefix: str) -> tuple[str, str]:
    """The page's title and its content (ids start with ``prefix``)."""
    names = " vs ".join(r.hardware.name for r in c.reports)
    served = (f" (one GPU of tp {c.tp} x pp {c.pp} each)" if c.pp > 1 else
              f" (one GPU of tp {c.tp} each)" if c.tp > 1 else "")
    title = f"{c.baseline.network.name}: {names}{served}"
    body = (f"<h1>{escape(title)}</h1>{facts(_compare_facts(c))}"
            f'<p class="verdict">{escape(verdict_text(c))}</p>' + figures(_compare_figures(c))
            + f"<h2>Devices</h2>{_generation_table(c)}{_device_table(c)}"
            + paragraphs(device_comm_lines(c.reports) + device_lines(c.reports), "muted")
            + _bars(c)
            + f"<h2>Why</h2>{_why(c)}"
            + f"<h2>Roofline per device</h2>{_compare_charts(c, prefix)}"
            + f"<h2>GEMMs</h2>{_gemm_table(c, prefix)}"
            + "<h2>Sources</h2>" + "".join(f"<h3>{escape(r.hardware.name)}</h3>"
                                           f"{hardware_sources(r.hardware)}" for r in c.reports))
    return title, body


def _compare_figures(c: Comparison) -> list[tuple[str, str]]:
    """The page's summary figures: the fastest device, its step time (of generations, its
    tokens/s) and its speedup over the baseline."""
    if not c.generating:
        fastest = c.fastest
        return [("fastest", fastest.hardware.name),
                ("its step time", seconds(fastest.totals["time_s"])),
                ("speedup over the baseline", times(c.speedup(fastest)))]
    fastest = c.fastest  # by the whole generation's latency
    g = fastest.generation
    assert g is not None
    return [("fastest over the whole generation", fastest.hardware.name),
            ("its output tokens a second" + (f" {where_text(fastest)}"
                                             if c.tp > 1 or c.pp > 1 else ""),
             si(g.tokens_per_s, "")),
            ("its tokens/s over the baseline's", speedup_text(c.generation_speedup(fastest)))]


def comparison_page(c: Comparison, command: str | None = None) -> str:
    """compare ``--format html``."""
    title, body = _comparison_body(c, "c")
    return document(title, block(body + provenance(command)))


def comparison_fragment(c: Comparison) -> str:
    """The same block for Jupyter (``Comparison._repr_html_``): its own stylesheet and script,
    ids unique in the notebook."""
    return fragment(_comparison_body(c, "c" + secrets.token_hex(4))[1])


# --------------------------------------------------------------------------------------- sweep

def _sweep_charts(s: Sweep) -> str:
    if s.grid:
        return ("<p class=muted>A batch x seq grid: the charts draw one swept axis (sweep one "
                "batch or one seq to see them); the table below has every pair.</p>")
    reports = s.reports
    axis = s.axis
    xs = [s.x(r) for r in reports]
    x_range = (nice_below(min(xs) / 1.5), nice_above(max(xs) * 1.5))
    groups = s.transition_groups() if axis == "batch" else (s.seq_transition_groups() or {})
    marks = [svg.Mark(b, f"{compact_names(names, 3)} \u2192 compute")
             for b, names in sorted(groups.items(), key=lambda i: (i[0] is None, i[0] or 0))
             if b is not None and x_range[0] <= b <= x_range[1]]
    if s.generating:
        return _generation_charts(s, marks)
    rate = [(s.x(r), s.rate(r), _tip(s, r)) for r in reports]
    where = (f" on the {served_gpus(reports[0])} GPUs ({s.pp} batches in flight)" if s.pp > 1
             else f" on the {s.tp} GPUs" if s.tp > 1 else "")
    share = [(s.x(r), r.totals["memory_bound_time_fraction"], _tip(s, r)) for r in reports]
    basis = basis_of(s.hardware)
    curves = [svg.Curve(rate, name="roofline")]
    if predicts(s.hardware):  # a datasheet entry's predicted time is its roofline's
        curves.append(svg.Curve([(s.x(r), s.rate(r, True),
                                  _tip(s, r, predicted=True)) for r in reports],
                                predicted=True, name=f"predicted ({basis})"))
    ys = [y for curve in curves for _, y, _ in curve.points]
    bands = no_fit_bands(reports, xs, axis)  # as the PNG shades them
    throughput = svg.line_chart(curves, x_range, (nice_below(min(ys) / 1.5),
                                                  nice_above(max(ys) * 1.5)),
                                (axis, f"{s.unit}/s"), f"{s.unit} per second{where} by {axis}",
                                marks=marks, bands=bands)
    bound = svg.line_chart([svg.Curve(share)], x_range, (0.0, 1.0),
                           (axis, "memory-bound share of time"),
                           f"memory-bound share of the step by {axis}", y_log=False,
                           percent=True, marks=marks, bands=bands)
    how = "closed form" if axis == "batch" else "searched"
    swept = "batches" if axis == "batch" else "seqs"  # "the swept batchs" it read
    told, why = ((" that the captures tell", ", and why the others are unknown")
                 if s.unknown_transitions else ("", ""))
    caption = (f"Dashed lines: the {axis} at which GEMMs turn compute-bound ({how}; the list "
               f"below names every GEMM)." if marks else
               f"No GEMM turns compute-bound within the swept {swept}{told} (the list below "
               f"says where each does, if any does{why}).")
    drawn = ("Throughput: the roofline's, an upper bound (its step time a lower bound), and the "
             f"predicted, on the entry's {basis} basis." if len(curves) > 1 else
             "Throughput at the roofline, an upper bound (its step time a lower bound); a "
             "datasheet entry predicts nothing beyond it.")
    return (f'<div class="charts"><figure>{throughput}<figcaption>{escape(drawn)}</figcaption>'
            f"</figure><figure>{bound}<figcaption>Share of the step time spent memory-bound."
            f"</figcaption></figure></div><p class=muted>{escape(caption)}</p>")


def _generation_charts(s: Sweep, marks: list[svg.Mark]) -> str:
    """Of generations: output tokens/s and the time per output token (the time to first token
    where one token is generated) by batch, the roofline's and, where the entry predicts
    beyond it, the predicted; the batches whose whole generation does not fit shaded; the
    batches at which the last decode step's GEMMs turn compute-bound marked."""
    reports = [r for r in s.reports if r.generation is not None]
    gens = [r.generation for r in s.reports if r.generation is not None]
    xs = [r.batch for r in reports]
    x_range = (nice_below(min(xs) / 1.5), nice_above(max(xs) * 1.5))
    basis = basis_of(s.hardware)
    what = generations.wait_text(gens[0])
    rates, waits = [], []
    for guess in (False, True)[:1 + predicts(s.hardware)]:
        name = f"predicted ({basis})" if guess else "roofline"
        rates.append(svg.Curve([(r.batch, g.predicted_tokens_per_s if guess else g.tokens_per_s,
                                 _generation_tip(r, guess)) for r, g in zip(reports, gens)],
                               predicted=guess, name=name))
        waits.append(svg.Curve([(r.batch, g.wait_s(guess), _generation_tip(r, guess))
                                for r, g in zip(reports, gens)], predicted=guess, name=name))
    bands = no_fit_bands(reports, xs, "batch")  # as the PNG shades them

    def chart(curves: list[svg.Curve], title: str, label: str) -> str:
        ys = [y for curve in curves for _, y, _ in curve.points]
        return svg.line_chart(curves, x_range, (nice_below(min(ys) / 1.5),
                                                nice_above(max(ys) * 1.5)),
                              ("batch", title), label, marks=marks, bands=bands)

    step = generations.step_shown(s.reports[0], brackets=False)
    caption = (f"Dashed lines: the batch at which GEMMs turn compute-bound (closed form), "
               f"{step}." if marks else "")
    drawn = ("Roofline: an upper bound on tokens/s, a lower bound on times; predicted on the "
             f"entry's {basis} basis." if len(rates) > 1 else
             "At the roofline: an upper bound on tokens/s, a lower bound on times; a datasheet "
             "entry predicts nothing beyond it.")
    return (f'<div class="charts"><figure>'
            f'{chart(rates, "output tokens/s", "output tokens per second by batch")}'
            f"<figcaption>Output tokens a second {escape(where_text(s.reports[0]))}, the whole "
            f"generation. "
            f"{escape(drawn)}</figcaption></figure><figure>"
            f"{chart(waits, what, f'{what} by batch')}<figcaption>{escape(what.capitalize())}: "
            f"what each sequence waits.</figcaption></figure></div>"
            + (f"<p class=muted>{escape(caption)}</p>" if caption else ""))


def _generation_tip(r: Report, predicted: bool) -> str:
    """A generation point's tooltip: its batch, TTFT, TPOT, latency and tokens/s (roofline or
    ``predicted``)."""
    g = r.generation
    assert g is not None
    pairs = [f"{name.removeprefix('pred. ')} {cell}" for name, cell in
             zip(generations.columns(True), generations.cells(g, True))
             if name.startswith("pred.") == predicted]
    return f"batch {r.batch}, {'predicted' if predicted else 'roofline'}\n" + ", ".join(pairs)


def _tip(s: Sweep, r: Report, predicted: bool = False) -> str:
    """A sweep point's tooltip: its batch (and seq), its step time and throughput (samples/s,
    or tokens/s with a seq: ``Sweep.rate``; the roofline's, or the ``predicted``), its
    memory-bound share."""
    t = r.totals
    seq = f", seq {r.network.seq}" if r.network.seq is not None else ""
    time_s = t["predicted_time_s"] if predicted else t["time_s"]
    return (f"batch {r.batch}{seq}\n{'predicted' if predicted else 'roofline'} step "
            f"{seconds(time_s)}, {si(s.rate(r, predicted), s.unit + '/s')}\n"
            f"{t['memory_bound_time_fraction']:.0%} of the time memory-bound")


def _sweep_table(s: Sweep) -> str:
    if s.generating:
        return _generation_sweep_table(s)
    with_seq, served, piped = len(s.seqs) > 1, s.tp > 1, s.pp > 1
    header = (("batch", False), *((("seq", False),) if with_seq else ()), ("step time", False),
              (f"{s.unit}/s", False), ("predicted", False), (f"predicted {s.unit}/s", False),
              *((("tp comm", False),) if served else ()),
              *((("pp comm", False),) if piped else ()),
              ("memory", False), ("memory-bound time", False), ("memory-bound GEMMs", True))
    rows = []
    for r in s.reports:
        t = r.totals
        rate, predicted, predicted_rate = s.rate(r), t["predicted_time_s"], s.rate(r, True)
        held = r.memory
        rows.append(("", [Cell(str(r.batch)),
                          *([Cell(str(r.network.seq))] if with_seq else []),
                          Cell(seconds(t["time_s"]), t["time_s"]),
                          Cell(si(rate, ""), rate),
                          Cell(seconds(predicted), predicted),
                          Cell(si(predicted_rate, ""), predicted_rate),
                          *([_comm_cell(r)] if served else []),
                          *([Cell(pp_comm_cell(r), pp_comm_s(r))] if piped else []),
                          Cell(sweep_memory_cell(r),
                               held.total_bytes if held is not None else None),
                          Cell(f"{t['memory_bound_time_fraction']:.0%}",
                               t["memory_bound_time_fraction"]), text(memory_bound_gemms(r))]))
    return table(header, rows)


def _generation_sweep_table(s: Sweep) -> str:
    """A row per batch's whole generation (``generations.cells``), its memory at its peak and
    the last decode step's memory-bound share."""
    predicted, served, piped = predicts(s.hardware), s.tp > 1, s.pp > 1
    header = (("batch", False), *((name, False) for name in generations.columns(predicted)),
              *((("tp comm", False),) if served else ()),
              *((("pp comm", False),) if piped else ()),
              ("memory", False), ("memory-bound time, last step", False))
    rows = []
    for r in s.reports:
        g, held, share = r.generation, r.memory, r.totals["memory_bound_time_fraction"]
        assert g is not None
        rows.append(("", [Cell(str(r.batch)),
                          *(Cell(shown, value) for shown, value in
                            zip(generations.cells(g, predicted),
                                generations.values(g, predicted))),
                          *([_comm_cell(r)] if served else []),
                          *([Cell(pp_comm_cell(r), pp_comm_s(r))] if piped else []),
                          Cell(sweep_memory_cell(r),
                               held.total_bytes if held is not None else None),
                          Cell(f"{share:.0%}", share)]))
    return table(header, rows)


def _comm_cell(report: Report) -> Cell:
    """A point's ``tp comm`` cell (``whatif_cells.tp_comm_cell``), sorted by its seconds."""
    tp = report.tensor_parallel
    assert tp is not None
    whole = tp.predicted_generation_s
    return Cell(tp_comm_cell(report), tp.step.predicted_s if whole is None else whole)


def _transitions_html(s: Sweep) -> str:
    """The transition lines of the table output
    (``output.whatif_transitions.transition_lines``), as headed lists."""
    out, items = "", ""
    for line in transition_lines(s):
        if line.startswith("step:"):  # the whole step's verdict: a sentence, not a heading
            out += f"<ul>{items}</ul>" if items else ""
            items = ""
            out += f"<p>{escape(line)}</p>"
        elif line.startswith(" "):
            head, _, names = line.strip().partition(": ")
            items += f"<li><b>{escape(head)}</b>: {escape(names)}</li>"
        else:
            out += f"<ul>{items}</ul>" if items else ""
            items = ""
            out += f"<h3>{escape(line[0].upper() + line[1:].rstrip(':'))}</h3>"
    return out + (f"<ul>{items}</ul>" if items else "")


def _sweep_body(s: Sweep) -> tuple[str, str]:
    """The page's title and its content."""
    first = s.reports[0]
    what = ("batch x seq grid" if s.grid else "a whole generation at each batch"
            if s.generating else f"{s.axis} sweep")
    title = f"{first.network.name} on {s.hardware.name}{shard_words(first)}: {what}"
    pairs = [("model", first.network.name), ("device", s.hardware.name),
             ("dtype", first.dtype),
             ("mode", ", ".join(filter(None, (first.network.mode,
                                              recompute_setting(first.network))))),
             ("precision", precision_text(first.network)),
             ("ridge", f"{first.ridge:.1f} FLOP/B"),
             ("batches", ", ".join(map(str, s.batches)))]
    if s.seqs:
        pairs.append(("seqs" if len(s.seqs) > 1 else "seq", ", ".join(map(str, s.seqs))))
    g = first.generation
    if g is not None:
        pairs.append(("generation", f"prompt {g.prompt} + {g.generate} tokens a sequence"))
    if first.quantization:
        pairs.append(("quantization", quantization_line(False, [s.hardware])))
    if group := group_line(s.reports):
        pairs.append(("tensor parallelism", f"{group}; tp comm: {TP_COMM_TEXT}"))
    if pipeline := pipeline_line(s.reports):
        pairs.append(("pipeline parallelism", f"{pipeline}; pp comm: {PP_COMM_TEXT}"))
    notes = "".join(f"<p>{escape(line)}</p>" for line in sweep_header(s)
                    if line.startswith(("step time", "memory:", "note:", "predicted:",
                                        "warning:", "generation:", "memory-bound time",
                                        "memory at")))
    body = (f"<h1>{escape(title)}</h1>{facts(pairs)}{notes}<h2>Throughput and bound</h2>"
            f"{_sweep_charts(s)}<h2>Steps</h2>{_sweep_table(s)}"
            f"<h2>Compute-bound from</h2>{_transitions_html(s)}"
            f"<h2>Sources</h2>{hardware_sources(s.hardware)}")
    return title, body


def sweep_page(s: Sweep, command: str | None = None) -> str:
    """sweep ``--format html``."""
    title, body = _sweep_body(s)
    return document(title, block(body + provenance(command)))


def sweep_fragment(s: Sweep) -> str:
    """The same block for Jupyter (``Sweep._repr_html_``)."""
    return fragment(_sweep_body(s)[1])
