"""``sweep``'s results as table, JSON, CSV and Markdown (display only): a row per point (step
time, throughput, memory, memory-bound share and GEMMs; of generations, the whole generation),
then the transitions; its HTML page is ``output.html.whatif``'s."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..analysis.predict import predicts
from ..analysis.report import gemm_of
from ..analysis.whatif_limits import check_listed_sweep
from ..analysis.whatif_sweep import Sweep
from ..model.item_numbers import run_values, same_runs
from ..model.repeats import Numbered, named
from ..units import seconds, si
from . import generations
from .csv_rows import csv_line, names_cells
from .json import Bounded, Members, json_chunks
from .table import aligned, markdown, markdown_text
from .whatif_cells import (
    _split,
    memory_bound_gemms,
    pp_comm_cell,
    sweep_memory_cell,
    tp_comm_cell,
)
from .whatif_header import past_context_note, sweep_header, sweep_warnings
from .whatif_transitions import transition_lines

if TYPE_CHECKING:
    from ..analysis.report import Report

V = TypeVar("V")


def sweep_dict(s: Sweep) -> dict[str, Any]:
    """The sweep JSON contract: ``Sweep.to_dict``'s numbers with the model's warnings (every
    GEMM at every point listed: at most ``whatif_limits.MAX_SWEEP_LISTED`` rows,
    ``check_listed_sweep``); ``sweep_json`` writes the same as it is made."""
    check_listed_sweep(s, "json")
    return _with_warnings(s, s.to_dict())


def sweep_json(s: Sweep) -> Iterator[str]:
    """``to_json(sweep_dict(s)) + "\\n"`` in pieces made as they are written
    (``json.json_chunks``): each point's GEMMs, a repeat's copies included, read beside their
    stored results, a GEMM's tail made once per stored result, and the transitions by name
    (``json.Members``), none held for the whole sweep. Refused before anything is made past
    the cap (``check_listed_sweep``)."""
    check_listed_sweep(s, "json")
    return json_chunks(_with_warnings(s, s.to_dict(_gemm_objects, Members)))


def _with_warnings(s: Sweep, data: dict[str, Any]) -> dict[str, Any]:
    return data | {"warnings": [*past_context_note(s), *sweep_warnings(s)]}


def _gemm_objects(report: Report) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """A point's GEMMs' JSON objects as (the name, ``Sweep.gemm_fields``), the latter made
    once per stored result (a repeat's copies share it) in a bounded cache
    (``json.Bounded``)."""
    tails = Bounded()
    for name, _, _, result in named(report.results, gemm_of):
        tail = tails.get(id(result))
        if tail is None:
            tail = tails.keep(id(result), Sweep.gemm_fields(result))
        yield {"name": name}, tail


def _sweep_rows(s: Sweep) -> list[list[str]]:
    if s.generating:
        return _generation_sweep_rows(s)
    with_seq, served, piped = len(s.seqs) > 1, s.tp > 1, s.pp > 1
    rows = [["batch", *(["seq"] if with_seq else []), "step time", f"{s.unit}/s", "predicted",
             f"pred. {s.unit}/s", *(["tp comm"] if served else []),
             *(["pp comm"] if piped else []), "memory", "memory-bound time",
             "memory-bound GEMMs"]]
    for r in s.reports:
        t = r.totals
        rows.append([str(r.network.batch), *([str(r.network.seq)] if with_seq else []),
                     seconds(t["time_s"]), si(s.rate(r), ""),
                     seconds(t["predicted_time_s"]), si(s.rate(r, True), ""),
                     *([tp_comm_cell(r)] if served else []),
                     *([pp_comm_cell(r)] if piped else []),
                     sweep_memory_cell(r), f"{t['memory_bound_time_fraction']:.0%}",
                     memory_bound_gemms(r)])
    return rows


def _generation_sweep_rows(s: Sweep) -> list[list[str]]:
    """A row per batch's whole generation (``generations.cells``; predicted where the entry
    predicts beyond its roofline), served over several GPUs its communication, its memory at
    its peak and the last step's memory-bound share."""
    predicted, served, piped = predicts(s.hardware), s.tp > 1, s.pp > 1
    rows = [["batch", *generations.columns(predicted), *(["tp comm"] if served else []),
             *(["pp comm"] if piped else []), "memory", "memory-bound time"]]
    for r in s.reports:
        assert r.generation is not None
        rows.append([str(r.network.batch), *generations.cells(r.generation, predicted),
                     *([tp_comm_cell(r)] if served else []),
                     *([pp_comm_cell(r)] if piped else []),
                     sweep_memory_cell(r), f"{r.totals['memory_bound_time_fraction']:.0%}"])
    return rows


def _left(s: Sweep) -> set[int]:
    """The left-aligned columns of the sweep table (memory, memory-bound GEMMs)."""
    shift = (s.tp > 1) + (s.pp > 1)  # the tp comm and pp comm columns
    if s.generating:
        return {len(generations.columns(predicts(s.hardware))) + 1 + shift}
    shift += 1 if len(s.seqs) > 1 else 0
    return {5 + shift, 7 + shift}


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
    """``sweep_csv_chunks``'s text whole."""
    return "".join(sweep_csv_chunks(s))


def sweep_csv_chunks(s: Sweep) -> Iterator[str]:
    """One row per (batch, seq, GEMM), raw numbers; the step's totals repeated on each row;
    ``seq`` and ``compute_bound_from_seq`` at the end (empty without a sequence); then, of
    generations, the point's whole generation (``generations.CSV_FIELDS``), its step the
    last decode step; of a captured module, ``compute_bound_from_unknown``: why its
    ``compute_bound_from`` is not known (``Sweep.unknown_transitions``), else empty; served
    over several GPUs (``--tp``), last, ``tp``: each row is one GPU's shard (its step times
    holding the group's communication), and over a pipeline (``--pp``) ``pp`` (its
    ``samples_per_s`` the pipeline's with its batches in flight). In pieces made as they are
    written (a row each), refused before anything is made past the cap
    (``check_listed_sweep``)."""
    check_listed_sweep(s, "csv")
    return _csv_chunks(s)


