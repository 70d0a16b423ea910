"""One GPU's memory in a layout (the rules in ``analysis.parallel``): weights, gradients and
optimizer states as the ZeRO stage divides them, the activations of the micro-batches the
pipeline schedule keeps in flight (``in_flight``; a block's under sequence parallelism,
``activation_bytes_per_block``), the logits, a recomputed block's tensors and the workspace
(``_stage_memory``)."""

from __future__ import annotations

from typing import Any

from ..model.layers import Step, Transformer, saved_bytes
from .memory import WORKSPACE_BYTES
from .parallel_layout import _Context


def activation_bytes_per_block(block: Transformer, step: Step, recompute: str, tp: int,
                               sequence_parallel: bool) -> int:
    """What one (sharded) block keeps for the backward pass: ``saved_bytes`` of the shard,
    with sequence parallelism its replicated part (``analysis.parallel``) divided by tp too."""
    kept = saved_bytes(block, step, recompute)
    if not sequence_parallel or tp == 1:
        return kept
    if recompute == "full":  # the block's input, kept sharded along the sequence
        return kept // tp
    t, h, e = step.tokens, block.hidden, step.e
    replicated = 4 * t * h * e + (2 * t * h if block.dropout else 0)
    return kept - replicated + replicated // tp


def in_flight(m: int, pp: int, s: int, vp: int = 1) -> int:
    """What stage ``s`` keeps in flight at its fullest: 1F1B, min(m, pp - s) micro-batches
    (its pp - s - 1 warm-up forwards and the one in its backward); interleaved (vp > 1), model
    chunks of a micro-batch: Megatron-LM's ``get_pp_rank_microbatches`` warms up 2 (pp - s - 1)
    + (vp - 1) pp chunk forwards (the micro-batch group its default, pp) and keeps one more, at
    most all m vp: on the first stage pp + (pp - 1) / vp micro-batches' worth, 1 + (pp - 1) /
    (pp vp) times 1F1B's pp. The chunks in flight are counted as spread evenly over the GPU's
    layers (its activations a micro-batch times ``in_flight`` / vp): exact for its blocks where
    the chunks are even, a little over for the last GPU's head (the final norm's and the output
    layer's inputs, of which at most one micro-batch of the model's last chunk is in flight)."""
    if vp == 1:
        return min(m, pp - s)
    return min(m * vp, 2 * (pp - s - 1) + (vp - 1) * pp + 1)


def _stage_memory(ctx: _Context, s: int, runs: list[tuple[Any, int]], dense: int,
                  expert: int) -> dict[str, int]:
    """One GPU of stage ``s`` (its layers as ``_runs``): weights, gradients and optimizer
    states by ZeRO stage, the activations of the micro-batches the schedule keeps in flight
    (``in_flight``; interleaved, that many of the GPU's chunks, each 1 / vp of its blocks), the
    workspace."""
    layout, step, zero = ctx.layout, ctx.step, ctx.layout.zero

    def part(per: int, divide: bool) -> int:
        if not divide:
            return (dense + expert) * per
        return -(-dense * per // layout.dp) + -(-expert * per // ctx.edp)

    kept = sum(count * (activation_bytes_per_block(layer, step, ctx.recompute, layout.tp,
                                                   ctx.sp)
                        if isinstance(layer, Transformer)
                        else saved_bytes(layer, step, ctx.recompute))
               for layer, count in runs)
    activations = kept * in_flight(ctx.m, layout.pp, s) if layout.vp == 1 else (
        kept * in_flight(ctx.m, layout.pp, s, layout.vp) // layout.vp)
    if s == layout.pp - 1:  # the logits the loss reads, one micro-batch at a time
        activations += step.tokens * (runs[-1][0].out_width or 0) * ctx.e
    if ctx.recompute == "full":  # one block's tensors while it is recomputed
        activations += max(saved_bytes(layer, step, "none") - saved_bytes(layer, step, "full")
                           for layer, _ in runs)
    return {"weights": part(ctx.e, zero >= 3), "gradients": part(ctx.grad_e, zero >= 2),
            "optimizer": part(ctx.state_e, zero >= 1), "activations": activations,
            "workspace": WORKSPACE_BYTES}
