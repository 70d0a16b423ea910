"""One GPU's memory in a layout (the rules in ``analysis.parallel``): weights, gradients and
optimizer states as the ZeRO stage divides them, the activations of the micro-batches the
pipeline schedule keeps in flight (``in_flight``, interleaved which chunks,
``chunks_in_flight``; a block's under sequence parallelism,
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
    (pp vp) times 1F1B's pp. Which chunks they are: ``chunks_in_flight``."""
    if vp == 1:
        return min(m, pp - s)
    return min(m * vp, 2 * (pp - s - 1) + (vp - 1) * pp + 1)


def chunks_in_flight(m: int, pp: int, s: int, vp: int) -> tuple[int, ...]:
    """Interleaved (vp > 1): of the ``in_flight`` chunk forwards stage ``s`` keeps at its
    fullest, how many are each of its vp chunks. Megatron-Core runs a GPU's chunk forwards in
    groups of pp micro-batches, chunk by chunk (forward k runs its local chunk (k mod pp vp) //
    pp, ``get_model_chunk_id``): pp = 4, vp = 2, m = 8, the first stage's 11 are chunk 0 of
    micro-batches 0-3, chunk 1 of 0-3, chunk 0 of 4-6 (7 and 4); the last stage's 5 are chunk
    0 of 0-3 and one of its last chunk, whose backward follows each forward at once (4 and 1:
    the model's head, the final norm's and the output layer's inputs, is kept one micro-batch
    deep, as under 1F1B; until 0.9.0 the chunks were spread evenly over the GPU's layers, the
    head counted (v - 1) pp / v + 1 / v deep: 12.25 micro-batches of it for pp 16, vp 4)."""
    counts = [0] * vp
    for k in range(in_flight(m, pp, s, vp)):
        counts[(k % (pp * vp)) // pp] += 1
    return tuple(counts)


def _stage_memory(ctx: _Context, s: int, runs: list[tuple[Any, int]], dense: int,
                  expert: int,
                  chunk_runs: list[list[tuple[Any, int]]] | None = None) -> dict[str, int]:
    """One GPU of stage ``s`` (its layers as ``_runs``): weights, gradients and optimizer
    states by ZeRO stage, the activations of the micro-batches the schedule keeps in flight
    (``in_flight``; interleaved, ``chunk_runs`` each chunk's layers, the chunk forwards
    ``chunks_in_flight`` counts), the workspace."""
    layout, step, zero = ctx.layout, ctx.step, ctx.layout.zero

    def part(per: int, divide: bool) -> int:
        if not divide:
            return (dense + expert) * per
        return -(-dense * per // layout.dp) + -(-expert * per // ctx.edp)

    def kept(layers: list[tuple[Any, int]]) -> int:
        return sum(count * (activation_bytes_per_block(layer, step, ctx.recompute, layout.tp,
                                                       ctx.sp)
                            if isinstance(layer, Transformer)
                            else saved_bytes(layer, step, ctx.recompute))
                   for layer, count in layers)

    if layout.vp == 1 or not chunk_runs:
        activations = kept(runs) * in_flight(ctx.m, layout.pp, s)
    else:
        activations = sum(count * kept(chunk) for count, chunk in zip(
            chunks_in_flight(ctx.m, layout.pp, s, layout.vp), chunk_runs))
    if s == layout.pp - 1:  # the logits the loss reads, one micro-batch at a time
        activations += step.tokens * (runs[-1][0].out_width or 0) * ctx.e
    if ctx.recompute == "full":  # one block's tensors while it is recomputed
        activations += max(saved_bytes(layer, step, "none") - saved_bytes(layer, step, "full")
                           for layer, _ in runs)
    return {"weights": part(ctx.e, zero >= 3), "gradients": part(ctx.grad_e, zero >= 2),
            "optimizer": part(ctx.state_e, zero >= 1), "activations": activations,
            "workspace": WORKSPACE_BYTES}
