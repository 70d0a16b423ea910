"""Repeated layers kept once: a run of identical copies is stored (and expanded, and analyzed)
one time, and its copies are named and numbered on demand.

A layer with ``repeat: n`` stands for n copies named ``name.1`` .. ``name.n`` (copy numbers 0 ..
n - 1). ``Layers`` holds the model's layers as runs (one layer, how many copies) and reads as the
sequence of every copy; ``Numbered`` holds a step's GEMMs or ops as runs (the items of one copy,
how many copies) and reads as the numbered sequence MM1.. (OP1..) of every item, each copy's
item built when it is read. What differs between copies is their names and numbers only, so
whatever is computed from one copy holds for all of them (``Numbered.runs``): totals are a
copy's figure times the count.

``MAX_LAYERS`` caps the layers a model may expand to (every copy counted): far above any real
network (the deepest published transformers have a few hundred blocks), and what keeps a
whole-model walk (pipeline stages, a listed JSON) bounded. ``MAX_LISTED`` caps the rows a
format that lists every GEMM and op one by one (JSON, CSV, ``--expand``, HTML) may print.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar, overload

MAX_LAYERS = 2**20  # 1,048,576 layers, every copy counted
MAX_LISTED = 2**21  # 2,097,152 GEMM and op rows in a format that lists each one
#: A run of more items than this has its float figures (times) summed as a copy's sum times the
#: count; below it they are added one by one in numbering order, as a step's items always were.
EXACT_SUM_ITEMS = 2**16

T = TypeVar("T")
L = TypeVar("L")


def copy_name(base: str, copy: int) -> str:
    """The name of copy ``copy`` (0-based) of a repeated layer named ``base``."""
    return f"{base}.{copy + 1}"


@dataclass(frozen=True, slots=True)  # one per layer of a deep model
class LayerRun(Generic[L]):
    """``count`` copies of ``layer``, the first numbered ``first_copy``; ``named``: copies are
    called ``layer.name`` + ``.<copy + 1>`` (a ``repeat``), else the layer keeps its name;
    ``reverse``: the run is walked from its last copy to its first (the backward pass)."""

    layer: L
    count: int = 1
    first_copy: int = 0
    named: bool = False
    reverse: bool = False

    def number(self, c: int) -> int:
        """The copy number of the run's ``c``-th copy (0-based, in the run's order)."""
        return self.first_copy + (self.count - 1 - c if self.reverse else c)

    def name(self, c: int) -> str:
        base: str = self.layer.name  # type: ignore[attr-defined]
        return copy_name(base, self.number(c)) if self.named else base

    def copy(self, c: int) -> L:
        """The run's ``c``-th copy (0-based, in the run's order) as a layer of its own."""
        if not self.named:
            return self.layer
        return replace(self.layer, name=self.name(c))  # type: ignore[type-var]


class Layers(Sequence[L]):
    """A model's layers as runs of copies; reads as the tuple of every copy (built on demand).
    Equal and hashed by its runs."""

    __slots__ = ("runs", "_ends", "_keys", "_cache", "_names")

    def __init__(self, runs: Iterable[LayerRun[L]]) -> None:
        self.runs: tuple[LayerRun[L], ...] = tuple(runs)
        self._ends = list(itertools.accumulate(run.count for run in self.runs))
        self._keys: dict[int, Any] | None = None
        self._cache: dict[Any, Any] = {}
        self._names: _Names | None = None  # made when a layer is first looked up by name

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()``, once per ``key``, for a value that depends on these layers and on what
        ``key`` states only (networks at other batches share their layers, and so this)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def key_of(self, layer: L, key: Callable[[L], Any]) -> Any:
        """``key(layer)``, kept for this object's own layers (computed once for them, however
        many networks at other batches share these layers; another layer's is computed)."""
        if self._keys is None:
            self._keys = {id(run.layer): key(run.layer) for run in self.runs}
        found = self._keys.get(id(layer), self)  # (its layers are alive while it is: ids hold)
        return key(layer) if found is self else found

    @classmethod
    def of(cls, layers: Iterable[L], copies: Sequence[int] = ()) -> Layers[L]:
        """Plain layers, one run each, with the copy numbers ``copies`` (0 when not given)."""
        layers = tuple(layers)
        numbers = tuple(copies) or (0,) * len(layers)
        return cls(LayerRun(layer, 1, copy) for layer, copy in zip(layers, numbers))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def locate(self, index: int) -> tuple[int, int]:
        """(run, copy within the run) of layer ``index``."""
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("layer index out of range")
        run = bisect.bisect_right(self._ends, index)
        return run, index - (self._ends[run - 1] if run else 0)

    @overload
    def __getitem__(self, index: int) -> L: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[L, ...]: ...

    def __getitem__(self, index: int | slice) -> L | tuple[L, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        run, c = self.locate(index)
        return self.runs[run].copy(c)

    def __iter__(self) -> Iterator[L]:
        for run in self.runs:
            for c in range(run.count):
                yield run.copy(c)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Layers):
            return self.runs == other.runs
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.runs)

    def __repr__(self) -> str:
        return f"Layers({list(self.runs)!r})"

    @property
    def copies(self) -> tuple[int, ...]:
        """Every layer's copy number (0: not a repeat of the one before)."""
        return tuple(run.first_copy + c for run in self.runs for c in range(run.count))

    def unnamed(self) -> tuple[L, ...]:
        """Every layer in order, each copy as its run's stored layer, not renamed: for a walk
        that reads no copy's name (a copy differs from its run's layer by its name only), which
        building each named copy would slow (a layout search walks the model thousands of
        times). Made once for these layers (``cached``)."""
        return self.cached(("unnamed",), lambda: tuple(
            run.layer for run in self.runs for _ in range(run.count)))

    def repeated(self) -> int:
        """How many layers are copies after a first one (copy number above 0)."""
        return sum(run.count - (run.first_copy == 0) for run in self.runs)

    def starts(self) -> list[int]:
        """The index of each run's first layer."""
        return [0, *self._ends[:-1]]

    def runs_in(self, start: int, stop: int) -> Iterator[tuple[L, int]]:
        """Layers ``start`` to ``stop`` (an index range) as (a run's stored layer, how many of
        its copies): what ``unnamed`` holds there, run by run, without walking each copy."""
        run = bisect.bisect_right(self._ends, start)
        while start < stop:
            end = min(stop, self._ends[run])
            yield self.runs[run].layer, end - start
            start, run = end, run + 1

    def index_of(self, name: str) -> int | None:
        """The index of the layer named ``name`` (the last one, where several are), or None:
        read from the runs, a repeat's copy by its number, without naming each copy."""
        if self._names is None:
            self._names = _Names(self.runs)
        return self._names.index_of(name)

    def sole_copies(self, base: str, first: int, count: int) -> int | None:
        """The index of copy ``first`` of the repeat named ``base`` where its copies ``first``
        to ``first + count - 1`` are layers of one run in a row and no other layer is named
        ``base`` or a name beginning ``base.`` (so that a name beginning with a copy's name
        and a dot, its items' layers, ``blk.2.attn``, names a part of that copy, and each
        copy's index is the first's plus its number's offset); else None."""
        if self._names is None:
            self._names = _Names(self.runs)
        return self._names.sole_copies(base, first, count)

    def map(self, change: Callable[[L], L]) -> Layers[L]:
        """The same runs with ``change`` applied to each run's layer (which keeps its name)."""
        return Layers(replace(run, layer=change(run.layer)) for run in self.runs)


