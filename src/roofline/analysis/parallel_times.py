"""A shard's compute per layer and per pipeline stage, read from its report (``layer_times``,
``stage_times``): each GEMM and op at its roof and at its predicted time, forward, backward and
memory-bound apart, the forward items recomputation runs again (``analysis.recompute``) in the
backward pass of their layer too, the blocks' norms, dropouts and residual adds divided by tp
under sequence parallelism, the final norm, an MoE block's router and a latent-attention
block's down projections and latent norms too (``SP_KINDS``, ``ROUTER``, ``LATENT``; not the
attention core's), and the optimizer update's time."""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from typing import Any

from ..model.repeated_sum import FEW, run_sum
from ..model.repeats import ItemRun, Layers, Numbered
from .recompute import recomputed_results
from .report import Report

#: Ops that sequence parallelism runs on T / tp tokens, where they are a layer's own (the op's
#: layer the layer's name): a block's norms, residual adds and dropouts, and outside the
#: blocks the final norm and the embedding's dropout (Megatron-LM scatters the embedding's
#: output along the sequence and gathers the final norm's for the output layer); not a block's
#: attention core's (``blk.1.attn``: a naive attention's dropout over the scores), which runs
#: inside the tensor-parallel region, already split by heads.
SP_KINDS = frozenset({"layernorm", "rmsnorm", "residual", "dropout"})

#: A mixture-of-experts block's router (its layer ``blk.1.router``): under sequence parallelism
#: each GPU of the tensor-parallel group scores its own T / tp tokens (Megatron-Core's
#: ``MoELayer`` routes the sequence-parallel hidden states; ``TopKRouter`` marks its weight
#: ``sequence_parallel``, its gradient summed over the group), so its GEMMs and softmax take
#: 1 / tp of their time, as ``SP_KINDS`` do.
ROUTER = ".router"

#: A multi-head latent attention block's down projections and their norms (``layers.mla``: the
#: GEMM ``qkv_a``, or ``kv_a`` without a query latent, and the RMSNorms on ``q_a`` and
#: ``kv_a``): Megatron-Core's ``MLASelfAttention`` builds ``linear_q_down_proj`` and
#: ``linear_kv_down_proj`` whole on every GPU (TELinear, ``parallel_mode='duplicated'``) and runs
#: them on the sequence-parallel hidden states, T / tp tokens ("q_compressed: [s / TP, b,
#: q_lora_rank]", megatron/core/transformer/multi_latent_attention.py), then the latent norms
#: on those, the up projections (column-parallel) gathering the sequence: 1 / tp of their time,
#: as ``SP_KINDS`` do. (A query projection without a latent, ``q``, is column-parallel: split by
#: heads already.)
LATENT = frozenset({".qkv_a", ".kv_a", ".q_a"})


class _Owners:
    """Which layer an item's layer (``blk.3.qkv``, ``blk.3.attn``) belongs to: the longest
    layer name equal to it or followed by a dot, read from the runs (``Layers.index_of``)
    without naming every copy. ``owner`` gives its index and whether the item is the layer's
    own (its layer the layer's name: ``SP_KINDS``) or its router's (``ROUTER``)."""

    def __init__(self, layers: Layers[Any]) -> None:
        self.layers = layers
        self.found: dict[str, tuple[int, str] | None] = {}

    def owner(self, item_layer: str) -> tuple[int, str] | None:
        """(the owner's index, the item's layer past the owner's name: "" for the layer's own,
        ``.attn`` for its attention's), or None where no layer owns it."""
        if item_layer not in self.found:
            found, probe = None, item_layer
            while probe:
                index = self.layers.index_of(probe)
                if index is not None:
                    found = (index, item_layer[len(probe):])
                    break
                probe = probe.rpartition(".")[0]
            self.found[item_layer] = found
        return self.found[item_layer]


#: what one GEMM or op adds to its layer's row (``_add``): its time at the roof and predicted
#: (divided by tp where sequence parallelism splits it), its column (0 forward, 1 backward),
#: whether it is memory-bound, whether recomputation runs it again
_Entry = tuple[float, float, int, bool, bool]


