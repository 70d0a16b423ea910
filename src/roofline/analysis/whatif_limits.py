"""The caps on compare's and sweep's work, each refused in one line before the work: the GEMMs
and ops of one step (``_check_rows``), a sweep's points (``MAX_SWEEP_GRID``, ``_check_grid``),
its analyses in all (``MAX_SWEEP_ITEMS``, ``_check_items``) and its captures of a PyTorch
module (``MAX_SWEEP_CAPTURES``, ``_check_captures``)."""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError, RooflineError
from ..model.network import Network
from ..model.repeats import MAX_LISTED
from .report import Report

#: The most points (batches x seqs) one sweep analyzes: each is a whole analysis, about 1 ms
#: for a small MLP on a 2-core machine (5,000 listed batches: 4 s), so this bounds a sweep to
#: seconds rather than the minutes a longer list (or a large grid) would take.
MAX_SWEEP_GRID = 10_000
#: The most GEMMs and ops (points x those of one step) one sweep analyzes: about 0.006 ms each
#: on a 2-core machine (290 points of Llama-2-7B's 839 a decode step, 243,310 analyses: 1.4 s;
#: it read 0.04 ms and capped that sweep at 297 points, a generation's at 149), so about 6 s.
MAX_SWEEP_ITEMS = 1_000_000
#: The most batches a sweep of a captured module captures it at: each capture runs the module
#: (forward, and backward in training) on the meta device, tens of milliseconds for a small
#: MLP and seconds to tens of seconds for a large model, so this bounds such a sweep to
#: minutes; 1..2**31 as a range is 32 batches.
MAX_SWEEP_CAPTURES = 64
#: How the error messages say what a range gives.
RANGE_TEXT = "a range a..b (a, the powers of two between, b)"


def _check_rows(network: Network, command: str) -> None:
    """compare and sweep read every GEMM and op of the step (per device, per point), a
    repeat's copies included: at most ``MAX_LISTED`` of them, else RooflineError, before any
    work (the step's own count, from its runs; the batch and seq a sweep has yet to set do not
    change it)."""
    probe = replace(network, batch=network.batch or 1, seq=network.seq or 1)
    try:
        gemms, ops = probe.expand()
    except RooflineError:
        return  # what is missing or wrong is the command's own one-line error
    rows = len(gemms) + len(ops)
    if rows > MAX_LISTED:
        raise RooflineError(f"{network.source}: the step has {rows:,} GEMMs and ops; {command} "
                            f"reads each one and is capped at {MAX_LISTED:,} (analyze's table "
                            f"shows a repeated layer once)")


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
    steps each, ``first`` one of them), else InputError before the other points."""
    items = (len(first.results) + len(first.ops)) * steps
    if items * points > MAX_SWEEP_ITEMS:
        each = (f"{items:,} GEMMs and ops each" if steps == 1 else
                f"{steps} steps each (a generation's prefill and decode steps), "
                f"{items:,} GEMMs and ops")
        raise InputError("batches" if len(batch_values) > 1 else "seqs", "",
                         f"{points:,} points of {each} are "
                         f"{items * points:,} analyses, more than the {MAX_SWEEP_ITEMS:,} a "
                         f"sweep does (about {MAX_SWEEP_ITEMS // items:,} points of this "
                         f"model); give fewer values, or {RANGE_TEXT}")