class _Names:
    """Layer names looked up without naming every copy (``Layers.index_of``): a plain layer's
    by its name, a repeat's copy ``base.k`` by its base and number."""

    __slots__ = ("plain", "bases", "_clash")

    def __init__(self, runs: tuple[LayerRun[Any], ...]) -> None:
        self.plain: dict[str, int] = {}  # a run's name (unnamed copies) -> its last index
        self.bases: dict[str, list[tuple[int, int, int]]] = {}  # -> (first copy, count, start)
        self._clash: dict[str, bool] = {}  # base -> does another layer's name begin 'base.'
        start = 0
        for run in runs:
            name = run.layer.name
            if run.named:
                self.bases.setdefault(name, []).append((run.first_copy, run.count, start))
            else:
                self.plain[name] = start + run.count - 1
            start += run.count

    def index_of(self, name: str) -> int | None:
        found = self.plain.get(name, -1)
        base, dot, number = name.rpartition(".")
        if dot and number.isascii() and number.isdigit() and number[0] != "0":
            copy = int(number) - 1  # (copy_name writes a copy's number so, and only so)
            for first, count, start in self.bases.get(base, ()):
                if first <= copy < first + count:
                    found = max(found, start + copy - first)
        return None if found < 0 else found

    def sole_copies(self, base: str, first: int, count: int) -> int | None:
        mine = [(f, n, start) for f, n, start in self.bases.get(base, ())
                if f < first + count and first < f + n]
        if len(mine) != 1 or not mine[0][0] <= first <= first + count <= mine[0][0] + mine[0][1]:
            return None
        if base not in self._clash:
            prefix = base + "."
            self._clash[base] = any(name.startswith(prefix)
                                    for name in itertools.chain(self.plain, self.bases))
        if self._clash[base]:
            return None
        copy, _, start = mine[0]
        return start + first - copy