class LayerRows:
    """Per layer a row of [forward, backward, memory-bound, recomputed] seconds, held as
    segments of layers in a row whose rows are equal (a repeat's copies, whose items are the
    same stored results: one row for all of them); ``rows[i]`` is layer i's row (shared by
    its segment: read it, do not change it). ``sums`` adds a column over ranges of layers one
    layer after another, as a list of every layer's row would be added."""

    __slots__ = ("starts", "rows", "size")

    def __init__(self, starts: list[int], rows: list[list[float]], size: int) -> None:
        self.starts, self.rows, self.size = starts, rows, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> list[float]:
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError("layer index out of range")
        return self.rows[bisect.bisect_right(self.starts, index) - 1]

    def segments(self, span: range) -> Iterator[tuple[list[float], int]]:
        """The rows of the layers in ``span`` (a range, step 1), as (row, how many layers)."""
        for segment, layers in self._covered(span):
            yield self.rows[segment], layers

    def cover(self, spans: Sequence[range]) -> tuple[tuple[int, int], ...]:
        """The segments the layers of ``spans`` read, in order, as (segment, how many layers):
        all that ``sums`` reads of them, so spans that cover the same give the same sums (a
        layout search's stages alike, ``evaluate``)."""
        return tuple(piece for span in spans for piece in self._covered(span))

    def _covered(self, span: range) -> Iterator[tuple[int, int]]:
        start, stop = span.start, span.stop
        segment = bisect.bisect_right(self.starts, start) - 1
        while start < stop:
            end = min(stop, self.starts[segment + 1] if segment + 1 < len(self.starts)
                      else self.size)
            yield segment, end - start
            start, segment = end, segment + 1

    def sums(self, spans: Sequence[range]) -> list[float]:
        """Each column summed over the layers of ``spans`` in order, one layer at a time (the
        sum a list of every layer's row gives, to the last bit: ``run_sum``), in time that
        grows with the segments, not the layers."""
        pieces = [piece for span in spans for piece in self.segments(span)]
        if sum(n for _, n in pieces) <= FEW:  # a few layers: row by row
            rows = [row for row, n in pieces for _ in range(n)]
            return [sum(row[k] for row in rows) for k in range(4)]
        return [run_sum((row[k], n) for row, n in pieces) for k in range(4)]


#: per layer [forward, backward, memory-bound, recomputed] seconds of one micro-batch (the
#: recomputed forward is in the backward column too, and in the memory-bound one where its item
#: is memory-bound), and the optimizer update's seconds: at the roof (``False``) and at the
#: predicted times (``True``)
LayerTimes = dict[bool, tuple[LayerRows, float]]


def layer_times(report: Report, sp_tp: int) -> LayerTimes:
    """Per layer: [forward, backward, memory-bound, recomputed] seconds of one micro-batch; and
    the optimizer update's time; each GEMM and op at its roof (key ``False``) and at its
    predicted time (key ``True``), in one pass; a forward item that recomputation runs again
    (``recomputed_results``) counted in its layer's backward pass a second time, so that the
    1F1B pipeline and the data-parallel overlap windows see it. With sequence parallelism
    (sp_tp > 1) the norms, dropouts and residual adds of the blocks, the final norm and the
    embedding's dropout take 1 / tp of their time (``SP_KINDS``; recomputed too), an MoE
    block's router and a latent attention's down projections and latent norms too
    (``ROUTER``, ``LATENT``). The same
    for every layout that shares the shard's report and ``sp_tp`` (``evaluate``'s
    ``cache``).

    A repeat's copies read the same stored results, so each copy's row is the same, added in
    the same order: a run of copies whose items all belong to their own copy
    (``Layers.sole_copies``) is worked out once for all of them (``LayerRows``), in time that
    grows with the distinct layers, not the copies; any other item is added to the layer that
    owns it (``_Owners``), one copy at a time."""
    layers = report.network.layers
    assert isinstance(layers, Layers)
    parts = _Parts(layers, sp_tp, recomputed_results(report))
    for items in (report.results, report.ops):
        if not isinstance(items, Numbered):  # a plain list of every copy's results
            for r in items:
                parts.add(r, _item(r).layer)
            continue
        for run in items.runs:
            first = _sole_copies(layers, run)
            if first is not None:  # every copy alike, worked out once
                parts.add_copies(first, run)
                continue
            for c in range(run.count):  # one copy at a time, each item to its layer's owner
                own = run.layer.name(c)
                for r in run.items:
                    parts.add(r, run.layer_name(own, _item(r).layer))
    rows = {key: _rows(parts.parts, len(layers), key) for key in (False, True)}
    return {key: (rows[key], sum((value[key] for value in parts.update), 0.0))
            for key in (False, True)}


