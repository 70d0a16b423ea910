"""The x ranges a sweep's charts shade where its steps do not fit in the device's memory, and
what each is called: one rule for the PNG (``plot.sweep``) and the HTML page
(``output.html.whatif``), which drew none before 0.9.0 while the PNG and the table said which
batches do not fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis.report import Report


@dataclass(frozen=True)
class Band:
    """A shaded x range of a sweep chart, its label; ``darker``: past the model's context, the
    seqs that do not fit in memory either."""

    low: float
    high: float
    label: str
    darker: bool = False


def no_fit_span(xs: Sequence[int], limit: int) -> tuple[float, float] | None:
    """The x range a sweep chart shades as not fitting in memory: ``xs`` the swept batches (or
    seqs) in order, ``limit`` the largest that fits (0: none). From halfway between the
    largest that fits and the next integer, which does not (2.5 where batch 2 fits: the
    shading began at 2, on batch 2's own point, as if it did not fit), or from before the
    first point when none fits, to past the last; None when every swept value fits."""
    if not xs or xs[-1] <= limit:
        return None
    return max(limit + 0.5, xs[0] / 1.5), xs[-1] * 1.5


def no_fit_bands(reports: Sequence[Report], xs: Sequence[int], axis: str) -> list[Band]:
    """The bands a sweep over ``xs`` (its ``axis``, batch or seq, one report each) shades: the
    values that do not fit in memory, or past the model's context (the memory limit lying
    beyond it), and then, darker, from just before the first swept seq that does not fit in
    memory either; none where every step fits."""
    from .whatif_header import no_fit_label

    memory = reports[0].memory if reports else None
    limit = None if memory is None else memory.max_seq if axis == "seq" else memory.max_batch
    if limit is None or all(r.memory and r.memory.fits for r in reports):
        return []
    span = no_fit_span(xs, limit)
    if span is None:
        return []
    context = axis == "seq" and memory is not None and memory.seq_limit == "context"
    generation = reports[0].generation is not None  # memory at the generation's peak
    bands = [Band(*span, no_fit_label(limit, axis, context, generation))]
    if context:  # past the context some steps may not fit in memory either: said apart
        first = next((x for x, r in zip(xs, reports) if r.memory and not r.memory.fits), None)
        if first is not None:
            bands.append(Band(first / 1.15, xs[-1] * 1.5,
                              f"does not fit in memory either (from {axis} {first:,})", True))
    return bands