class ItemRun(Generic[T]):
    """The items (GEMMs or ops) of ``count`` copies of a layer (``layer``, a LayerRun), stored
    once as templates: one copy's items, not numbered, named for the layer ``first`` (the
    first layer of the step with the same fields and pass: a template serves every layer alike,
    so the tuple itself is shared); ``start``: the index (0-based) of the run's first item in
    the step. Copy c's items are the templates numbered in place and renamed for
    ``layer.name(c)``, built when read. (A plain class: a deep network makes one per layer and
    pass.)"""

    __slots__ = ("items", "count", "layer", "start", "first")

    def __init__(self, items: tuple[T, ...], count: int, layer: LayerRun[Any], start: int,
                 first: str) -> None:
        self.items = items
        self.count = count
        self.layer = layer
        self.start = start
        self.first = first

    def __len__(self) -> int:
        return len(self.items) * self.count

    def layer_name(self, own: str, item_layer: str) -> str:
        """The layer an item of the copy named ``own`` belongs to, its template's being
        ``item_layer`` (a sub-layer keeps its suffix: ``blk.1.attn`` -> ``blk.2.attn``)."""
        first = self.first
        return item_layer if own == first else own + item_layer[len(first):]

    def copies(self, lowest: bool) -> Iterable[int]:
        """The copies to read (0-based, in the run's order): every one, or (``lowest``) the
        lowest-numbered only."""
        if not lowest:
            return range(self.count)
        return (self.count - 1 if self.layer.reverse else 0,)


