"""The numbers of a step's items (GEMMs MM1.., ops OP1..) that share something (a reason, a
transition, a bound), held as the runs they come from, never listed one by one.

A repeat's copies share their items' templates (``repeats.Numbered``), so whatever is said of
one copy's item is said of each: the items of a group are, run by run, the same offsets within
every copy (``ItemNumbers``: a run's first number, its copy's length, its copies, the
offsets). ``grouped`` groups a step's items (or the items at one position of several steps
laid out alike: one GEMM on each device) by a value worked out once per distinct template,
in time that grows with the runs, not the copies. ``ItemNumbers.pieces`` gives the maximal
ranges of consecutive numbers those runs make (what ``output.report.compact_names`` writes
``MM2-MM4``), the first few and how many in all, without walking every copy.

A plain sequence of items (not in runs: a captured module's) is grouped by name, as a list.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

from .repeats import Numbered, named

K = TypeVar("K", bound=Hashable)


class ItemNumbers:
    """Item numbers (1-based) as blocks: ``first + copy x period + offset`` for every copy
    ``0 .. count - 1`` and offset in ``offsets`` (each below ``period``). Blocks are added in
    increasing order and never overlap (each is one run of a step: its numbers lie between its
    first and ``first + count x period - 1``); ``prefix`` names them (``MM``)."""

    __slots__ = ("prefix", "blocks")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.blocks: list[tuple[int, int, int, tuple[int, ...]]] = []

    def add(self, first: int, period: int, count: int, offsets: tuple[int, ...]) -> None:
        """The numbers ``first + c x period + o`` (c below ``count``, o in ``offsets``,
        increasing), after every number held so far, or more offsets of the last block added
        (the same run: its first number, period and copies), past its own."""
        if self.blocks and self.blocks[-1][:3] == (first, period, count):
            self.blocks[-1] = (first, period, count, self.blocks[-1][3] + offsets)
            return
        self.blocks.append((first, period, count, offsets))

    def __len__(self) -> int:
        return sum(count * len(offsets) for _, _, count, offsets in self.blocks)

    def __iter__(self) -> Iterator[int]:
        """Every number in increasing order (one by one: for a small group, or a test)."""
        for first, period, count, offsets in self.blocks:
            for c in range(count):
                for o in offsets:
                    yield first + c * period + o

    def names(self) -> list[str]:
        """Every item's name in order (one by one)."""
        return [f"{self.prefix}{n}" for n in self]

    def spelled(self) -> str:
        """Every number as one text, none left out and no copy of a run written one by one
        (a chart's element id, ``plot.sweep``): a block of one copy its items' names
        (``MM1,MM5``); a block of several copies, each offset as the numbers it takes in
        every copy, first-last/period as a cron range with a step reads (``MM2-MM119990/12``:
        MM2, MM14, ..., MM119990; ``MM3-MM9`` where a copy holds one item)."""
        texts: list[str] = []
        prefix = self.prefix
        for first, period, count, offsets in self.blocks:
            if count == 1:
                texts += [f"{prefix}{first + o}" for o in offsets]
                continue
            step = f"/{period}" if period > 1 else ""
            last = first + (count - 1) * period
            texts += [f"{prefix}{first + o}-{prefix}{last + o}{step}" for o in offsets]
        return ",".join(texts)

    def __repr__(self) -> str:
        return f"ItemNumbers({self.prefix}: {len(self)} in {len(self.blocks)} blocks)"

    def pieces(self, want: int, shortest: int = 3) -> tuple[list[tuple[int, int]], int]:
        """The numbers as pieces: each maximal range of consecutive numbers ``shortest`` long
        or longer one piece (low, high), each other number a piece of its own (n, n); the first
        ``want`` pieces in order and how many there are in all. Within a block each copy's
        ranges repeat a period apart, so the copies between its first and its last are
        counted, not walked."""
        out = _Pieces(want, shortest)
        for first, period, count, offsets in self.blocks:
            spans = _spans(offsets)
            if len(spans) == 1 and spans[0] == (0, period - 1):  # every item of every copy
                out.feed(first, first + count * period - 1)
                continue
            # copy c's ranges end to end with copy c + 1's where a copy's items take both its
            # first offset and its last: such a range spans the seam, the rest stay apart
            seam = spans[0][0] == 0 and spans[-1][1] == period - 1
            head = spans[:-1] if seam else spans  # copy 0's ranges (a seam's last joins on)
            for low, high in head:
                out.feed(first + low, first + high)
            if count == 1:
                if seam:
                    low, high = spans[-1]
                    out.feed(first + low, first + high)
                continue
            if seam:  # per copy after the first: the range over its seam, then its middle
                low, high = spans[-1]
                unit = [(low - period, spans[0][1]), *spans[1:-1]]
                out.repeat(first + period, period, count - 1, unit)
                out.feed(first + (count - 1) * period + low,
                         first + (count - 1) * period + high)
            else:  # copies 1 .. count - 2 apart from their neighbours, the last fed alone
                out.repeat(first + period, period, count - 2, spans)
                last = first + (count - 1) * period
                for low, high in spans:
                    out.feed(last + low, last + high)
        return out.finish()


