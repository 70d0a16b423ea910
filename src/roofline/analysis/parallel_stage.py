"""One pipeline stage of a layout on one GPU (``_stage``): its compute per micro-batch
(``parallel_times``), its tensor- and expert-parallel communication and point-to-point
transfers (``parallel_comm``; with interleaved stages one pair per model chunk,
``_pipeline_p2p``), its data-parallel collectives, its duplicated parameters' gradient
all-reduce over the tensor-parallel group (``_tp_grad_comm``) and share of the optimizer update,
and its memory (``parallel_memory``), at the roof and at the predicted times; a repeat's copies
worked out once (``_runs``)."""

from __future__ import annotations

from collections.abc import Iterable
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
from .parallel_memory import _stage_memory
from .parallel_result import StageCost
from .parallel_times import StageTimes


def _expert_parameters(layer: Any) -> int:
    """A block's expert weights (and their biases), those this GPU holds: data-parallel
    over dp / ep GPUs (its router's weight is dense, over dp)."""
    return layer.expert_parameters if isinstance(layer, Transformer) else 0


def _stage(ctx: _Context, s: int, runs: list[tuple[Any, int]], times: StageTimes,
           parameters: int,
           chunks: list[list[tuple[Any, int]]] | None = None) -> tuple[StageCost, StageCost]:
    """Stage ``s`` (its layers as ``_runs``): its compute per micro-batch, its communication,
    its memory; at the roof and at the predicted times (``times``: the stage's
    ``stage_times``, the update over the shard's ``parameters``). Communication and memory do
    not depend on the times and are worked out once. ``chunks``: with interleaved stages, the
    layers of each model chunk the GPU holds, in order, as runs (``_pipeline_p2p``,
    ``_stage_memory``)."""
    layout = ctx.layout
    tp_comm, ep_comm = _model_parallel_comm(ctx, runs)
    p2p = _pipeline_p2p(ctx, s, chunks or [runs]) if layout.pp > 1 else 0.0
    params = sum(layer.parameters * count for layer, count in runs)
    expert = sum(_expert_parameters(layer) * count for layer, count in runs)
    dense = params - expert
    dp_comm = _dp_comm(ctx, dense, expert)
    grad_bytes, tp_grad = _tp_grad_comm(ctx, runs)
    sharded_update = (dense / (layout.dp if layout.zero >= 1 else 1)
                      + expert / (ctx.edp if layout.zero >= 1 else 1))
    memory = _stage_memory(ctx, s, runs, dense, expert, chunks)

    def timed(predicted: bool) -> StageCost:
        fwd, bwd, mem_s, again, update = times[predicted]
        window = {0: bwd, 1: bwd, 2: ctx.m * bwd, 3: ctx.m * (fwd + bwd)}[layout.zero]
        return StageCost(fwd, bwd, mem_s, tp_comm, ep_comm, p2p,
                         update / max(1, parameters) * sharded_update, dp_comm, window, params,
                         memory, again, tp_grad, grad_bytes)

    return timed(False), timed(True)


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


def _pipeline_p2p(ctx: _Context, s: int, chunks: list[list[tuple[Any, int]]]) -> float:
    """Pipeline GPU ``s``'s point-to-point transfers of one micro-batch, ``chunks`` the layers
    (as ``_runs``) of each model chunk it holds (one under 1F1B, vp interleaved): each chunk
    sends the activations its last layer hands forward (not the model's last chunk: its output
    layer's are the logits, which stay) and the gradient of its first layer's input back (not
    the first chunk's). Interleaved, every chunk boundary is between two GPUs (chunk c on GPU c mod
    pp), v times a 1F1B middle stage's sends, and GPU pp - 1's forward sends and GPU 0's
    backward ones cross the wrap-around boundary (``wrap_crosses_nodes``). With sequence
    parallelism each GPU of the tensor-parallel group holds, and sends, T / tp tokens of them
    (Megatron-LM's ``get_tensor_shapes``)."""
    layout, fabric, e = ctx.layout, ctx.fabric, ctx.e
    pp, gpn = layout.pp, fabric.gpus_per_node
    stride, sent = layout.tp * layout.dp, -(-ctx.step.tokens // (layout.tp if ctx.sp else 1))
    last = pp * layout.vp - 1
    forward = (crosses_nodes(s, stride, gpn) if s < pp - 1
               else wrap_crosses_nodes(pp, stride, gpn))
    backward = (crosses_nodes(s - 1, stride, gpn) if s > 0
                else wrap_crosses_nodes(pp, stride, gpn))
    p2p = 0.0
    for k, runs in enumerate(chunks):
        chunk, first, final = s + k * pp, runs[0][0], runs[-1][0]
        if chunk < last:
            p2p += fabric.p2p_s(sent * (final.out_width or 0) * e, forward)
        if chunk > 0:
            p2p += fabric.p2p_s(sent * (first.in_width or 0) * e, backward)
    return p2p
