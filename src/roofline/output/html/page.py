"""The HTML report: one self-contained page (inline CSS, JavaScript and SVG; nothing fetched)
for analyze, compare, sweep and the probe, and the same analyze block for Jupyter.

Every string that comes from a user's file (model, layer and hardware names, source titles and
links, the command line) is escaped here with ``html.escape``; a link is only a link when it is
http(s). The sentences are the text formats' (``output.report``, ``output.whatif``,
``output.times``), so a page says what the table says.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable, Sequence
from functools import cache
from html import escape
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...model.repeats import distinct
from ...units import rate_unit, seconds, si, three_digits
from ..hardware import flat
from ..precision import precision_text
from ..report import (
    Shown,
    View,
    generation_line,
    memory_line,
    no_place_text,
    notes_by_tier,
    quantization_line,
    recompute_line,
    repeat_note,
    shown_results,
    step_line,
    step_text,
    tf32_text,
    totals_line,
)
from ..scaling import scaling_lines
from ..serving_dp import dp_line
from ..serving_dp import header_line as dp_header
from ..serving_pp import header_line as pipeline_header
from ..serving_pp import pipeline_line
from ..serving_tp import comm_line, header_line, shard_words, where_text
from ..times import (
    ROOF_TEXT,
    basis_sentence,
    is_measured,
    kernel_notes,
    op_basis_text,
    residency_lines,
)
from . import svg

if TYPE_CHECKING:
    from ...analysis.report import GemmResult, OpResult, Report
    from ...hardware.spec import HardwareSpec


@cache
def asset(name: str) -> str:
    """``page.css`` or ``page.js``, shipped beside this module."""
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def document(title: str, body: str) -> str:
    """A whole page: everything inline, an empty data: icon so that no browser asks a server
    for a favicon."""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<meta name="generator" content="roofline {escape(__version__)}">'
            '<link rel="icon" href="data:,">'
            f"<title>{escape(title)}</title><style>{asset('page.css')}body{{margin:0}}</style>"
            f"</head><body>{body}<script>{asset('page.js')}</script></body></html>\n")


def block(body: str, tag: str = "main") -> str:
    """The ``.rl`` block the stylesheet and script work on, with its tooltip."""
    return (f'<{tag} class="rl">{body}<div class="tip" role="tooltip" hidden></div>'
            f"</{tag}>")


def facts(pairs: Iterable[tuple[str, str]]) -> str:
    """A definition list of ``(term, text)``, both escaped."""
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def figures(pairs: Iterable[tuple[str, str]]) -> str:
    """Summary figures: a value, large, over what it is."""
    items = "".join(f"<li><b>{escape(v)}</b><span>{escape(k)}</span></li>" for k, v in pairs)
    return f'<ul class="figures">{items}</ul>'


def paragraphs(lines: Iterable[str], css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return "".join(f"<p{klass}>{escape(line)}</p>" for line in lines)


# ------------------------------------------------------------------------------------- tables

class Cell:
    """One table cell: its text, the raw value it sorts by (when not the text) and whether
    it is text (left-aligned) or a number; ``is_name``, a name (a GEMM's, a layer's, a
    device's), which a printed page may break anywhere (``page.css``: a table is printed
    whole, its other cells broken only between words)."""

    __slots__ = ("text", "value", "is_text", "is_name")

    def __init__(self, text: str, value: float | str | None = None, is_text: bool = False,
                 is_name: bool = False):
        self.text, self.value = text, value
        self.is_text, self.is_name = is_text or is_name, is_name

    def html(self) -> str:
        klass = ' class="t n"' if self.is_name else ' class="t"' if self.is_text else ""
        value = "" if self.value is None else f' data-v="{escape(sort_key(self.value))}"'
        return f"<td{klass}{value}>{escape(self.text)}</td>"


def sort_key(value: float | str) -> str:
    """A cell's ``data-v`` as ``page.js`` reads it: a number as JavaScript's ``parseFloat``
    takes it whole (``Infinity``; a NaN as no value, ``""``, sorted last), text as it is."""
    if isinstance(value, str):
        return value
    if math.isnan(value):
        return ""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return str(value)


def text(value: str) -> Cell:
    return Cell(value, is_text=True)


def name_cell(value: str) -> Cell:
    """A name's cell (``Cell.is_name``)."""
    return Cell(value, is_name=True)