#: A group of items: their numbers as runs (``ItemNumbers``), or the names of items that are
#: not in runs, in order.
Names = ItemNumbers | list[str]


def _spans(offsets: tuple[int, ...]) -> list[tuple[int, int]]:
    """Sorted offsets as maximal ranges of consecutive ones: ``(0, 1, 2, 5)`` -> ``[(0, 2),
    (5, 5)]``."""
    spans: list[tuple[int, int]] = []
    for o in offsets:
        if spans and spans[-1][1] + 1 == o:
            spans[-1] = (spans[-1][0], o)
        else:
            spans.append((o, o))
    return spans


class _Pieces:
    """``ItemNumbers.pieces`` as ranges come in order: a range fed may still join the next one
    fed (``pending``); a repeated unit's ranges join nothing before or after them."""

    __slots__ = ("want", "shortest", "first", "total", "pending")

    def __init__(self, want: int, shortest: int) -> None:
        self.want, self.shortest = want, shortest
        self.first: list[tuple[int, int]] = []
        self.total = 0
        self.pending: tuple[int, int] | None = None

    def feed(self, low: int, high: int) -> None:
        if self.pending is not None and self.pending[1] + 1 == low:
            self.pending = (self.pending[0], high)
            return
        self._flush()
        self.pending = (low, high)

    def _flush(self) -> None:
        if self.pending is not None:
            self._emit(*self.pending)
            self.pending = None

    def _count(self, low: int, high: int) -> int:
        return 1 if high - low + 1 >= self.shortest else high - low + 1

    def _emit(self, low: int, high: int) -> None:
        self.total += self._count(low, high)
        if len(self.first) < self.want:
            if high - low + 1 >= self.shortest:
                self.first.append((low, high))
            else:
                self.first += [(n, n) for n in range(low, high + 1)]
                del self.first[self.want:]

    def repeat(self, start: int, period: int, times: int, unit: list[tuple[int, int]]) -> None:
        """``unit``'s ranges (offsets from ``start``) ``times`` times, ``period`` apart: none
        joins another, so they are counted per unit; only the first few are written out."""
        if times <= 0 or not unit:
            return
        self._flush()
        per_unit = sum(self._count(low, high) for low, high in unit)
        shown = 0
        for t in range(times):
            if len(self.first) >= self.want:
                break
            for low, high in unit:
                self._emit(start + t * period + low, start + t * period + high)
            shown += 1
        self.total += per_unit * (times - shown)

    def finish(self) -> tuple[list[tuple[int, int]], int]:
        self._flush()
        return self.first, self.total


def same_runs(sequences: Sequence[Sequence[Any]]) -> bool:
    """Whether every one of ``sequences`` is a ``Numbered`` of the same runs (each run's
    first number, copies and items per copy): the items at each position of one are the same
    GEMM or op of the others (another device's, another seq's)."""
    if not all(isinstance(s, Numbered) for s in sequences):
        return False
    shapes = [[(first, count, len(items)) for first, count, items in s.blocks()]
              for s in sequences if isinstance(s, Numbered)]
    return all(shape == shapes[0] for shape in shapes[1:])


