"""What the charts show, as numbers: roofs in chart units, the GEMM and op points (coincident
ones grouped under one label), predicted and measured time points, the streamed step, the axis
ranges and the batch sweep's curves. Nothing here draws or imports matplotlib.

Chart units: arithmetic intensity in FLOP/byte, throughput in TFLOP/s (10^12 FLOP/s); a memory
slope of B GB/s is the line y = x * B / 1000.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import PlotError
from ..model.item_numbers import ItemNumbers, Names, same_runs
from ..model.repeats import LayerRun, Numbered, first_copies, named
from ..output.report import compact_names
from ..roof import ridge_point
from ..units import nice_above, nice_below

if TYPE_CHECKING:
    from ..analysis.report import GemmResult, OpResult, Report
    from ..model.gemm import Gemm


@dataclass(frozen=True)
class Roof:
    """One roofline in chart units: a compute ceiling over a memory slope."""

    peak_tflops: float
    bandwidth_gbs: float

    @property
    def ridge(self) -> float:
        """Where the slope meets the ceiling, in FLOP/B (``roofline.roof.ridge_point``)."""
        return ridge_point(self.peak_tflops * 1e12, self.bandwidth_gbs * 1e9)

    def slope_at(self, intensity: float) -> float:
        """TFLOP/s the memory slope allows at ``intensity`` FLOP/B."""
        return intensity * self.bandwidth_gbs / 1e3


def main_roof(report: Report) -> Roof:
    """The roof the report was analyzed against (measured figures for a measured entry)."""
    return Roof(report.peak_flops_per_s / 1e12, report.bandwidth_bytes_per_s / 1e9)


def datasheet_roof(report: Report) -> Roof | None:
    """For a measured entry, the theoretical roof stored beside it (``theoretical:``); else None.

    A missing theoretical peak or bandwidth falls back to the measured one.
    """
    spec, theory = report.hardware, report.hardware.theoretical
    if spec.origin != "measured" or theory is None:
        return None
    peak = theory.peak_tflops.get(report.dtype)
    if peak is None and theory.bandwidth_gbs is None:
        return None
    measured = main_roof(report)
    return Roof(peak or measured.peak_tflops, theory.bandwidth_gbs or measured.bandwidth_gbs)


def other_ceilings(report: Report) -> list[tuple[str, float]]:
    """The entry's other dtypes' peaks (TFLOP/s), dtypes with equal peaks grouped:
    ``[("fp64, fp32", 19.5), ("tf32", 156.0), ("int8", 624.0)]`` for an fp16 A100 report."""
    spec = report.hardware
    main = spec.peak_tflops[report.dtype]
    groups: dict[float, list[str]] = {}
    for dtype in spec.dtypes:
        if spec.peak_tflops[dtype] != main:
            groups.setdefault(spec.peak_tflops[dtype], []).append(dtype)
    return [(", ".join(names), peak) for peak, names in groups.items()]


def main_dtypes(report: Report) -> str:
    """The report's dtype, with the dtypes sharing its peak: ``"fp16 (= bf16)"``."""
    spec = report.hardware
    same = [d for d in spec.dtypes
            if d != report.dtype and spec.peak_tflops[d] == spec.peak_tflops[report.dtype]]
    return report.dtype + (f" (= {', '.join(same)})" if same else "")


def copies_label(names: list[str], copies: int, total: int = 0) -> str:
    """``MM1,MM5`` for the first copy's names, and ``x32`` when they stand for 32 copies of a
    repeated layer: one rule for a chart's points and a sweep's curves. ``copies`` 0: the names
    are of layers repeated unlike often (DeepSeek-V3's 3 dense blocks' and 58 sparse blocks'
    alike attention), which no one count says: ``(61 in all)``, the ``total`` they stand for."""
    if not copies:
        return compact_names(names) + f" ({total} in all)"
    return compact_names(names) + (f" x{copies}" if copies > 1 else "")


class _Placed(Protocol):
    """A GEMM or an op: what a point is made of."""

    @property
    def name(self) -> str: ...

    @property
    def intensity(self) -> float: ...

    @property
    def copy(self) -> int: ...


class _Row(Protocol):
    """A GEMM's or an op's result: where its point sits on the roof."""

    @property
    def attainable_flops_per_s(self) -> float: ...


_P = TypeVar("_P", bound=_Placed)
_R = TypeVar("_R", bound=_Row)