class _Parts:
    """What each GEMM and op adds to the layers' rows, in the order they are numbered:
    ``parts``, (the first layer, how many layers in a row, what each of them adds: a list of
    ``_Entry``), and ``update``, the optimizer's items' (roof, predicted) times."""

    def __init__(self, layers: Layers[Any], sp_tp: int, again: frozenset[int]) -> None:
        self.owners = _Owners(layers)
        self.sp_tp, self.again = sp_tp, again  # (again: the stored results run again)
        self.parts: list[tuple[int, int, list[_Entry]]] = []
        self.update: list[tuple[float, float]] = []

    def entry(self, r: Any, rest: str) -> _Entry:
        """What result ``r`` adds to its layer's row, its layer ``rest`` past the layer's
        name (``_split``)."""
        divide = self.sp_tp if self.sp_tp > 1 and _split(rest, _kind(r)) else 1
        return (r.time_s / divide, r.predicted_time_s / divide,
                0 if _pass(r) == "forward" else 1, r.bound == "memory", id(r) in self.again)

    def add(self, r: Any, layer: str) -> None:
        """Result ``r`` of the item whose layer is ``layer``, to the layer owning it."""
        if _pass(r) == "update":
            self.update.append((r.time_s, r.predicted_time_s))
            return
        found = self.owners.owner(layer)
        if found is None:
            raise AssertionError(f"no layer owns {layer!r}")  # every item names its layer
        index, rest = found
        self.parts.append((index, 1, [self.entry(r, rest)]))

    def add_copies(self, first: int, run: ItemRun[Any]) -> None:
        """``run``'s copies, layers ``first`` on, each its own items (``_sole_copies``)."""
        self.parts.append((first, run.count, [self.entry(r, _item(r).layer[len(run.first):])
                                              for r in run.items]))


def _rows(parts: list[tuple[int, int, list[_Entry]]], size: int, predicted: bool) -> LayerRows:
    """Every layer's row, each segment of layers that the same parts cover worked out once."""
    starts = sorted({0, size} | {first for first, _, _ in parts}
                    | {first + count for first, count, _ in parts})[:-1]
    if not starts:
        starts = [0]
    rows = [[0.0, 0.0, 0.0, 0.0] for _ in starts]
    k = 1 if predicted else 0
    for first, count, entries in parts:
        segment = bisect.bisect_left(starts, first)
        while segment < len(starts) and starts[segment] < first + count:
            row = rows[segment]
            for values in entries:
                time, column, memory, recomputed = values[k], values[2], values[3], values[4]
                row[column] += time
                if memory:
                    row[2] += time * (2 if recomputed else 1)  # once more in the backward
                if recomputed:
                    row[1] += time
                    row[3] += time
            segment += 1
    return LayerRows(starts, rows, size)


def _sole_copies(layers: Layers[Any], run: ItemRun[Any]) -> int | None:
    """The index of ``run``'s lowest-numbered copy where each of its copies' items belong to
    that copy alone (``Layers.sole_copies``: a repeat of more than one copy, each item's
    layer its copy's name or a part of it); else None."""
    if run.count == 1 or not run.layer.named:
        return None
    first, dotted = run.first, run.first + "."
    if not all(_item(r).layer == first or _item(r).layer.startswith(dotted)
               for r in run.items) or any(_pass(r) == "update" for r in run.items):
        return None
    return layers.sole_copies(run.layer.layer.name, run.layer.first_copy, run.count)


def _split(rest: str, kind: str) -> bool:
    """Whether sequence parallelism divides an item by tp: a layer's own norm, dropout or
    residual add (``rest`` "": its layer the layer's name), its router's (``ROUTER``) or a
    latent attention's down projections and latent norms (``LATENT``)."""
    return (rest == "" and kind.removesuffix("-backward") in SP_KINDS or rest == ROUTER
            or rest in LATENT)


def _item(r: Any) -> Any:
    """The GEMM or op a result holds."""
    return r.gemm if hasattr(r, "gemm") else r.op


def _pass(r: Any) -> str:
    return str(_item(r).pass_)


def _kind(r: Any) -> str:
    """An op's kind ("" for a GEMM's result)."""
    return str(r.op.kind) if hasattr(r, "op") else ""


#: One stage's [forward, backward, memory-bound, recomputed] seconds of a micro-batch summed
#: over its layers (the recomputed in the backward already), and the optimizer update's
#: seconds: at the roof (``False``) and predicted (``True``)
StageTimes = dict[bool, tuple[float, float, float, float, float]]


def stage_times(both: LayerTimes, spans: Sequence[range]) -> StageTimes:
    """The times (``layer_times``) of the layers in ``spans`` (ranges of layer indices, in
    order) summed, each column one layer after another (``LayerRows.sums``)."""
    out: StageTimes = {}
    for key, (rows, update) in both.items():
        fwd, bwd, mem_s, again = rows.sums(spans)
        out[key] = (fwd, bwd, mem_s, again, update)
    return out
