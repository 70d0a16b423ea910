"""The cells compare's and sweep's tables share, text, Markdown and HTML alike: a device's
memory against its capacity, whether it fits, its predicted step and a speedup (compare); a
row's memory, its memory-bound GEMMs and, served over several GPUs, its communication
(sweep); and ``_split``, a table's rows as header and body."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.item_numbers import grouped
from ..units import seconds, si, times
from .report import compact_names

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.whatif_comparison import Comparison


def _split(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """``(header, body)`` of rows whose first row is the header."""
    return rows[0], rows[1:]


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


def sweep_memory_cell(r: Report) -> str:
    """A sweep row's memory: its total, marked where it does not fit (empty without a
    capacity model), in the text, Markdown and HTML tables alike."""
    memory = r.memory
    if memory is None:
        return ""
    text = si(memory.total_bytes, "B")
    return text + (": does not fit" if memory.fits is False else "")


def memory_bound_gemms(r: Report) -> str:
    """A sweep row's memory-bound GEMMs: ``all``, ``none`` or their names, compacted (their
    numbers as runs, ``model.item_numbers.grouped``: a repeat's copies are not named one by
    one)."""
    memory = grouped([r.results], lambda at: at[0].bound == "memory",
                     lambda x: x.gemm).get(True, [])
    if memory and len(memory) == len(r.results):
        return "all"
    return compact_names(memory, 6) or "none"


def pp_comm_cell(report: Report) -> str:
    """A sweep point's ``pp comm`` (``--pp``): its step's hand-offs between stages, or of a
    generation the whole generation's, predicted (``whatif_header.PP_COMM_TEXT``)."""
    return seconds(pp_comm_s(report))


def pp_comm_s(report: Report) -> float:
    """``pp_comm_cell``'s seconds."""
    pp = report.pipeline_parallel
    assert pp is not None, "a point served over a pipeline"
    whole = pp.generation_transfer(True)  # None for a single step
    return pp.step.predicted_transfer_s if whole is None else whole


def tp_comm_cell(report: Report) -> str:
    """A sweep point's ``tp comm`` (``--tp``): its step's exposed communication, or of a
    generation the whole generation's, predicted (``whatif_header.TP_COMM_TEXT``)."""
    tp = report.tensor_parallel
    assert tp is not None, "a point served over several GPUs"
    whole = tp.predicted_generation_s  # None for a single step
    return seconds(tp.step.predicted_s if whole is None else whole)