@dataclass
class Group:
    """Coincident rows drawn as one point: where, and the first copy's names it stands for."""

    x: float
    y: float
    names: list[str]
    copies: int  # each name's copies; 0: its layers' differ (``copies_label``)
    total: int = 0  # the rows it stands for

    @property
    def label(self) -> str:
        """``MM1,MM5``, and ``x32`` when the point stands for 32 copies of a repeated layer."""
        return copies_label(self.names, self.copies, self.total)


def _groups(rows: Sequence[_R], item_of: Callable[[_R], _P],
            name: Callable[[str, _P], str],
            keep: Callable[[_P], bool] = lambda item: True) -> list[Group]:
    """Rows at one (intensity, throughput) point grouped, sorted by intensity; a group is named
    by its rows of copy 0 (else its first row; ``name(row's own name, item)``) and counts the
    copies it stands for. A repeat's copies sit where its stored copy does, and layers alike
    share their stored rows, so each stored row is placed once and a run brings only its copy
    numbers (a range); the names are read beside the stored rows, nothing built per row."""
    keys: dict[int, tuple[float, float] | None] = {}  # a stored row's point (None: left out)

    def point(row: _R) -> tuple[float, float] | None:
        if id(row) not in keys:
            item = item_of(row)
            keys[id(row)] = (round(math.log10(item.intensity), 9), round(math.log10(
                row.attainable_flops_per_s / 1e12), 9)) if keep(item) else None
        return keys[id(row)]

    found: dict[tuple[float, float], tuple[float, float, list[Span]]] = {}
    for row, start, stop, layer in _placed(rows, item_of):
        k = point(row)
        if k is not None:
            at: tuple[float, float, list[Span]] = (
                item_of(row).intensity, row.attainable_flops_per_s / 1e12, [])
            found.setdefault(k, at)[2].append((layer, start, stop))
    names: dict[tuple[float, float], dict[str, None]] = {}  # of copy 0, in numbering order
    first: dict[tuple[float, float], str] = {}  # the lowest-numbered row's, whatever its copy
    for own, copy, row in _named(rows, item_of):
        k = point(row)
        if k is not None:
            label = name(own, item_of(row))
            first.setdefault(k, label)
            if not copy:
                names.setdefault(k, {})[label] = None
    groups = [Group(x, y, list(names.get(k) or [first[k]]), *_covered(spans))
              for k, (x, y, spans) in found.items()]
    return sorted(groups, key=lambda g: (g.x, g.y))


def _placed(rows: Sequence[_R], item_of: Callable[[_R], _P]
            ) -> Iterator[tuple[_R, int, int, str]]:
    """Each stored row with the copy numbers it stands for (``start`` to ``stop``) and the
    layer whose copies they number (``Numbered.placed``; a plain sequence's rows: one)."""
    if isinstance(rows, Numbered):
        yield from rows.placed()
        return
    for row in rows:
        copy = item_of(row).copy
        yield row, copy, copy + 1, ""


def _named(rows: Sequence[_R], item_of: Callable[[_R], _P]) -> Iterator[tuple[str, int, _R]]:
    """Each run's lowest-numbered copy's rows: their own names and copy numbers beside their
    stored rows, nothing built (a point's first row, in numbering order, is among them)."""
    if isinstance(rows, Numbered):
        return ((own, copy, row) for own, _, copy, row in rows.named(lowest=True))
    return ((item_of(row).name, item_of(row).copy, row) for row in rows)


def gemm_groups(report: Report) -> list[Group]:
    """One point per distinct (intensity FLOP/B, attainable TFLOP/s) of the report's GEMMs,
    coincident GEMMs sharing one label (repeated layers counted: ``MM1 x32``), sorted by
    intensity."""
    return _groups(report.results, lambda r: r.gemm, lambda own, g: own)


def op_groups(report: Report) -> list[Group]:
    """The same for the non-GEMM ops, labelled by kind; ops without FLOPs (a gather) have no
    place on a log-scale intensity axis and are left out."""
    return _groups(report.ops, lambda r: r.op, lambda own, o: o.kind, lambda o: bool(o.flops))


def time_points(report: Report, kind: str) -> list[tuple[float, float]]:
    """``(intensity, TFLOP/s)`` at the ``predicted`` or ``measured`` time of each GEMM (first
    copies of repeated layers only); empty when the report has no such time."""
    return [(p.x, p.y) for p in timed_points(report, kind)]


