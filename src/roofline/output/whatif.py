"""``compare``'s results as table, JSON, CSV and Markdown (display only), and the note under
``gemm``'s table. The parts they share with sweep's and the HTML pages' live beside it: the
lines above the tables (``whatif_header``), their cells (``whatif_cells``), the verdict
(``whatif_verdict``) and why each GEMM gains or loses (``whatif_why``); ``sweep``'s results are
``whatif_sweep``'s, its transitions ``whatif_transitions``'; the HTML pages are
``output.html.whatif``'s."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..analysis.whatif_limits import check_listed_comparison
from ..model.repeats import repeated_count
from ..units import seconds, times
from . import generations
from .csv_rows import csv_line, names_cells
from .json import Bounded, json_chunks
from .report import LAYER_COLUMN, PASS_SHORT
from .serving_pp import device_lines
from .serving_tp import device_comm_lines
from .table import Fit, aligned, markdown, markdown_text
from .whatif_cells import _split, fits_cell, memory_cell, predicted_cell, speedup_text
from .whatif_header import _compare_header, compare_warnings, dtype_note
from .whatif_verdict import verdict_text
from .whatif_why import _why_lines, change_text, slow_kernel_lines

if TYPE_CHECKING:
    from ..analysis.whatif_comparison import Comparison


#: What ``roofline gemm`` prints under its table: how it reads a bare shape
#: (``analysis.whatif.gemm_network``).
GEMM_NOTE = ("M is read as the batch: the shape is the forward GEMM of a linear layer with K "
             "inputs and N outputs\n(C(M, N) = A(M, K) . B(K, N)), so batch advice is about M.")


# ------------------------------------------------------------------------------------- compare

def comparison_dict(c: Comparison) -> dict[str, Any]:
    """The compare JSON contract: ``Comparison.to_dict``'s numbers with the sentences (every
    GEMM listed: at most ``whatif_limits.MAX_LISTED``, ``check_listed_comparison``), each
    GEMM a dict of its own; ``comparison_json`` writes the same as it is made."""
    check_listed_comparison(c, "json")
    return _with_sentences(c, [own | rest for own, rest in _gemm_objects(c, shared=False)])


def comparison_json(c: Comparison) -> Iterator[str]:
    """``to_json(comparison_dict(c)) + "\\n"`` in pieces made as they are written
    (``json.json_chunks``): every GEMM, a repeat's copies included, read beside its stored
    results, its object's tail made once per distinct results and never held for the whole
    step. Refused before anything is made past the cap (``check_listed_comparison``)."""
    check_listed_comparison(c, "json")
    return json_chunks(_with_sentences(c, _gemm_objects(c)))


def _with_sentences(c: Comparison, gemms: Any) -> dict[str, Any]:
    """``Comparison.to_dict`` listing ``gemms``, with each device's dtype note, the verdict and
    the warnings."""
    data = c.to_dict(gemms)
    for device, report in zip(data["devices"], c.reports):
        device["dtype_note"] = dtype_note(c, report)
    data["verdict"] = verdict_text(c)
    data["warnings"] = list(compare_warnings(c))
    return data


def _gemm_objects(c: Comparison, shared: bool = True) -> Iterator[tuple[dict[str, Any],
                                                                       dict[str, Any]]]:
    """Each GEMM's JSON object as (its name and layer, the rest: ``Comparison.gemm_fields``
    and why it gains or loses on each device but the baseline, ``why``), in ``listed`` order;
    ``shared``: the rest made once per distinct stored results and shared by the copies that
    read them (``json.Bounded``), else made for each."""
    baseline = c.baseline.hardware.name
    others = c.reports[1:]
    rests = Bounded()
    for name, layer, results in c.listed():
        key = tuple(map(id, results))
        rest = rests.get(key) if shared else None
        if rest is None:
            rest = c.gemm_fields(results) | {"why": {
                r.hardware.name: change_text(c.result_change(results[0], x, r), baseline)
                for r, x in zip(others, results[1:])}}
            if shared:
                rests.keep(key, rest)
        yield {"name": name, "layer": layer}, rest


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


def _gemm_rows(c: Comparison) -> list[list[str]]:
    """A row per GEMM, a repeated block's first copy only (the totals count every copy)."""
    short = [r.hardware.name for r in c.reports]
    rows = [["GEMM", "layer", "pass", "M", "N", "K", *short]]
    for results in c.first_copies():
        base = results[0]
        g = base.gemm
        cells = []
        for r, other in zip(c.reports, results):
            cell = f"{seconds(other.time_s)} {other.bound[0]}"
            if r is not c.baseline:
                cell += f" {times(base.time_s / other.time_s)}"
            cells.append(cell)
        rows.append([g.name, g.layer, PASS_SHORT[g.pass_], str(g.m), str(g.n),
                     str(g.k), *cells])
    return rows


def _hidden_note(c: Comparison) -> list[str]:
    """Says how many rows the GEMM table leaves out as repeated copies, if any (counted run by
    run)."""
    hidden = repeated_count(c.baseline.results, lambda r: r.gemm.copy)
    return [f"({hidden} rows of repeated layer copies not shown: each repeats its first copy's; "
            f"the step times count every copy)"] if hidden else []