def _csv_chunks(s: Sweep) -> Iterator[str]:
    served, piped = s.tp > 1, s.pp > 1
    yield csv_line(["batch", "name", "intensity", "bound", "time_s", "step_time_s",
                    "samples_per_s", "memory_bound_time_fraction", "compute_bound_from",
                    "memory_bytes", "fits", "seq", "compute_bound_from_seq",
                    "predicted_time_s", "predicted_step_time_s",
                    *generations.csv_fields(s.generating),
                    *(["compute_bound_from_unknown"] if s.captured else []),
                    *(["tp"] if served else []), *(["pp"] if piped else [])])
    unknown = s.unknown_transitions
    # a row's batch crossings are at its own seq (a seq sweep's too, not only a grid's), read
    # at the first point of that seq; else at the first point
    firsts: dict[int, Report] = s.first_at_each_seq() if len(s.seqs) > 1 else {}
    captured, last = s.captured, [*([s.tp] if served else []), *([s.pp] if piped else [])]
    for r in s.reports:
        t = r.totals
        crossings = _crossings(s, r, firsts.get(r.network.seq) if r.network.seq else None)
        # what each of the point's rows repeats: its step's figures, memory, seq, generation
        step = [t["time_s"], s.rate(r, unit="samples"), t["memory_bound_time_fraction"]]
        held = [r.memory.total_bytes if r.memory else "",
                "" if r.memory is None or r.memory.fits is None else r.memory.fits,
                "" if r.network.seq is None else r.network.seq]
        tail = [t["predicted_time_s"], *generations.csv_values(r)]
        # a row after its name, written once per stored result and crossings: a repeat's
        # copies differ by their names only
        rests = Bounded()
        head = ("" if r.network.batch is None else str(r.network.batch)) + ","
        for name, _, _, x in named(r.results, gemm_of):  # none built (a repeat's copies)
            batch_from, seq_from = crossings(name)
            why = unknown.get(name, "") if captured else None
            key = (id(x), batch_from, seq_from, why)
            line = rests.get(key)
            if line is None:
                line = rests.keep(key, csv_line([
                    x.gemm.intensity, x.bound, x.time_s, *step,
                    "" if batch_from is None else batch_from, *held,
                    "" if seq_from is None else seq_from, x.predicted_time_s, *tail,
                    *([why] if captured else []), *last]))
            yield f"{head}{names_cells(name)},{line}"


Crossings = tuple[int | None, int | None]


def _crossings(s: Sweep, r: Report, at: Report | None) -> Callable[[str], Crossings]:
    """The batch at which each of point ``r``'s GEMMs turns compute-bound, read at point
    ``at`` (its seq's first; default the sweep's first), and the seq at which it does (read
    at the first point), as a function of the GEMM's name called for each row in numbering
    order. Where the three points' GEMMs are laid out in the same runs (a model file's), a
    row's are its run's template's, read in order without a name (``run_values``); else by
    name (``_InStep``)."""
    first = s.reports[0]
    ref = at or first
    batch_rows = s.transition_rows(ref)
    seq_rows = s.seq_transition_rows()
    searched = s.seq_transition_items() is not None
    if (batch_rows is not None and (seq_rows is not None or not searched)
            and same_runs([r.results, ref.results, first.results])):
        assert isinstance(ref.results, Numbered) and isinstance(first.results, Numbered)
        seqs: Iterator[int | None] = (run_values(first.results, seq_rows)
                                      if seq_rows is not None else repeat(None))
        pairs = zip(run_values(ref.results, batch_rows), seqs)
        return lambda _name: next(pairs)
    transitions = _InStep(partial(s.transition_items, at))
    seq_transitions = _InStep(lambda: s.seq_transition_items() or iter(()))
    return lambda name: (transitions.get(name), seq_transitions.get(name))


class _InStep(Generic[V]):
    """Values by GEMM name (``Sweep.transition_items``) read beside a point's rows: where the
    rows come in the order the values do (the steps laid out alike: a model file's), each row
    takes the next value, nothing held; from the first row out of step on, the values are
    looked up by name in a dict made then (a captured module's points may run other GEMMs)."""

    __slots__ = ("_make", "_pairs", "_by_name")

    def __init__(self, make: Callable[[], Iterator[tuple[str, V]]]) -> None:
        self._make = make
        self._pairs: Iterator[tuple[str, V]] | None = None
        self._by_name: dict[str, V] | None = None

    def get(self, name: str) -> V | None:
        if self._by_name is None:
            if self._pairs is None:
                self._pairs = self._make()
            pair = next(self._pairs, None)
            if pair is not None and pair[0] == name:
                return pair[1]
            self._by_name = dict(self._make())
        return self._by_name.get(name)


def sweep_html(s: Sweep, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.sweep_page``)."""
    from .html import sweep_page

    return sweep_page(s, command)


SWEEP_FORMATS = {"table": sweep_table, "markdown": sweep_markdown, "csv": sweep_csv,
                 "json": lambda s: "".join(sweep_json(s)), "html": sweep_html}
#: The formats that list every GEMM at every point, in pieces made as they are written (the
#: CLI's).
SWEEP_CHUNKS = {"json": sweep_json, "csv": sweep_csv_chunks}