@dataclass(frozen=True)
class TimedPoint:
    """A GEMM at its ``predicted`` or ``measured`` time: ``x`` its intensity, ``y`` its
    TFLOP/s at that time, ``roof_y`` its TFLOP/s on the roof (where its bound point sits)."""

    name: str
    x: float
    y: float
    roof_y: float


def timed_points(report: Report, kind: str) -> list[TimedPoint]:
    """``time_points`` with each GEMM's name and roof point: a measured point is tied to, and
    labelled as, its own GEMM, whichever others have no such time."""
    points = []
    for r in first_copies(report.results):
        seconds = r.predicted_time_s if kind == "predicted" else (
            r.measured.best_s if r.measured is not None else None)
        if seconds and not r.gemm.copy:
            points.append(TimedPoint(r.gemm.name, r.gemm.intensity,
                                     r.gemm.flops / seconds / 1e12,
                                     r.attainable_flops_per_s / 1e12))
    return points


def stream_point(report: Report) -> tuple[float, float] | None:
    """With ``--stream-input``: the step as one point, its FLOPs over the bytes it streams
    (FLOP/B) at the pace the slower of the transfer and the compute allows (TFLOP/s)."""
    stream = report.scaling.host_link if report.scaling else None
    if stream is None:
        return None
    flops = report.totals["flops"]
    return flops / stream.bytes, flops / max(stream.time_s, stream.compute_s) / 1e12


def as_reports(reports: Report | Sequence[Report]) -> list[Report]:
    """One report or several, as a list; PlotError when there is none."""
    items: list[Report] = ([reports] if not isinstance(reports, Sequence)  # one Report
                           else list(reports))
    if not items:
        raise PlotError("nothing to plot: no report given")
    return items


Range = tuple[float, float]


def chart_limits(reports: Sequence[Report], other_dtypes: bool) -> tuple[Range, Range]:
    """x (FLOP/B) and y (TFLOP/s) ranges, at 1-2-5 steps, holding every point, ridge and ceiling
    drawn, with room (a factor of 2 or more) around the points for their labels."""
    roofs = [main_roof(r) for r in reports] + [d for d in map(datasheet_roof, reports) if d]
    points = [(g.x, g.y) for r in reports for g in gemm_groups(r) + op_groups(r)]
    points += [(x, y) for r in reports for kind in ("predicted", "measured")
               for x, y in time_points(r, kind)]
    points += [p for p in map(stream_point, reports) if p is not None]
    xs = [x for x, _ in points] + [roof.ridge for roof in roofs]
    x_range = (nice_below(min(xs) / 2), nice_above(max(xs) * 2))
    ceilings = [roof.peak_tflops for roof in roofs]
    if other_dtypes:
        ceilings += [peak for r in reports for _, peak in other_ceilings(r)]
    lows = [y / 2.5 for _, y in points] + [roof.slope_at(x_range[0]) / 1.2 for roof in roofs]
    lows += [peak / 1.2 for peak in ceilings]
    links = [r.hardware.host_link_gbs for r in reports if r.hardware.host_link_gbs]
    lows += [min(x_range[1] * gbs / 1e3, max(ceilings)) / 1.5 for gbs in links]  # its right end
    return x_range, (nice_below(min(lows)), nice_above(max(ceilings) * 1.5))


@dataclass
class SweepCurve:
    """The GEMMs one sweep curve stands for: their numbers, a repeat's copies as runs
    (``numbers``: ``ItemNumbers``, or the names in numbering order of GEMMs not in runs), the
    names of those of copy 0 (``firsts``) and how many copy numbers they cover (``copies``);
    labelled ``MM1,MM5 x32`` (``label``)."""

    numbers: Names
    firsts: list[str]
    copies: int  # each name's copies; 0: its layers' differ (``copies_label``)
    total: int = 0  # the GEMMs it stands for

    @property
    def label(self) -> str:
        """The first copy's GEMM names, and ``x32`` when the curve stands for 32 copies."""
        return copies_label(self.firsts, self.copies, self.total)

    @property
    def names(self) -> list[str]:
        """Every GEMM's name in numbering order, one by one (a repeat's every copy's: for a
        small curve, or a test)."""
        if isinstance(self.numbers, ItemNumbers):
            return self.numbers.names()
        return list(self.numbers)

    @property
    def spelled(self) -> str:
        """Every GEMM of the curve in one text (the chart's element id): the names, a
        repeat's copies as runs (``ItemNumbers.spelled``: ``MM2-MM119990/12``), never each
        copy's name (0.9.0: 10**5 blocks wrote megabytes into one SVG attribute)."""
        if isinstance(self.numbers, ItemNumbers):
            return self.numbers.spelled()
        return ",".join(self.numbers)