def table(header: Sequence[tuple[str, bool]], rows: Iterable[tuple[str, Sequence[Cell]]],
          css: str = "sortable", caption: str = "") -> str:
    """A table whose every column sorts (a button in each header cell): ``header`` is
    ``(name, is_text)``; each row is ``(its <tr> attributes, cells)``."""
    head = "".join(
        f'<th scope="col"{" class=t" if is_text else ""} data-type='
        f'"{"text" if is_text else "num"}"><button type="button">{escape(name)}</button></th>'
        for name, is_text in header)
    body = "".join(f"<tr{attrs}>{''.join(c.html() for c in cells)}</tr>" for attrs, cells in rows)
    cap = f"<caption class=muted>{escape(caption)}</caption>" if caption else ""
    return (f'<div class="scroll"><table class="{css}">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


SYMBOL = {("memory", False): "\u25cf", ("compute", False): "\u25a0",  # filled: GEMMs
          ("memory", True): "\u25cb", ("compute", True): "\u25a1"}    # hollow: ops


def bound_cell(bound: str, is_op: bool = False) -> Cell:
    """``● memory`` / ``■ compute``: the chart's shape, then the word."""
    return Cell(f"{SYMBOL[bound, is_op]} {bound}", bound, is_text=True)


# ------------------------------------------------------------------------------------ analyze

_COLUMNS = (("name", True), ("layer", True), ("pass", True), ("kind", True), ("M", False),
            ("N", False), ("K", False), ("FLOP", False), ("bytes", False), ("FLOP/B", False),
            ("bound", True), ("TFLOP/s", False), ("roof time", False), ("predicted", False))


def _row_attrs(row_id: str, layer: str, bound: str, kind: str) -> str:
    return (f' id="{escape(row_id)}" class="{bound[0]}" tabindex="0" '
            f'data-layer="{escape(layer)}" data-bound="{bound}" data-kind="{kind}"')


def _gemm_cells(r: GemmResult, measured: bool) -> list[Cell]:
    g = r.gemm
    count = f"{g.batch_count}x " if g.batch_count > 1 else ""
    cells = [name_cell(g.name), name_cell(g.layer), text(g.pass_), text("GEMM"),
             Cell(f"{count}{g.m}", g.m), Cell(str(g.n)), Cell(str(g.k)),
             Cell(si(g.flops, ""), g.flops), Cell(si(g.bytes, "B"), g.bytes),
             Cell(f"{g.intensity:.1f}", g.intensity), bound_cell(r.bound),
             Cell(three_digits(r.attainable_flops_per_s / 1e12), r.attainable_flops_per_s / 1e12),
             Cell(seconds(r.time_s), r.time_s),
             Cell(seconds(r.predicted_time_s), r.predicted_time_s)]
    if measured:
        best = r.measured.best_s if r.measured is not None else None
        cells.append(Cell(seconds(best), best) if best else Cell(""))
    return cells + [text("ok" if r.aligned else "NO")]


def _op_cells(r: OpResult, measured: bool) -> list[Cell]:
    o = r.op
    cells = [name_cell(o.name), name_cell(o.layer), text(o.pass_), text(o.kind), Cell(""),
             Cell(""), Cell(""), Cell(si(o.flops, ""), o.flops), Cell(si(o.bytes, "B"), o.bytes),
             Cell(f"{o.intensity:.2f}", o.intensity), bound_cell(r.bound, True),
             Cell(three_digits(r.attainable_flops_per_s / 1e12), r.attainable_flops_per_s / 1e12),
             Cell(seconds(r.time_s), r.time_s),
             Cell(seconds(r.predicted_time_s), r.predicted_time_s)]
    return cells + ([Cell("")] if measured else []) + [text("")]


def gemm_tip(r: GemmResult) -> str:
    """A GEMM point's tooltip: name, layer and pass; shape; intensity and bound; times."""
    g = r.gemm
    batched = f", {g.batch_count} batched" if g.batch_count > 1 else ""
    return (f"{g.name} \u00b7 {g.layer} \u00b7 {g.pass_}\n"
            f"GEMM {g.m} x {g.n} x {g.k} (M x N x K){batched}\n"
            f"{g.intensity:.1f} FLOP/B, {r.bound}-bound\n{times_tip(r)}")


def op_tip(r: OpResult) -> str:
    """An op point's tooltip: name, layer and pass; kind; intensity and bound; times."""
    o = r.op
    return (f"{o.name} \u00b7 {o.layer} \u00b7 {o.pass_}\n{o.kind}\n"
            f"{o.intensity:.2f} FLOP/B, {r.bound}-bound\n{times_tip(r)}")


def times_tip(r: GemmResult | OpResult) -> str:
    """A point's times, GEMM and op alike: ``time 30.1 us (roof), 39.9 us predicted``, the
    prediction where there is one."""
    predicted = (f", {seconds(r.predicted_time_s)} predicted" if r.predicted_time_s > 0
                 else "")
    return f"time {seconds(r.time_s)} (roof){predicted}"


def report_points(report: Report, gemms: Iterable[Any], ops: Iterable[Any],
                  prefix: str) -> list[svg.Point]:
    """One point per GEMM and op shown (ops without FLOPs, a gather, have no place on a log
    intensity axis)."""
    points = [svg.Point(r.gemm.intensity, r.attainable_flops_per_s / 1e12, r.bound, False,
                        f"{prefix}-{r.gemm.name}", gemm_tip(r)) for r in gemms]
    points += [svg.Point(r.op.intensity, r.attainable_flops_per_s / 1e12, r.bound, True,
                         f"{prefix}-{r.op.name}", op_tip(r)) for r in ops if r.op.flops]
    return points


def other_peaks(report: Report) -> list[tuple[str, float]]:
    """(dtype, peak TFLOP/s) of each dtype some of ``report``'s GEMMs run in other than its own
    (a captured fp32 module's convolutions in TF32): their roofs, which the step's does not
    hold (``svg.roofline_chart``'s ``others``)."""
    dtypes = sorted({r.gemm.dtype for r in distinct(report.results)} - {report.dtype})
    return [(d, report.hardware.peak_tflops[d]) for d in dtypes
            if d in report.hardware.peak_tflops]


def _chart(report: Report, points: list[svg.Point], left_out: list[str],
           ranges: tuple[svg.Range, svg.Range] | None = None) -> str:
    peak, gbs = report.peak_flops_per_s / 1e12, report.bandwidth_bytes_per_s / 1e9
    x_range, y_range = ranges or svg.roofline_ranges([(p.x, p.y) for p in points],
                                                     [(peak, gbs)])
    label = f"roofline of {report.network.name} on {report.hardware.name}"
    chart = svg.roofline_chart(points, peak, gbs, x_range, y_range, label,
                               rate_unit(report.dtype), other_peaks(report))
    gemms = sum(1 for p in points if not p.op)
    caption = (f"{len(points)} points: {gemms} GEMMs, {len(points) - gemms} ops "
               f"(\u25cf memory-bound GEMM, \u25a0 compute-bound GEMM, \u25cb \u25a1 the same "
               f"for an op). Hover a point for its figures; click it to find its row.")
    if left_out:
        caption += f" {no_place_text(left_out)}"
    return f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"


def _controls(layers: Iterable[str], list_id: str, count: int) -> str:
    options = "".join(f'<option value="{escape(layer)}"></option>'
                      for layer in dict.fromkeys(layers))
    return ('<div class="controls" role="search">'
            f'<label>layer <input name="layer" type="search" list="{list_id}" '
            f'placeholder="any layer"></label><datalist id="{list_id}">{options}</datalist>'
            '<label>bound <select name="bound"><option value="">any</option>'
            '<option value="memory">memory</option><option value="compute">compute</option>'
            '</select></label><label>kind <select name="kind"><option value="">GEMMs and ops'
            '</option><option value="gemm">GEMMs</option><option value="op">ops</option>'
            f'</select></label><span class="count muted" aria-live="polite">{count} rows</span>'
            "</div>")


def _rows_table(report: Report, gemms: Iterable[Any], ops: Iterable[Any], prefix: str) -> str:
    measured = is_measured(report)
    columns = tuple((rate_unit(report.dtype), right) if name == "TFLOP/s" else (name, right)
                    for name, right in _COLUMNS)  # TOPS for an int8 step, as its ridge
    header = columns + ((("measured", False),) if measured else ()) + (("align", True),)
    rows = [(_row_attrs(f"{prefix}-{r.gemm.name}", r.gemm.layer, r.bound, "gemm"),
             _gemm_cells(r, measured)) for r in gemms]
    rows += [(_row_attrs(f"{prefix}-{r.op.name}", r.op.layer, r.bound, "op"),
              _op_cells(r, measured)) for r in ops]
    layers = [r.gemm.layer for r in gemms] + [r.op.layer for r in ops]
    return (_controls(layers, f"{prefix}-layers", len(rows))
            + table(header, rows, "sortable filterable"))


def _summary(report: Report, view: View) -> str:
    t = report.totals
    g = report.generation
    pairs = []
    if g is not None:  # what a serving user asks first, then the step the page lists
        group = (f" {where_text(report)}" if report.tensor_parallel or report.pipeline_parallel
                 else "")  # the group's
        pairs = [("time to first token, predicted", seconds(g.predicted_ttft_s)),
                 ("per output token, predicted",
                  seconds(g.predicted_tpot_s) if g.predicted_tpot_s is not None else "-"),
                 (f"output tokens a second{group}, predicted",
                  si(g.predicted_tokens_per_s, ""))]
    step = "last decode step" if g is not None else "step time"
    pairs += [(f"{step}, roof", seconds(t["time_s"])),
              (f"{step}, predicted", seconds(t["predicted_time_s"]))]
    if report.results and all(r.measured is not None for r in report.results):
        best = sum(r.measured.best_s for r in report.results if r.measured is not None)
        pairs.append(("GEMM time, measured", seconds(best)))
    pairs += [("of the time memory-bound", f"{t['memory_bound_time_fraction']:.0%}"),
              ("FLOP a step", si(t["flops"], "FLOP")), ("bytes a step", si(t["bytes"], "B")),
              ("GEMMs, ops", f"{len(report.results)}, {len(report.ops)}")]
    lines = [totals_line(report), recompute_line(report), comm_line(report),
             pipeline_line(report), dp_line(report), memory_line(report), step_line(report),
             generation_line(report), repeat_note(report, view)]
    return figures(pairs) + paragraphs([line for line in lines if line])


def _advice(report: Report, gemms: Shown, level: int) -> str:
    tiers = notes_by_tier(gemms, report)
    if not tiers:
        return "<p>No alignment warnings or advice for these GEMMs.</p>"
    heads = {"error": "Errors", "warning": "Warnings", "advice": "Advice"}
    return "".join(f'<h{level} class="tier-{tier}">{heads[tier]} ({len(lines)})</h{level}>'
                   '<ul class="notes">' + "".join(f"<li>{escape(line)}</li>" for line in lines)
                   + "</ul>" for tier, lines in tiers.items())


def report_header(report: Report) -> list[tuple[str, str]]:
    """The header's facts: what was analyzed, on what, at which precision, how predicted."""
    net, hw = report.network, report.hardware
    pairs = [("model", net.name), ("device", f"{hw.name} ({hw.product}, {hw.origin})"),
             ("step", step_text(net)), ("precision", precision_text(net)),
             ("roof", f"ridge {report.ridge:.1f} FLOP/B = dense peak "
                      f"{report.peak_flops_per_s / 1e12:g} {rate_unit(report.dtype)} "
                      f"({report.dtype}) / "
                      f"{report.bandwidth_bytes_per_s / 1e9:g} GB/s"),
             ("prediction", basis_sentence(hw).removeprefix("predicted: "))]
    tf32 = tf32_text(report)
    if tf32:
        pairs.insert(4, ("tf32", tf32))
    if report.quantization:
        pairs.append(("quantization", quantization_line(True, [hw])))
    if report.tensor_parallel:
        pairs.insert(2, ("tensor parallelism", header_line(report.tensor_parallel)))
    if report.pipeline_parallel:
        pairs.insert(2, ("pipeline parallelism", pipeline_header(report.pipeline_parallel)))
    if report.data_parallel:
        pairs.insert(2, ("data parallelism", dp_header(report.data_parallel)))
    return pairs


def report_article(report: Report, view: View, prefix: str, level: int = 1) -> str:
    """One report: header, summary, chart, table, time notes, scaling, advice, sources; its
    title an ``<h{level}>``, its sections one level below."""
    gemms, shown_ops = shown_results(report, view)
    # each row built once: the chart, the table and the left-out note read them all (an
    # --expand of a deep model's copies: thousands each)
    rows, ops = list(gemms), list(shown_ops)
    points = report_points(report, rows, ops, prefix)
    left_out = [r.op.kind for r in ops if not r.op.flops]
    notes = [f"roof: {ROOF_TEXT}; predicted: "
             + basis_sentence(report.hardware).removeprefix("predicted: "),
             *(["ops predicted: " + op_basis_text(report)] if report.ops else []),
             *residency_lines(report), *kernel_notes(report)]
    scaling = scaling_lines(report.scaling) if report.scaling else []
    title = f"{report.network.name} on {report.hardware.name}{shard_words(report)}"

    def head(text: str, depth: int = 1) -> str:
        return f"<h{level + depth}>{escape(text)}</h{level + depth}>"

    return (f'<article aria-label="{escape(title)}">{head(title, 0)}'
            f"{facts(report_header(report))}{head('Summary')}{_summary(report, view)}"
            + (head("Roofline") + _chart(report, points, left_out) if points else "")
            + head("GEMMs and ops") + _rows_table(report, rows, ops, prefix)
            + paragraphs(notes, "muted")
            + (head("Scaling") + f"<pre>{escape(chr(10).join(scaling))}</pre>" if scaling else "")
            + head("Warnings and advice") + _advice(report, gemms, level + 2)
            + head("Sources") + hardware_sources(report.hardware) + "</article>")


def report_page(reports: Sequence[Report], view: View | None = None,
                command: str | None = None) -> str:
    """analyze ``--format html``: one page, a section per report (one per ``--hw``)."""
    view = view or View()
    names = ", ".join(dict.fromkeys(r.hardware.name + shard_words(r) for r in reports))
    title = f"{reports[0].network.name} on {names}: roofline report"
    if len(reports) == 1:
        body = report_article(reports[0], view, "r0")
    else:  # a page title over one section per device
        body = f"<h1>{escape(title)}</h1>" + "".join(
            report_article(r, view, f"r{i}", level=2) for i, r in enumerate(reports))
    return document(title, block(body + provenance(command)))


def report_fragment(report: Report, view: View | None = None) -> str:
    """The same block for Jupyter (``Report._repr_html_``): its own stylesheet and script, ids
    unique in the notebook."""
    view = view or View()
    prefix = "rl" + secrets.token_hex(4)
    return fragment(report_article(report, view, prefix, level=2))


def fragment(body: str) -> str:
    return (f"<div><style>{asset('page.css')}</style>{block(body, 'div')}"
            f"<script>{asset('page.js')}</script></div>")


# --------------------------------------------------------------------------------- provenance

def _link(title: str, url: str | None) -> str:
    if url and url.lower().startswith(("https://", "http://")):
        return f'<a href="{escape(url)}" rel="noreferrer">{escape(title)}</a>'
    return escape(title) + (f" (<code>{escape(url)}</code>)" if url else "")


def _peaks_text(peaks: dict[str, float]) -> str:
    """``fp16 312, bf16 312 TFLOP/s, int8 624 TOPS``: each run of float or integer dtypes
    followed by its unit (``units.rate_unit``)."""
    parts = [f"{d} {v:g}" for d, v in peaks.items()]
    units = [rate_unit(d) for d in peaks]
    return ", ".join(part + (f" {unit}" if i + 1 == len(units) or units[i + 1] != unit else "")
                     for i, (part, unit) in enumerate(zip(parts, units)))


def _figure_values(hw: HardwareSpec) -> dict[str, str]:
    """What the figures a report uses are, in words."""
    values = {"peak_tflops": _peaks_text(hw.peak_tflops) + " (dense)",
              "bandwidth_gbs": f"{hw.bandwidth_gbs:g} GB/s",
              "alignment": ", ".join(f"{d}: {a.multiple}" + (
                  f" ({a.preferred} best)" if a.preferred != a.multiple else "")
                  for d, a in hw.alignment.items())}
    if hw.gpu:
        values["gpu"] = f"{hw.gpu.sms} SMs, {hw.gpu.boost_clock_ghz:g} GHz boost"
    if hw.cpu:
        c = hw.cpu
        values["cpu"] = (f"{c.sockets} x {c.cores_per_socket} cores, {c.simd_bits}-bit SIMD, "
                         f"{c.fma_units} FMA units")
    if hw.host_link:
        values["host_link"] = f"{hw.host_link.label}, {hw.host_link.bandwidth_gbs:g} GB/s"
    return values


def hardware_sources(hw: HardwareSpec) -> str:
    """Each figure of the entry, its value and the sources that cover it, then the notes."""
    values = _figure_values(hw)
    covered: dict[str, list[str]] = {}
    for source in hw.sources:
        for key in source.covers:
            covered.setdefault(key, []).append(_link(source.title, source.url) + (
                f" (<code>{escape(source.command)}</code>)" if source.command else ""))
    entry = hw.to_dict()  # a figure a report does not put in words: as ``hw show`` shows it
    values |= {k: flat(entry[k]) for k in covered if k not in values and k in entry}
    keys = [k for k in values if k in covered] + [k for k in covered if k not in values]
    rows = "".join(f"<tr><td class=t>{escape(key)}</td><td class=t>{escape(values.get(key, ''))}"
                   f"</td><td class=t>{'; '.join(covered[key])}</td></tr>" for key in keys)
    where = (" bundled with roofline" if hw.location == "bundled" else
             f" from <code>{escape(hw.location)}</code>" if hw.location else "")
    return (f"<p>Entry <b>{escape(hw.name)}</b> ({escape(hw.origin)}){where}.</p>"
            '<div class="scroll"><table class="wrap"><thead><tr><th scope="col" class=t>figure</th>'
            '<th scope="col" class=t>value</th><th scope="col" class=t>source</th></tr>'
            f"</thead><tbody>{rows}</tbody></table></div>"
            + (f'<p class="muted">{escape(hw.notes.strip())}</p>' if hw.notes.strip() else ""))


def provenance(command: str | None) -> str:
    """The tool's version and the command that made the page."""
    made = f"<p>Made by roofline {escape(__version__)}"
    made += (f" with <code>{escape(command)}</code>.</p>" if command else
             " (from the library).</p>")
    return f'<footer><h2>Provenance</h2>{made}</footer>'


# -------------------------------------------------------------------------------------- probe

def probe_page(result, command: str | None = None) -> str:
    """probe ``--format html``: what this machine delivered beside its theoretical figures (the
    probe's table as text), what was not measured and why, and how it was made."""
    from ..probe import probe_table

    title = f"roofline probe: {result.cpu.brand}"
    gpus = ", ".join(g["name"] for g in result.gpus) or "none found"
    pairs = [("CPU", result.cpu.brand), ("GPUs", gpus), ("preset", result.preset),
             ("hwdb match", result.cpu_match or "none")]
    body = (f"<h1>{escape(title)}</h1>{facts(pairs)}<h2>Measured vs theoretical</h2>"
            f"<pre>{escape(probe_table(result))}</pre>{provenance(command)}")
    return document(title, block(body))
