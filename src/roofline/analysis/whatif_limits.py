"""The caps on compare's and sweep's work, each refused in one line before the work: a sweep's
points (``MAX_SWEEP_GRID``, ``_check_grid``), its analyses in all (``MAX_SWEEP_ITEMS``,
``_check_items``) and its captures of a PyTorch module (``MAX_SWEEP_CAPTURES``,
``_check_captures``); and on the formats that list every GEMM one by one, a repeat's copies
included, each refused before anything is written: compare's JSON and CSV (``MAX_LISTED``
rows of a device's GEMM, ``check_listed_comparison``) and sweep's (``MAX_SWEEP_LISTED`` rows
of a point's GEMM, ``check_listed_sweep``). The text, Markdown and HTML formats show a
repeated layer once and name a repeat's copies as runs (``model.item_numbers``): they cost
what the distinct layers cost and have no such cap (0.9.0; before, compare and sweep refused a
step of more than ``MAX_LISTED`` GEMMs and ops whatever the format, and a sweep's cap counted
every copy). Both listings are written as they are made, in memory that does not grow with
their rows (0.9.0, ``output.json.json_chunks``), so these two caps bound their time and size
only: with them lifted, 10**5 blocks wrote compare's JSON on three devices (848 MiB) in 16 s
and sweep's over batch 1..64 (1.2 GiB) in 43 s on a 2-core machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError, RooflineError, option
from ..model.repeats import MAX_LISTED, items_per_run
from .report import Report

if TYPE_CHECKING:
    from .whatif_comparison import Comparison
    from .whatif_sweep import Sweep

#: The most points (batches x seqs) one sweep analyzes: each is a whole analysis, about 1 ms
#: for a small MLP on a 2-core machine (5,000 listed batches: 4 s), so this bounds a sweep to
#: seconds rather than the minutes a longer list (or a large grid) would take.
MAX_SWEEP_GRID = 10_000
#: The most GEMMs and ops (points x those of one step) one sweep analyzes: about 0.006 ms each
#: on a 2-core machine (290 points of Llama-2-7B's 839 a decode step, 243,310 analyses: 1.4 s;
#: it read 0.04 ms and capped that sweep at 297 points, a generation's at 149), so about 6 s.
#: A repeat's copies are counted once (0.9.0): a step is analyzed run by run, its copies
#: sharing their results (``model.repeats.items_per_run``).
MAX_SWEEP_ITEMS = 1_000_000
#: The most rows of a point's GEMM (points x the GEMMs of one step, every copy) sweep's JSON
#: and CSV list (0.9.0): what MAX_SWEEP_ITEMS let them list before (a step's GEMMs and ops
#: at every point), so that every sweep those formats wrote they still write; 10**4 blocks of
#: 12 GEMMs over 7 batches are 840,021 CSV rows (86 MB), written in about 4 s on a 2-core
#: machine.
MAX_SWEEP_LISTED = 1_000_000
#: The most batches a sweep of a captured module captures it at: each capture runs the module
#: (forward, and backward in training) on the meta device, tens of milliseconds for a small
#: MLP and seconds to tens of seconds for a large model, so this bounds such a sweep to
#: minutes; 1..2**31 as a range is 32 batches.
MAX_SWEEP_CAPTURES = 64
#: How the error messages say what a range gives.
RANGE_TEXT = "a range a..b (a, the powers of two between, b)"
#: What the refusals of a listing format say shows a repeat without listing its copies.
SHOWN_ONCE = "the table, Markdown and HTML show a repeated layer's GEMMs once"


def check_listed_comparison(c: Comparison, fmt: str) -> None:
    """compare's ``fmt`` (JSON, CSV) lists every GEMM, a repeat's copies included, on each
    device (a CSV row, a JSON entry of each figure): at most ``MAX_LISTED`` such rows, counted
    as analyze's listing formats count theirs over several devices, else RooflineError before
    anything is written."""
    rows = sum(len(r.results) for r in c.reports)
    if rows > MAX_LISTED:
        gemms, devices = len(c.baseline.results), len(c.reports)
        raise RooflineError(f"{c.baseline.network.source}: the step's {gemms:,} GEMMs on "
                            f"{devices} devices are {rows:,} rows; {option('format', fmt)} "
                            f"lists each one and is capped at {MAX_LISTED:,} rows "
                            f"({SHOWN_ONCE})")


def check_listed_sweep(s: Sweep, fmt: str) -> None:
    """sweep's ``fmt`` (JSON, CSV) lists every GEMM at every point, a repeat's copies
    included: at most ``MAX_SWEEP_LISTED`` such rows, else RooflineError before anything is
    written."""
    rows = sum(len(r.results) for r in s.reports)
    if rows > MAX_SWEEP_LISTED:
        first = s.reports[0]
        each = len(first.results)
        points = len(s.reports)
        raise RooflineError(f"{first.network.source}: {points:,} points of {each:,} GEMMs "
                            f"each are {rows:,} rows; {option('format', fmt)} lists every "
                            f"GEMM at every point and is capped at {MAX_SWEEP_LISTED:,} "
                            f"({SHOWN_ONCE}); give fewer values, or {RANGE_TEXT}")


def _check_grid(points: int, batch_values: tuple[int, ...], seq_values: tuple[int, ...]
                ) -> None:
    """At most ``MAX_SWEEP_GRID`` points, else InputError."""
    if points > MAX_SWEEP_GRID:
        shape = (f"{len(batch_values):,} batches x {len(seq_values):,} seqs" if seq_values
                 else f"{len(batch_values):,} batches")
        raise InputError("batches" if len(batch_values) > 1 else "seqs", "",
                         f"{points:,} points ({shape}) are more than the {MAX_SWEEP_GRID:,} a "
                         f"sweep analyzes (each point is a whole analysis); give fewer values, "
                         f"or {RANGE_TEXT}")


def _check_captures(batch_values: tuple[int, ...]) -> None:
    """At most ``MAX_SWEEP_CAPTURES`` batches of a captured module, else InputError before the
    first capture."""
    if len(batch_values) > MAX_SWEEP_CAPTURES:
        raise InputError("batches", "", f"{len(batch_values):,} batches are more than the "
                         f"{MAX_SWEEP_CAPTURES} a sweep of a captured module captures it at "
                         f"(each a run of the module, seconds for a large one); give fewer "
                         f"values, or {RANGE_TEXT}")


def _check_items(first: Report, points: int, steps: int, batch_values: tuple[int, ...]
                 ) -> None:
    """At most ``MAX_SWEEP_ITEMS`` GEMMs and ops analyzed in all (``points`` of ``steps``
    steps each, ``first`` one of them; a repeat's copies counted once,
    ``model.repeats.items_per_run``), else InputError before the other points."""
    items = (items_per_run(first.results) + items_per_run(first.ops)) * steps
    if items * points > MAX_SWEEP_ITEMS:
        once = (" (a repeated layer's copies counted once)"
                if items < (len(first.results) + len(first.ops)) * steps else "")
        each = (f"{items:,} GEMMs and ops each{once}" if steps == 1 else
                f"{steps} steps each (a generation's prefill and decode steps), "
                f"{items:,} GEMMs and ops{once}")
        raise InputError("batches" if len(batch_values) > 1 else "seqs", "",
                         f"{points:,} points of {each} are "
                         f"{items * points:,} analyses, more than the {MAX_SWEEP_ITEMS:,} a "
                         f"sweep does (about {MAX_SWEEP_ITEMS // items:,} points of this "
                         f"model); give fewer values, or {RANGE_TEXT}")