def sweep_series(reports: Sequence[Report], metric: str
                 ) -> list[tuple[SweepCurve, list[float | None]]]:
    """``(GEMMs, values per batch)`` of reports at several batches: intensity (FLOP/B) or
    attainable throughput (TFLOP/s) by ``metric``, GEMMs whose values coincide at every batch
    merged into one curve. A GEMM is followed by its name (``at_each``): a captured module
    may run other GEMMs at another batch, and one a point lacks has None there (a gap). Where
    every point's step is laid out in the same runs (a model file's), each run's copies are
    the same GEMM at every point: worked out run by run (``_run_series``), a repeat's copies
    not built one by one."""
    def value(result: GemmResult) -> float:
        if metric == "intensity":
            return result.gemm.intensity
        return result.attainable_flops_per_s / 1e12

    steps = [r.results for r in reports]
    if same_runs(steps):
        return _run_series(steps, value)
    series: dict[tuple[float | None, ...], tuple[list[Gemm], list[float | None]]] = {}
    for found in at_each(steps, lambda r: r.gemm):
        ys = [None if r is None else value(r) for r in found]
        key = tuple(None if y is None else round(math.log10(y), 9) for y in ys)
        series.setdefault(key, ([], ys))[0].append(next(r for r in found if r).gemm)
    return [(SweepCurve([g.name for g in gemms],
                        [g.name for g in gemms if g.copy == 0] or [gemms[0].name],
                        len({g.copy for g in gemms})), ys)
            for gemms, ys in series.values()]


def _run_series(steps: list[Sequence[GemmResult]], value: Callable[[GemmResult], float]
                ) -> list[tuple[SweepCurve, list[float | None]]]:
    """``sweep_series`` of steps laid out in the same runs: the GEMMs at each place of one
    copy of a run (their values at every point read from the stored results) stand for that
    run's every copy."""
    # per curve: its values, its GEMMs' numbers as runs, copy 0's names, copy-number spans
    series: dict[tuple[float, ...], tuple[list[float | None], ItemNumbers, list[int],
                                          list[Span]]] = {}
    for first, period, count, j, layer, found in _places(steps):
        ys: list[float | None] = [value(r) for r in found]
        key = tuple(round(math.log10(y), 9) for y in ys if y is not None)
        _, numbers, firsts, spans = series.setdefault(key, (ys, ItemNumbers("MM"), [], []))
        numbers.add(first, period, count, (j,))
        if layer.first_copy == 0:  # its copy 0 (the last of a run walked backward)
            firsts.append(first + (count - 1 if layer.reverse else 0) * period + j)
        spans.append((layer.layer.name, layer.first_copy, layer.first_copy + count))
    out = []
    for ys, numbers, firsts, spans in series.values():
        shown = [f"MM{n}" for n in sorted(firsts)] or [f"MM{next(iter(numbers))}"]
        out.append((SweepCurve(numbers, shown, *_covered(spans)), ys))
    return out


def _places(steps: Sequence[Sequence[_R]]
            ) -> Iterator[tuple[int, int, int, int, LayerRun[Any], tuple[_R, ...]]]:
    """Each place of one copy of each run of ``steps`` (laid out in the same runs) in
    numbering order: the run's first item number, items a copy, copies, the place, the run's
    layer run (its copy numbers) and the stored item there at each step."""
    runs = [s.blocks() for s in steps if isinstance(s, Numbered)]
    head = steps[0]
    assert isinstance(head, Numbered)
    for layer, parts in zip(head.layer_runs(), zip(*runs, strict=True), strict=True):
        first, count, items = parts[0]
        for j in range(len(items)):
            yield first, len(items), count, j, layer, tuple(p[2][j] for p in parts)


#: Copy numbers ``start`` to ``stop`` of the layer named (before numbering): a run's copies.
Span = tuple[str, int, int]


