"""A shard's compute per layer and per pipeline stage, read from its report (``layer_times``,
``stage_times``): each GEMM and op at its roof and at its predicted time, forward, backward and
memory-bound apart, the forward items recomputation runs again (``analysis.recompute``) in the
backward pass of their layer too, the blocks' norms, dropouts and residual adds divided by tp
under sequence parallelism, the final norm and an MoE block's router too (``SP_KINDS``,
``ROUTER``; not the attention core's), and the optimizer update's time."""

from __future__ import annotations

from ..model.repeats import labelled
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


def _owner_of(names: list[str]):
    """A function from an item's layer (``blk.3.qkv``) to the index of its layer (``blk.3``):
    the longest layer name equal to it or followed by a dot."""
    by_name = {name: i for i, name in enumerate(names)}
    cache: dict[str, int | None] = {}

    def owner(item_layer: str) -> int | None:
        if item_layer not in cache:
            found, probe = None, item_layer
            while probe:
                if probe in by_name:
                    found = by_name[probe]
                    break
                probe = probe.rpartition(".")[0]
            cache[item_layer] = found
        return cache[item_layer]
    return owner


#: per layer [forward, backward, memory-bound, recomputed] seconds of one micro-batch (the
#: recomputed forward is in the backward column too, and in the memory-bound one where its item
#: is memory-bound), and the optimizer update's seconds: at the roof (``False``) and at the
#: predicted times (``True``)
LayerTimes = dict[bool, tuple[list[list[float]], float]]


def layer_times(report: Report, sp_tp: int) -> LayerTimes:
    """Per layer: [forward, backward, memory-bound, recomputed] seconds of one micro-batch; and
    the optimizer update's time; each GEMM and op at its roof (key ``False``) and at its
    predicted time (key ``True``), in one pass; a forward item that recomputation runs again
    (``recomputed_results``) counted in its layer's backward pass a second time, so that the
    1F1B pipeline and the data-parallel overlap windows see it. With sequence parallelism
    (sp_tp > 1) the norms, dropouts and residual adds of the blocks, the final norm and the
    embedding's dropout take 1 / tp of their time (``SP_KINDS``; recomputed too). The same
    for every layout that shares the shard's report and ``sp_tp`` (``evaluate``'s
    ``cache``)."""
    net = report.network
    names = [run.name(c) for run in net.layer_runs for c in range(run.count)]
    owner = _owner_of(names)
    roof = [[0.0, 0.0, 0.0, 0.0] for _ in range(len(net.layers))]
    predicted = [[0.0, 0.0, 0.0, 0.0] for _ in range(len(net.layers))]
    update = [0.0, 0.0]
    again = recomputed_results(report)  # the stored results a copy's backward runs again
    # a repeat's copies: their layer names, the stored copy's figures (model.repeats)
    items = [(layer, r.gemm.pass_, r.time_s, r.predicted_time_s, r.bound, "", id(r) in again)
             for layer, r in labelled(report.results, lambda r: r.gemm.layer)]
    items += [(layer, r.op.pass_, r.time_s, r.predicted_time_s, r.bound, r.op.kind,
               id(r) in again)
              for layer, r in labelled(report.ops, lambda r: r.op.layer)]
    for layer, pass_, time, expected, bound, kind, recomputed in items:
        if pass_ == "update":
            update[0] += time
            update[1] += expected
            continue
        index = owner(layer)
        if index is None:
            raise AssertionError(f"no layer owns {layer!r}")  # every item names its layer
        if sp_tp > 1 and (layer == names[index] and kind.removesuffix("-backward") in SP_KINDS
                          or layer == names[index] + ROUTER):
            time /= sp_tp
            expected /= sp_tp
        column = 0 if pass_ == "forward" else 1
        times = 2 if recomputed else 1  # once in its pass, once more in the backward
        roof[index][column] += time
        predicted[index][column] += expected
        if bound == "memory":
            roof[index][2] += time * times
            predicted[index][2] += expected * times
        if recomputed:
            for row, value in ((roof[index], time), (predicted[index], expected)):
                row[1] += value
                row[3] += value
    return {False: (roof, update[0]), True: (predicted, update[1])}


#: One stage's [forward, backward, memory-bound, recomputed] seconds of a micro-batch summed
#: over its layers (the recomputed in the backward already), and the optimizer update's
#: seconds: at the roof (``False``) and predicted (``True``)
StageTimes = dict[bool, tuple[float, float, float, float, float]]


def stage_times(both: LayerTimes, indices: tuple[int, ...]) -> StageTimes:
    """The layers ``indices``' times (``layer_times``) summed, each column in layer order."""
    out: StageTimes = {}
    for key, (rows, update) in both.items():
        picked = [rows[i] for i in indices]
        fwd, bwd, mem_s, again = (sum(row[k] for row in picked) for k in range(4))
        out[key] = (fwd, bwd, mem_s, again, update)
    return out
