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

    __slots__ = ("runs", "_ends", "_keys", "_cache")

    def __init__(self, runs: Iterable[LayerRun[L]]) -> None:
        self.runs: tuple[LayerRun[L], ...] = tuple(runs)
        self._ends = list(itertools.accumulate(run.count for run in self.runs))
        self._keys: dict[int, Any] | None = None
        self._cache: dict[Any, Any] = {}

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

    def repeated(self) -> int:
        """How many layers are copies after a first one (copy number above 0)."""
        return sum(run.count - (run.first_copy == 0) for run in self.runs)

    def map(self, change: Callable[[L], L]) -> Layers[L]:
        """The same runs with ``change`` applied to each run's layer (which keeps its name)."""
        return Layers(replace(run, layer=change(run.layer)) for run in self.runs)


class ItemRun(Generic[T]):
    """The items (GEMMs or ops) of ``count`` copies of a layer (``layer``), stored as those of
    the first copy, numbered and named as it is; ``start``: the index (0-based) of the run's
    first item in the step. Copy c's items are the same, renamed for ``layer.name(c)``. (A
    plain class: a deep network makes one per layer and per expansion.)"""

    __slots__ = ("items", "count", "layer", "start")

    def __init__(self, items: tuple[T, ...], count: int, layer: LayerRun[Any], start: int
                 ) -> None:
        self.items = items
        self.count = count
        self.layer = layer
        self.start = start

    def __len__(self) -> int:
        return len(self.items) * self.count


class Numbered(Sequence[T]):
    """A step's GEMMs (``prefix`` "MM") or ops ("OP") as runs; reads as every item, numbered
    ``prefix``1.. in order, copy by copy. ``build(item, name, layer, copy)`` makes the item of a
    copy from the run's stored one; ``layer_of(item)`` reads its layer name."""

    __slots__ = ("runs", "_build", "_ends", "_prefix", "_layer_of", "_flat")

    def __init__(self, runs: Iterable[ItemRun[T]], prefix: str,
                 build: Callable[[T, str, str, int], T],
                 layer_of: Callable[[T], str] = lambda item: item.layer,  # type: ignore
                 ) -> None:
        self.runs: tuple[ItemRun[T], ...] = tuple(run for run in runs if run.items)
        self._prefix = prefix
        self._build = build
        self._layer_of = layer_of
        self._ends = list(itertools.accumulate(len(run) for run in self.runs))
        # no run repeats: every item is stored, read straight from one tuple
        self._flat: tuple[T, ...] | None = None
        if all(run.count == 1 for run in self.runs):
            self._flat = tuple(itertools.chain.from_iterable(run.items for run in self.runs))

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    def _item(self, run: ItemRun[T], offset: int) -> T:
        c, j = divmod(offset, len(run.items))
        item = run.items[j]
        if not c:
            return item
        layer = self._layer_of(item)
        first, own = run.layer.name(0), run.layer.name(c)
        layer = own + layer[len(first):]
        copy = run.layer.number(c)
        return self._build(item, f"{self._prefix}{run.start + offset + 1}", layer, copy)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        if self._flat is not None:
            return self._flat[index]
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("item index out of range")
        run = bisect.bisect_right(self._ends, index)
        return self._item(self.runs[run], index - (self._ends[run - 1] if run else 0))

    def __iter__(self) -> Iterator[T]:
        if self._flat is not None:
            yield from self._flat
            return
        for run in self.runs:
            for offset in range(len(run)):
                yield self._item(run, offset)

    def __eq__(self, other: object) -> bool:  # equal to any sequence of the same items
        if isinstance(other, (Numbered, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Numbered({self._prefix}: {len(self)} items in {len(self.runs)} runs)"

    def labelled(self) -> Iterator[tuple[str, T]]:
        """Every item as (its copy's layer name, the stored item it repeats), in order: the
        copies' figures without building each copy."""
        for run in self.runs:
            if run.count == 1:
                yield from ((self._layer_of(item), item) for item in run.items)
                continue
            first = run.layer.name(0)
            for c in range(run.count):
                own = run.layer.name(c)
                for item in run.items:
                    layer = self._layer_of(item)
                    yield (own + layer[len(first):] if c else layer), item

    def firsts(self) -> Iterator[T]:
        """Each run's lowest-numbered copy (the rows a table shows of a repeated layer)."""
        if self._flat is not None:
            yield from self._flat
            return
        for run in self.runs:
            c = run.count - 1 if run.layer.reverse else 0
            for offset in range(len(run.items)):
                yield self._item(run, c * len(run.items) + offset)

    def stored(self) -> Iterator[T]:
        """Each run's stored items (its first copy's), numbered as they are; what holds for
        one copy holds for each."""
        for run in self.runs:
            yield from run.items

    def repeated(self) -> int:
        """How many items belong to a copy after the first (copy number above 0)."""
        return sum(len(run.items) * (run.count - (run.layer.first_copy == 0))
                   for run in self.runs)

    def total(self, value: Callable[[T], int]) -> int:
        """The exact sum of an integer figure over every item."""
        if self._flat is not None:
            return sum(value(item) for item in self._flat)
        return sum(sum(value(item) for item in run.items) * run.count for run in self.runs)

    def float_total(self, value: Callable[[T], float], keep: Callable[[T], bool] | None = None,
                    start: float = 0) -> float:
        """The sum of a float figure over every item (those ``keep`` accepts), added one by one
        in numbering order after ``start``, except that a run of more than ``EXACT_SUM_ITEMS``
        items adds its copy's sum times its count (closer to the exact sum than adding copy by
        copy, and the same to a few units in the last place)."""
        if self._flat is not None:  # no repeats: every item in order
            return sum((value(item) for item in self._flat if keep is None or keep(item)),
                       start)
        flat: list[float] = []  # every value in numbering order; sum() adds in this order
        for run in self.runs:
            own = [value(item) for item in run.items if keep is None or keep(item)]
            flat += repeated_values(own, run)
        return sum(flat, start)


def map_items(items: Numbered[T], change: Callable[[T], Any],
              build: Callable[[Any, str, str, int], Any],
              layer_of: Callable[[Any], str]) -> Numbered[Any]:
    """``items`` with ``change`` applied to each run's stored items (once per run), read back
    with ``build`` and ``layer_of``."""
    return Numbered((ItemRun(tuple(change(i) for i in run.items), run.count, run.layer,
                             run.start) for run in items.runs), items._prefix, build, layer_of)


def rebuild(item: Any, name: str, layer: str, copy: int) -> Any:
    """A GEMM or op renamed (a ``Numbered`` build for ``Gemm`` and ``Op``: their ``renamed``,
    every figure kept, nothing checked again)."""
    return item.renamed(name, layer, copy)


def first_copies(items: Sequence[T]) -> Iterable[T]:
    """The first copy of each run of ``items`` (every item when they are not in runs): every
    item of copy 0 among them, in order."""
    return items.firsts() if isinstance(items, Numbered) else items


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


def labelled(items: Sequence[T], layer_of: Callable[[T], str]) -> Iterable[tuple[str, T]]:
    """Every item as (its layer name, the item or the stored one it repeats), in order."""
    if isinstance(items, Numbered):
        return items.labelled()
    return ((layer_of(item), item) for item in items)