def _covered(spans: list[Span]) -> tuple[int, int]:
    """The copies each of a group's names stands for and the rows the group does, from each of
    its rows' spans: per layer, the copy numbers its ranges ``[start, stop)`` cover together (a
    repeat split over runs, or its forward and backward passes, counted once), one count where
    every layer's is the same, else 0 (DeepSeek-V3's 3 dense blocks and 58 sparse ones: their
    alike rows are no 58 copies, the most their numbers reach); the rows, each span's copies."""
    counts: dict[str, int] = {}
    reach: dict[str, int] = {}
    for layer, start, stop in sorted(spans):
        low = max(start, reach.get(layer, start))
        counts[layer] = counts.get(layer, 0) + max(0, stop - low)
        reach[layer] = max(stop, reach.get(layer, stop))
    distinct = set(counts.values())
    return (distinct.pop() if len(distinct) == 1 else 0), sum(b - a for _, a, b in spans)


def at_each(points: Sequence[Sequence[_R]], item_of: Callable[[_R], _P]
            ) -> Iterator[list[_R | None]]:
    """Each name any point has (in the order first met), as the item of that name at every
    point, None where a point has none. Points of a model file name the same items in the
    same order; a captured module's may not (a branch on the batch, a layer only some batches
    run), so items are matched by name, not place."""
    places = [{name: i for i, (name, _, _, _) in enumerate(named(items, item_of))}
              for items in points]
    for name in dict.fromkeys(name for place in places for name in place):
        yield [items[place[name]] if name in place else None
               for items, place in zip(points, places, strict=True)]


def op_sweep_series(reports: Sequence[Report], metric: str
                    ) -> list[tuple[str, list[float | None]]]:
    """``(label, values per batch)`` of the non-GEMM ops the sweep moves: those whose share of
    the step's bytes grows ``MOVED``-fold or more from the first point to the last, to
    ``MAJOR_SHARE`` or more (a decode step's attention over its growing KV cache, flat in
    intensity, which a seq sweep's GEMMs do not show), or whose intensity (or attainable
    throughput, by ``metric``) changes ``MOVED``-fold (prefill's attention, quadratic in
    seq). Ops alike in kind and values share a curve, labelled by kind (``flash-attention x32
    (op)``), its share the sum of theirs; ops without FLOPs have no place on the log axis.
    Ops are matched by name across the points (``at_each``), None where a point lacks one."""
    def value(result: OpResult) -> float:
        if metric == "intensity":
            return result.op.intensity
        return result.attainable_flops_per_s / 1e12

    first, last = reports[0], reports[-1]
    # per curve: its kind, its ops' copy-number spans, values, and bytes at the first and last
    # point; where every point's ops are laid out in the same runs (a model file's), each
    # run's copies are read once, their bytes times the copies (``_places``)
    series: dict[tuple[object, ...], tuple[str, list[Span], list[float | None],
                                           list[int]]] = {}
    steps = [r.ops for r in reports]
    if same_runs(steps):
        places: Iterator[tuple[list[OpResult | None], int, int, str]] = (
            (list(found), layer.first_copy, count, layer.layer.name)
            for _, _, count, _, layer, found in _places(steps))
    else:
        places = ((found, next(r for r in found if r).op.copy, 1, "")
                  for found in at_each(steps, lambda r: r.op))
    for found, copy, count, layer_name in places:
        op = next(r for r in found if r).op
        if not op.flops:
            continue
        ys = [None if r is None else value(r) for r in found]
        key = (op.kind, *(None if y is None else round(math.log10(y), 9) for y in ys))
        kind, spans, _, nbytes = series.setdefault(key, (op.kind, [], ys, [0, 0]))
        spans.append((layer_name, copy, copy + count))
        nbytes[0] += 0 if found[0] is None else found[0].op.bytes * count
        nbytes[1] += 0 if found[-1] is None else found[-1].op.bytes * count
    out = []
    for kind, spans, ys, (start, end) in series.values():
        share = (start / first.totals["bytes"], end / last.totals["bytes"])
        grew = share[1] >= MOVED * share[0] and share[1] >= MAJOR_SHARE
        drawn = [y for y in ys if y is not None]
        if grew or max(drawn) >= MOVED * min(drawn):
            out.append((copies_label([kind], *_covered(spans)) + " (op)", ys))
    return out


#: How far an op's share of the step's bytes, or its value, must move over a sweep for its
#: chart to draw it (``op_sweep_series``).
MOVED = 1.5
#: The share of the step's bytes at the sweep's last point an op grown into it must make.
MAJOR_SHARE = 0.25


