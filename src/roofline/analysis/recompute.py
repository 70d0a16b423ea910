"""Activation recomputation's share of a training step (``recompute`` selective or full): the
forward GEMMs and ops each layer's backward pass runs again (``model.layers.recomputed``, the
rule beside what ``saved_bytes`` stops keeping), read from a report's own forward results, each
at its own roof and predicted time, FLOPs and bound (``recomputation``, ``recomputed_results``).

``Report.totals`` adds them to the step as a part of its own (``recompute_time_s``,
``predicted_recompute_time_s``, ``recompute_flops``, ``recompute_gemm_flops``; ``flops`` and
``gemm_flops`` stay the model's, once each, so that MFU (model FLOPs) and HFU (hardware FLOPs,
``flops`` + ``recompute_flops``) both follow), ``analysis.scaling.backward_s`` to the backward
pass a data-parallel all-reduce hides behind, ``analysis.parallel_times`` to each recomputing
layer's backward pass in ``plan``. No GEMM or op is listed twice: JSON's ``gemms`` and ``ops``
hold each once, in the pass it was made for. A repeat's copies are one run: its stored results
flagged once, counted ``count`` times; a report whose results are a plain list of every copy
(``analysis.measure``'s) is read through the step's own numbering (``Network.expand``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..model.gemm import GemmShape
from ..model.layers import Layer, Step, recomputed
from ..model.repeats import Numbered

if TYPE_CHECKING:
    from ..model.network import Network
    from .report import Report


class Recomputation(NamedTuple):
    """What recomputation adds to a step: FLOPs (the GEMMs' with their dequantization, as
    ``Totals.flops`` counts them, and the ops'), the GEMMs' FLOPs alone, the roofline and the
    predicted time, and the roofline time of the memory-bound items among them."""

    flops: int = 0
    gemm_flops: int = 0
    time_s: float = 0.0
    predicted_time_s: float = 0.0
    memory_bound_s: float = 0.0


def recomputation(report: Report) -> Recomputation:
    """The forward GEMMs and ops ``report``'s step runs again in its backward pass, summed
    (nothing outside training or with ``recompute`` none)."""
    flops = gemm_flops = 0
    time_s = predicted_s = memory_s = 0.0
    net = report.network
    for count, r in _flagged(report.results, net, True):
        g = r.gemm
        gemm_flops += g.flops * count
        flops += (g.flops + g.dequant_flops) * count
        time_s += r.time_s * count
        predicted_s += r.predicted_time_s * count
        memory_s += r.time_s * count if r.bound == "memory" else 0.0
    for count, r in _flagged(report.ops, net, False):
        flops += r.op.flops * count
        time_s += r.time_s * count
        predicted_s += r.predicted_time_s * count
        memory_s += r.time_s * count if r.bound == "memory" else 0.0
    return Recomputation(flops, gemm_flops, time_s, predicted_s, memory_s)


def recomputed_results(report: Report) -> frozenset[int]:
    """The ids of the results (GEMMs' and ops') of ``report`` that the backward pass runs
    again: for a walk that reads a run's stored results for its copies
    (``parallel_times.layer_times``), so that it asks this once per item without building or
    flagging each copy."""
    net = report.network
    return frozenset(id(r) for items, gemms in ((report.results, True), (report.ops, False))
                     for _, r in _flagged(items, net, gemms))


def _flagged(items: Sequence[Any], network: Network, gemms: bool) -> Iterator[tuple[int, Any]]:
    """(copies, result) for each result of ``items`` (a report's GEMM results, ``gemms``, or
    its op results) that the backward pass runs again: per run of a ``Numbered`` sequence its
    stored results, flagged once per distinct tuple, with the run's count; in a plain list of
    every copy, each copy's result, found by the step's own numbering."""
    how = network.step_recompute
    if how == "none":
        return iter(())
    step = network.step()
    flags_of: dict[int, tuple[bool, ...]] = {}  # per stored tuple: runs alike share theirs

    def flags(run: Any, pass_of: Callable[[Any], str]) -> tuple[bool, ...]:
        found = flags_of.get(id(run.items))
        if found is None:
            found = flags_of[id(run.items)] = _flags(run.layer.layer, step, how, gemms,
                                                      run.items, pass_of)
        return found

    if isinstance(items, Numbered):
        return ((run.count, r) for run in items.runs
                for r, again in zip(run.items, flags(run, _result_pass)) if again)
    return _copies(items, network.expand()[0 if gemms else 1], flags)


def _copies(items: Sequence[Any], numbered: Numbered[Any],
            flags: Callable[[Any, Callable[[Any], str]], tuple[bool, ...]]
            ) -> Iterator[tuple[int, Any]]:
    """(1, result) for each copy's flagged result of ``items``, a plain list of every copy's
    (``analysis.measure``'s), in the step's numbering ``numbered``; nothing where the two
    differ in length (not this step's items)."""
    if len(numbered) != len(items):
        return
    for run in numbered.runs:
        marked = [j for j, again in enumerate(flags(run, _item_pass)) if again]
        for c in range(run.count) if marked else ():
            base = run.start + c * len(run.items)
            for j in marked:
                yield 1, items[base + j]


def _flags(layer: Layer, step: Step, how: str, gemms: bool, stored: tuple[Any, ...],
           pass_of: Callable[[Any], str]) -> tuple[bool, ...]:
    """``layers.recomputed``'s flags of ``layer``'s GEMMs (``gemms``) or of its ops, in the
    order its forward pass makes them, where ``stored`` (a run's items) are those: () for a
    run of its backward pass, of another kind, or of a layer that recomputes nothing."""
    every = recomputed(layer, step, how)
    if not every:
        return ()
    mine = tuple(again for shape, again in zip(layer.forward(step), every)
                 if isinstance(shape, GemmShape) == gemms)
    if len(mine) != len(stored) or any(pass_of(item) != "forward" for item in stored):
        return ()
    return mine


def _result_pass(result: Any) -> str:
    """A GEMM's or an op's result's pass."""
    item = result.gemm if hasattr(result, "gemm") else result.op
    return str(item.pass_)


def _item_pass(item: Any) -> str:
    return str(item.pass_)
