"""One pipeline stage of a layout on one GPU (``_stage``): its compute per micro-batch
(``parallel_times``), its tensor- and expert-parallel communication and point-to-point
transfers (``parallel_comm``; with interleaved stages one pair per model chunk,
``_pipeline_p2p``), its data-parallel collectives, its duplicated parameters' gradient
all-reduce over the tensor-parallel group (``_tp_grad_comm``) and share of the optimizer update,
and its memory (``parallel_memory``), at the roof and at the predicted times; a repeat's copies
worked out once (``_runs``), and what the stage's layers alone set once for every layout that
shares them (``StageShape``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..model.layers import Transformer
from .parallel_comm import (
    _dp_comm,
    _model_parallel_comm,
    _tp_grad_comm,
    crosses_nodes,
    wrap_crosses_nodes,
)
from .parallel_layout import _Context
from .parallel_memory import _stage_memory, held_activations, stage_activations
from .parallel_result import StageCost
from .parallel_times import StageTimes


def _expert_parameters(layer: Any) -> int:
    """A block's expert weights (and their biases), those this GPU holds: data-parallel
    over dp / ep GPUs (its router's weight is dense, over dp)."""
    return layer.expert_parameters if isinstance(layer, Transformer) else 0


@dataclass(frozen=True)
class StageShape:
    """What a stage's layers alone set (``stage_shape``), whatever the layout's dp, ZeRO stage
    and GPU count: its layers as ``_runs`` (interleaved, each chunk's), their parameters and
    the experts' among them, its tensor- and expert-parallel transfers of a micro-batch, the
    activations it keeps (``stage_activations``), and its point-to-point transfers by which of
    its boundaries cross nodes (``p2p``, filled as layouts ask, ``_pipeline_p2p``). The same
    for every stage over one shard (tensor and expert parallel, micro-batch) and sequence
    parallelism that holds the same layers at the same end of the pipeline (first, last or
    neither), at any depth: a layout search keeps one for all of them (``evaluate``)."""

    runs: list[tuple[Any, int]]
    chunks: list[list[tuple[Any, int]]] | None
    params: int
    expert: int
    tp_comm: float
    ep_comm: float
    kept: tuple[int, ...]
    once: int
    p2p: dict[tuple[bool, bool], float] = field(default_factory=dict, compare=False)


def stage_shape(ctx: _Context, s: int, runs: list[tuple[Any, int]],
                chunks: list[list[tuple[Any, int]]] | None = None) -> StageShape:
    """Stage ``s``'s ``StageShape`` (its layers as ``_runs``; ``chunks``: with interleaved
    stages, the layers of each model chunk the GPU holds, in order, as runs); of ``ctx`` it
    reads what the shard, sequence parallelism, pp and vp set."""
    tp_comm, ep_comm = _model_parallel_comm(ctx, runs)
    params = sum(layer.parameters * count for layer, count in runs)
    expert = sum(_expert_parameters(layer) * count for layer, count in runs)
    kept, once = stage_activations(ctx, s, runs, chunks)
    return StageShape(runs, chunks, params, expert, tp_comm, ep_comm, kept, once)


def _stage(ctx: _Context, s: int, shape: StageShape, times: StageTimes, parameters: int,
           dp_comms: dict[tuple[int, ...], float] | None = None,
           made: dict[tuple[Any, ...], tuple[StageCost, StageCost]] | None = None
           ) -> tuple[StageCost, StageCost]:
    """Stage ``s`` (its layers' ``StageShape``): its compute per micro-batch, its
    communication, its memory; at the roof and at the predicted times (``times``: the stage's
    ``stage_times``, the update over the shard's ``parameters``). Communication and memory do
    not depend on the times and are worked out once. ``dp_comms``: the data-parallel
    collectives (``_dp_comm``) by what they read of a stage and its layout, the parameters
    (dense, expert), tp, ep, dp, ZeRO stage and micro-batches, kept for the layouts
    ``evaluate`` is given one ``cache`` for (one fabric): Llama-2-70B's search over 8..4096
    GPUs asks 80,572 stages' and 8,854 differ. ``made``: the layout's stages made so far, by
    all that sets one apart from another of the same layout (its shape and times, its
    point-to-point transfers and the activations it holds): a stage like one made is that one
    (a deep pipeline's middle stages, all in flight alike: 53% of that search's over 64 GPU
    counts)."""
    layout = ctx.layout
    tp_comm, ep_comm = shape.tp_comm, shape.ep_comm
    p2p = (_pipeline_p2p(ctx, s, shape.chunks or [shape.runs], shape.p2p) if layout.pp > 1
           else 0.0)
    activations = held_activations(ctx, s, shape.kept, shape.once)
    alike = (id(shape), id(times), p2p, activations)
    if made is not None and alike in made:
        return made[alike]
    params, expert = shape.params, shape.expert
    dense = params - expert
    key = (dense, expert, layout.tp, layout.ep, layout.dp, layout.zero, ctx.m)
    dp_comm = None if dp_comms is None else dp_comms.get(key)
    if dp_comm is None:
        dp_comm = _dp_comm(ctx, dense, expert)
        if dp_comms is not None:
            dp_comms[key] = dp_comm
    grad_bytes, tp_grad = _tp_grad_comm(ctx, shape.runs)
    sharded_update = (dense / (layout.dp if layout.zero >= 1 else 1)
                      + expert / (ctx.edp if layout.zero >= 1 else 1))
    memory = _stage_memory(ctx, activations, dense, expert)

    def timed(predicted: bool) -> StageCost:
        fwd, bwd, mem_s, again, update = times[predicted]
        window = {0: bwd, 1: bwd, 2: ctx.m * bwd, 3: ctx.m * (fwd + bwd)}[layout.zero]
        return StageCost.of(fwd, bwd, mem_s, tp_comm, ep_comm, p2p,
                            update / max(1, parameters) * sharded_update, dp_comm, window,
                            params, memory, again, tp_grad, grad_bytes)

    both = timed(False), timed(True)
    if made is not None:
        made[alike] = both
    return both


def _runs(pieces: Iterable[tuple[Any, int]]) -> list[tuple[Any, int]]:
    """Layers given as (layer, how many in a row) pieces (``Layers.runs_in``) as runs, pieces
    of one stored layer in a row joined: a repeat's copies are one object, so what a copy
    costs is worked out once."""
    runs: list[tuple[Any, int]] = []
    for layer, count in pieces:
        if runs and runs[-1][0] is layer:
            runs[-1] = (layer, runs[-1][1] + count)
        else:
            runs.append((layer, count))
    return runs


def _pipeline_p2p(ctx: _Context, s: int, chunks: list[list[tuple[Any, int]]],
                  memo: dict[tuple[bool, bool], float] | None = None) -> float:
    """Pipeline GPU ``s``'s point-to-point transfers of one micro-batch, ``chunks`` the layers
    (as ``_runs``) of each model chunk it holds (one under 1F1B, vp interleaved): each chunk
    sends the activations its last layer hands forward (not the model's last chunk: its output
    layer's are the logits, which stay) and the gradient of its first layer's input back (not
    the first chunk's). Interleaved, every chunk boundary is between two GPUs (chunk c on GPU c mod
    pp), v times a 1F1B middle stage's sends, and GPU pp - 1's forward sends and GPU 0's
    backward ones cross the wrap-around boundary (``wrap_crosses_nodes``). With sequence
    parallelism each GPU of the tensor-parallel group holds, and sends, T / tp tokens of them
    (Megatron-LM's ``get_tensor_shapes``). ``memo``: the sum by which boundaries cross nodes,
    the rest being the same (a ``StageShape``'s)."""
    layout, fabric, e = ctx.layout, ctx.fabric, ctx.e
    pp, gpn = layout.pp, fabric.gpus_per_node
    stride = layout.tp * layout.dp
    forward = (crosses_nodes(s, stride, gpn) if s < pp - 1
               else wrap_crosses_nodes(pp, stride, gpn))
    backward = (crosses_nodes(s - 1, stride, gpn) if s > 0
                else wrap_crosses_nodes(pp, stride, gpn))
    if memo is not None and (forward, backward) in memo:
        return memo[forward, backward]
    sent = -(-ctx.step.tokens // (layout.tp if ctx.sp else 1))
    last = pp * layout.vp - 1
    p2p = 0.0
    for k, runs in enumerate(chunks):
        chunk, first, final = s + k * pp, runs[0][0], runs[-1][0]
        if chunk < last:
            p2p += fabric.p2p_s(sent * (final.out_width or 0) * e, forward)
        if chunk > 0:
            p2p += fabric.p2p_s(sent * (first.in_width or 0) * e, backward)
    if memo is not None:
        memo[forward, backward] = p2p
    return p2p