class Numbered(Sequence[T]):
    """A step's GEMMs (``prefix`` "MM") or ops ("OP") as runs; reads as every item, numbered
    ``prefix``1.. in order, copy by copy, each built when read. ``build(item, name, layer,
    copy)`` makes an item from its template; ``layer_of(item)`` reads its layer name.
    ``named`` gives every item's name, layer and copy number beside its template without
    building anything: what a deep model's tables and JSON read. ``map`` gives the same runs
    with each distinct template tuple changed once (a GEMM's analysis): the runs themselves
    are shared, and a run's items read through ``items_of``."""

    __slots__ = ("_runs", "_build", "_ends", "_prefix", "_layer_of", "_swap", "_size",
                 "_distinct")

    def __init__(self, runs: Iterable[ItemRun[Any]], prefix: str,
                 build: Callable[[T, str, str, int], T],
                 layer_of: Callable[[T], str] = lambda item: item.layer,  # type: ignore
                 swap: dict[int, tuple[T, ...]] | None = None) -> None:
        self._runs: tuple[ItemRun[Any], ...] = tuple(run for run in runs if run.items)
        self._prefix = prefix
        self._build = build
        self._layer_of = layer_of
        self._swap = swap  # id of a run's stored items -> the items this sequence reads
        self._ends: list[int] | None = None  # made when an item is first looked up by index
        self._distinct: list[ItemRun[Any]] | None = None  # a run per template tuple (stored)
        self._size = sum(len(run.items) * run.count for run in self._runs)

    def items_of(self, run: ItemRun[Any]) -> tuple[T, ...]:
        """The items this sequence reads for ``run`` (one of ``_runs``)."""
        return run.items if self._swap is None else self._swap[id(run.items)]

    @property
    def runs(self) -> tuple[ItemRun[T], ...]:
        """The runs, each with the items this sequence reads."""
        if self._swap is None:
            return self._runs
        return tuple(ItemRun(self.items_of(run), run.count, run.layer, run.start, run.first)
                     for run in self._runs)

    @property
    def prefix(self) -> str:
        """What its items' names begin with, their number after it (``MM``, ``OP``)."""
        return self._prefix

    def blocks(self) -> Iterator[tuple[int, int, tuple[T, ...]]]:
        """Each run as (the number of its first item, its copies, the items of one copy this
        sequence reads): copy c's item j is numbered first + c x len(items) + j, whatever
        the copy's own number (``model.item_numbers`` groups items so)."""
        for run in self._runs:
            yield run.start + 1, run.count, self.items_of(run)

    def layer_runs(self) -> Iterator[LayerRun[Any]]:
        """Each run's layer run (its copy numbers, ``LayerRun.number``), as ``blocks``."""
        for run in self._runs:
            yield run.layer

    def map(self, change: Callable[[T], Any], build: Callable[[Any, str, str, int], Any],
            layer_of: Callable[[Any], str]) -> Numbered[Any]:
        """These items with ``change`` applied to each distinct template tuple's items once
        (runs of layers alike share their tuple, and share the changed one), read back with
        ``build`` and ``layer_of``."""
        swap: dict[int, tuple[Any, ...]] = {}
        for run in self._runs:
            if id(run.items) not in swap:
                swap[id(run.items)] = tuple(change(i) for i in self.items_of(run))
        return Numbered(self._runs, self._prefix, build, layer_of, swap)

    def __len__(self) -> int:
        return self._size

    def _item(self, run: ItemRun[Any], offset: int) -> T:
        items = self.items_of(run)
        c, j = divmod(offset, len(items))
        item = items[j]
        layer = run.layer_name(run.layer.name(c), self._layer_of(item))
        return self._build(item, f"{self._prefix}{run.start + offset + 1}", layer,
                           run.layer.number(c))

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("item index out of range")
        if self._ends is None:
            self._ends = list(itertools.accumulate(len(run) for run in self._runs))
        run = bisect.bisect_right(self._ends, index)
        return self._item(self._runs[run], index - (self._ends[run - 1] if run else 0))

    def __iter__(self) -> Iterator[T]:
        build = self._build
        for name, layer, copy, item in self.named():
            yield build(item, name, layer, copy)

    def __eq__(self, other: object) -> bool:  # equal to any sequence of the same items
        if isinstance(other, (Numbered, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Numbered({self._prefix}: {len(self)} items in {len(self._runs)} runs)"

    def named(self, firsts: bool = False, lowest: bool = False
              ) -> Iterator[tuple[str, str, int, T]]:
        """Every item as (its name, its layer, its copy number, the template it is built
        from), in numbering order, nothing built; ``firsts``: the first copy's items only
        (copy number 0: the rows a table shows of a repeated layer); ``lowest``: each run's
        lowest-numbered copy, whatever its number (a run of copies 1.. of a split repeat)."""
        lowest = lowest or firsts
        prefix, layer_of = self._prefix, self._layer_of
        # each template tuple's items with their layer and its part after the template's
        # layer name (a sub-layer's ``.attn``), once per tuple: runs of layers alike share it
        read: dict[tuple[int, str], list[tuple[T, str, str]]] = {}
        for run in self._runs:
            layer, first = run.layer, run.first
            entries = read.get((id(run.items), first))
            if entries is None:
                entries = read[id(run.items), first] = [
                    (item, name, name[len(first):]) for item, name in (
                        (item, layer_of(item)) for item in self.items_of(run))]
            for c in run.copies(lowest):
                copy = layer.number(c)
                if firsts and copy:
                    continue
                own = layer.name(c)  # (its items' layers as ItemRun.layer_name gives them)
                number = run.start + c * len(entries)
                if own == first:
                    for item, name, _ in entries:
                        number += 1
                        yield f"{prefix}{number}", name, copy, item
                else:
                    for item, _, suffix in entries:
                        number += 1
                        yield f"{prefix}{number}", own + suffix, copy, item

    def placed(self) -> Iterator[tuple[T, int, int, str]]:
        """Each run's stored items with the copy numbers they stand for (``start`` to
        ``stop``) and the layer those numbers count copies of (its name before numbering):
        where every copy sits, without naming any."""
        for run in self._runs:
            start = run.layer.first_copy
            base = run.layer.layer.name
            for item in self.items_of(run):
                yield item, start, start + run.count, base

    def firsts(self) -> Iterator[T]:
        """The first copy (copy number 0) of each run: the rows a table shows of a repeated
        layer."""
        build = self._build
        for name, layer, copy, item in self.named(firsts=True):
            yield build(item, name, layer, copy)

    def stored(self) -> Iterator[T]:
        """Each distinct template once (not numbered, named for the first layer alike): what
        holds for one copy holds for each."""
        if self._distinct is None:
            self._distinct = list({id(run.items): run for run in self._runs}.values())
        for run in self._distinct:
            yield from self.items_of(run)

    def repeated(self) -> int:
        """How many items belong to a copy after the first (copy number above 0)."""
        return sum(len(run.items) * (run.count - (run.layer.first_copy == 0))
                   for run in self._runs)

    def total(self, value: Callable[[T], int]) -> int:
        """The exact sum of an integer figure over every item."""
        sums: dict[int, int] = {}  # per template tuple: runs of layers alike share theirs
        total = 0
        for run in self._runs:
            own = sums.get(id(run.items))
            if own is None:
                own = sums[id(run.items)] = sum(value(item) for item in self.items_of(run))
            total += own * run.count
        return total

    def float_total(self, value: Callable[[T], float], keep: Callable[[T], bool] | None = None,
                    start: float = 0) -> float:
        """The sum of a float figure over every item (those ``keep`` accepts), added one by one
        in numbering order after ``start``, except that a run of more than ``EXACT_SUM_ITEMS``
        items adds its copy's sum times its count (closer to the exact sum than adding copy by
        copy, and the same to a few units in the last place)."""
        values: dict[int, list[float]] = {}  # per template tuple, as ``total``
        flat: list[float] = []  # every value in numbering order; sum() adds in this order
        for run in self._runs:
            own = values.get(id(run.items))
            if own is None:
                own = values[id(run.items)] = [value(item) for item in self.items_of(run)
                                               if keep is None or keep(item)]
            if run.count == 1:
                flat += own
            else:
                flat += repeated_values(own, run)
        return sum(flat, start)


def rebuild(item: Any, name: str, layer: str, copy: int) -> Any:
    """A GEMM or op renamed (a ``Numbered`` build for ``Gemm`` and ``Op``: their ``renamed``,
    every figure kept, nothing checked again)."""
    return item.renamed(name, layer, copy)


def first_copies(items: Sequence[T]) -> Iterable[T]:
    """The first copy of each run of ``items`` (every item when they are not in runs): every
    item of copy 0 among them, in order."""
    return items.firsts() if isinstance(items, Numbered) else items


def items_per_run(items: Sequence[T]) -> int:
    """How many items one copy of each run holds (a plain sequence's length): what working
    through a step run by run reads, a repeat's copies counted once."""
    if isinstance(items, Numbered):
        return sum(len(templates) for _, _, templates in items.blocks())
    return len(items)


def repeated_count(items: Sequence[T], copy: Callable[[T], int]) -> int:
    """How many of ``items`` repeat a first copy (copy number above 0, ``copy(item)``): of
    runs, counted run by run (``Numbered.repeated``)."""
    if isinstance(items, Numbered):
        return items.repeated()
    return sum(1 for item in items if copy(item))


def distinct(items: Sequence[T]) -> Iterable[T]:
    """One copy of each run of ``items`` (every item when they are not in runs): enough to
    ask whether any item has a property its copies share."""
    return items.stored() if isinstance(items, Numbered) else items


def repeated_values(own: list[float], run: ItemRun[Any]) -> list[float]:
    """A run's float figures in numbering order, ``own`` being one copy's: the copies' one by
    one (``own`` ``count`` times), or for a run of more than ``EXACT_SUM_ITEMS`` items their sum
    as one value (a copy's sum times the count), so that summing stays bounded."""
    if run.count == 1:
        return own
    if len(run) <= EXACT_SUM_ITEMS:
        return own * run.count
    return [sum(own) * run.count] if own else []


def int_total(items: Sequence[T], value: Callable[[T], int]) -> int:
    """An integer figure summed over every item (a repeat's copies: one copy's sum times the
    count, exactly: ``Numbered.total``)."""
    if isinstance(items, Numbered):
        return items.total(value)
    return sum(value(item) for item in items)


def float_total(items: Sequence[T], value: Callable[[T], float],
                keep: Callable[[T], bool] | None = None) -> float:
    """A float figure summed over every item (those ``keep`` accepts), in numbering order
    (``Numbered.float_total``)."""
    if isinstance(items, Numbered):
        return items.float_total(value, keep)
    return sum(value(item) for item in items if keep is None or keep(item))


def named(items: Sequence[T], what: Callable[[T], Any], firsts: bool = False
          ) -> Iterator[tuple[str, str, int, T]]:
    """(name, layer, copy number, item) of every item in order (``firsts``: copy 0's only):
    ``Numbered.named`` (the item a template, nothing built), or a plain sequence's own, read
    from ``what(item)`` (the GEMM or op a result holds)."""
    if isinstance(items, Numbered):
        return items.named(firsts)
    return ((own.name, own.layer, own.copy, item) for item, own in (
        (item, what(item)) for item in items) if not (firsts and own.copy))