def template_values(steps: Sequence[Numbered[Any]], value: Callable[[tuple[Any, ...]], K]
                    ) -> list[list[K]]:
    """``value`` of the items at each position of one copy of each run of ``steps`` (laid out
    alike, ``same_runs``; a tuple, one item of each step), run by run: worked out once per
    distinct tuple of templates (runs of layers alike share theirs)."""
    found: dict[tuple[int, ...], list[K]] = {}
    rows = []
    for parts in zip(*(s.blocks() for s in steps), strict=True):
        templates = [items for _, _, items in parts]
        key = tuple(map(id, templates))
        values = found.get(key)
        if values is None:
            values = found[key] = [value(items) for items in zip(*templates)]
        rows.append(values)
    return rows


def grouped_rows(step: Numbered[Any], rows: Sequence[Sequence[K]]) -> dict[K, Names]:
    """``step``'s items grouped by their value, ``rows`` holding each run's values for one
    copy (``template_values``), in the order each value first comes, as ``ItemNumbers``."""
    out: dict[K, Names] = {}
    for (first, count, _), values in zip(step.blocks(), rows, strict=True):
        offsets: dict[K, list[int]] = {}
        for j, v in enumerate(values):
            offsets.setdefault(v, []).append(j)
        for v, own in offsets.items():
            group = out.get(v)
            if group is None:
                group = out[v] = ItemNumbers(step.prefix)
            assert isinstance(group, ItemNumbers)
            group.add(first, len(values), count, tuple(own))
    return out


def named_rows(step: Numbered[Any], rows: Sequence[Sequence[K]]) -> Iterator[tuple[str, K]]:
    """Every item's name and value, ``rows`` holding each run's values for one copy
    (``template_values``), in numbering order (one by one: for a format that lists each)."""
    prefix = step.prefix
    for (first, count, _), values in zip(step.blocks(), rows, strict=True):
        number = first
        for _ in range(count):
            for v in values:
                yield f"{prefix}{number}", v
                number += 1


def run_values(step: Numbered[Any], rows: Sequence[Sequence[K]]) -> Iterator[K]:
    """Every item's value in numbering order, ``rows`` holding each run's values for one copy
    (``template_values``): ``named_rows`` without the names, a run's copies repeating its row
    (for a listing that reads them beside items it names itself)."""
    return itertools.chain.from_iterable(
        itertools.chain.from_iterable(itertools.repeat(values, count))
        for (_, count, _), values in zip(step.blocks(), rows, strict=True))


def grouped(sequences: Sequence[Sequence[Any]], value: Callable[[tuple[Any, ...]], K],
            what: Callable[[Any], Any]) -> dict[K, Names]:
    """The positions of ``sequences`` (steps laid out alike, equal in length) grouped by
    ``value`` of the items at each (a tuple, one item of each sequence), in the order each
    value first comes: ``ItemNumbers`` where they share their runs (``same_runs``;
    ``value`` called once per distinct tuple of templates), else each position's name, read
    from the first sequence's items through ``what`` (the GEMM or op a result holds), in
    order (``value`` called once per distinct tuple of items)."""
    steps = [s for s in sequences if isinstance(s, Numbered)]
    if len(steps) == len(sequences) and same_runs(steps):
        return grouped_rows(steps[0], template_values(steps, value))
    out: dict[K, Names] = {}
    seen: dict[tuple[int, ...], K] = {}
    for at in zip(*(named(s, what) for s in sequences), strict=True):
        items = tuple(item for _, _, _, item in at)
        key = tuple(map(id, items))
        if key not in seen:
            seen[key] = value(items)
        names = out.setdefault(seen[key], [])
        assert isinstance(names, list)
        names.append(at[0][0])
    return out


def grouped_names(values: dict[str, K]) -> dict[K, Names]:
    """Items given by name (a dict of name to value, in order) grouped by value, in the order
    each value first comes."""
    out: dict[K, Names] = {}
    for name, v in values.items():
        names = out.setdefault(v, [])
        assert isinstance(names, list)
        names.append(name)
    return out