def comparison_table(c: Comparison, width: int | None = None) -> str:
    """Devices (step time, speedup), then per GEMM ``time bound speedup`` on each device
    (m / c: memory- or compute-bound), why, and the verdict; the GEMM table's layer names cut
    to fit ``width`` characters where it is given (``report.View.width``)."""
    fit = None if width is None else Fit(width, LAYER_COLUMN)
    comm = device_comm_lines(c.reports) + device_lines(c.reports)
    out = [*_compare_header(c), "", *_generation_table(c),
           *aligned(*_split(_device_rows(c)), {0, 1}), *comm, "",
           *aligned(*_split(_gemm_rows(c)), {0, 1, 2}, fit),
           "(per device: time, m/c = memory/compute-bound, speedup over the baseline)",
           *_hidden_note(c), "",
           *_why_lines(c), *slow_kernel_lines(c), "", f"verdict: {verdict_text(c)}"]
    return "\n".join(out) + "\n"


def comparison_markdown(c: Comparison) -> str:
    """``comparison_table`` as Markdown: its tables as Markdown's, its sentences escaped
    (``table.markdown_text``), the why nested as in the text and the verdict in bold."""
    comm = device_comm_lines(c.reports) + device_lines(c.reports)
    out = ["  \n".join(map(markdown_text, _compare_header(c))), "",
           *_generation_table(c, markdown_rows=True),
           *markdown(*_split(_device_rows(c)), {0, 1}), "",
           *(["  \n".join(map(markdown_text, comm)), ""] if comm else []),
           *markdown(*_split(_gemm_rows(c)), {0, 1, 2}), "",
           "(per device: time, m/c = memory/compute-bound, speedup over the baseline)",
           *map(markdown_text, _hidden_note(c)), "",
           *(f"{'  ' if line.startswith(' ') else ''}- {markdown_text(line.strip())}"  # nested
             for line in (*_why_lines(c), *slow_kernel_lines(c))), "",
           f"**{markdown_text(verdict_text(c))}**"]
    return "\n".join(out) + "\n"


def comparison_csv(c: Comparison) -> str:
    """``comparison_csv_chunks``'s text whole."""
    return "".join(comparison_csv_chunks(c))


def comparison_csv_chunks(c: Comparison) -> Iterator[str]:
    """One row per (GEMM, device): raw seconds, speedup over the baseline, bound, why; then the
    GEMM's shape and its predicted time (the JSON's ``gemms`` fields; after ``why`` so that the
    first nine columns keep their places); then, of generations, the device's whole
    generation (``generations.CSV_FIELDS``); last, served over several GPUs (``--tp``), ``tp``:
    each row is one GPU's shard, and over a pipeline (``--pp``) ``pp``. In pieces made as they
    are written (a GEMM's rows on every device one piece), refused before anything is made
    past the cap (``check_listed_comparison``)."""
    check_listed_comparison(c, "csv")
    return _csv_chunks(c)


def _csv_chunks(c: Comparison) -> Iterator[str]:
    served, piped = c.tp > 1, c.pp > 1
    yield csv_line(["name", "layer", "pass", "hardware", "dtype", "time_s", "speedup", "bound",
                    "why", "m", "n", "k", "batch_count", "predicted_time_s",
                    *generations.csv_fields(c.generating), *(["tp"] if served else []),
                    *(["pp"] if piped else [])])
    baseline = c.baseline.hardware.name
    # per device, what ends each row: its generation's figures, the tp and the pp
    tails = [[*generations.csv_values(r), *([c.tp] if served else []),
              *([c.pp] if piped else [])] for r in c.reports]
    # a GEMM's rows after its name and layer, made once per distinct stored results: a
    # repeat's copies differ by their names only
    rests: Bounded = Bounded()
    for name, layer, results in c.listed():
        key = tuple(map(id, results))
        lines = rests.get(key)
        if lines is None:
            base = results[0]
            gemm = base.gemm
            lines = rests.keep(key, [csv_line([
                gemm.pass_, r.hardware.name, r.dtype, other.time_s,
                base.time_s / other.time_s, other.bound,
                "" if r is c.baseline else change_text(c.result_change(base, other, r),
                                                       baseline),
                gemm.m, gemm.n, gemm.k, gemm.batch_count, other.predicted_time_s, *tail])
                for r, other, tail in zip(c.reports, results, tails)])
        names = names_cells(name, layer)
        yield "".join(f"{names},{line}" for line in lines)


def comparison_html(c: Comparison, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.comparison_page``)."""
    from .html import comparison_page

    return comparison_page(c, command)


COMPARE_FORMATS = {"table": comparison_table, "markdown": comparison_markdown,
                   "csv": comparison_csv, "json": lambda c: "".join(comparison_json(c)),
                   "html": comparison_html}
#: The formats that list every GEMM, in pieces made as they are written (the CLI's).
COMPARE_CHUNKS = {"json": comparison_json, "csv": comparison_csv_chunks}
