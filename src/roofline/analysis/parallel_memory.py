"""One GPU's memory in a layout (the rules in ``analysis.parallel``): weights, gradients and
optimizer states as the ZeRO stage divides them, the activations of the micro-batches the
pipeline schedule keeps in flight (``in_flight``, interleaved which chunks,
``chunks_in_flight``; a block's under sequence parallelism,
``activation_bytes_per_block``), the logits, a recomputed block's tensors and the workspace
(``_stage_memory``; what a stage's layers keep whatever the layout's micro-batches,
``stage_activations``, worked out once for the layouts that share them, and held in flight,
``held_activations``)."""

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
    # forwards 0 .. n - 1, chunk (k mod pp vp) // pp: each whole round of pp vp forwards
    # runs pp of every chunk, the rest the first chunks' pp each in turn
    rounds, rest = divmod(in_flight(m, pp, s, vp), pp * vp)
    return tuple(rounds * pp + min(pp, max(0, rest - chunk * pp)) for chunk in range(vp))


def stage_activations(ctx: _Context, s: int, runs: list[tuple[Any, int]],
                      chunk_runs: list[list[tuple[Any, int]]] | None = None
                      ) -> tuple[tuple[int, ...], int]:
    """What the layers of stage ``s`` (as ``_runs``; interleaved, ``chunk_runs`` each chunk's)
    keep, whatever the micro-batches: the activations one micro-batch keeps, of each chunk (one
    figure, the stage's, under 1F1B or without chunks), and those held once (the last stage's
    logits, a recomputed block's tensors). The same in every layout whose shard and stages are
    these (``parallel_stage.stage_shape``); ``held_activations`` counts them in flight."""
    layout, step = ctx.layout, ctx.step

    def kept(layers: list[tuple[Any, int]]) -> int:
        return sum(count * (activation_bytes_per_block(layer, step, ctx.recompute, layout.tp,
                                                       ctx.sp)
                            if isinstance(layer, Transformer)
                            else saved_bytes(layer, step, ctx.recompute))
                   for layer, count in layers)

    if layout.vp == 1 or not chunk_runs:
        per_micro_batch: tuple[int, ...] = (kept(runs),)
    else:
        per_micro_batch = tuple(kept(chunk) for chunk in chunk_runs)
    once = 0
    if s == layout.pp - 1:  # the logits the loss reads, one micro-batch at a time
        once += step.tokens * (runs[-1][0].out_width or 0) * ctx.e
    if ctx.recompute == "full":  # one block's tensors while it is recomputed
        once += max(saved_bytes(layer, step, "none") - saved_bytes(layer, step, "full")
                    for layer, _ in runs)
    return per_micro_batch, once


def held_activations(ctx: _Context, s: int, kept: tuple[int, ...], once: int) -> int:
    """The activations stage ``s`` holds at its fullest: the micro-batches the schedule keeps
    in flight of ``kept``, what one micro-batch of each chunk keeps (``stage_activations``;
    ``in_flight`` of them, interleaved the chunk forwards ``chunks_in_flight`` counts), and
    those held ``once``."""
    layout = ctx.layout
    if layout.vp == 1 or len(kept) == 1:
        activations = kept[0] * in_flight(ctx.m, layout.pp, s)
    else:
        activations = sum(count * chunk for count, chunk in zip(
            chunks_in_flight(ctx.m, layout.pp, s, layout.vp), kept))
    return activations + once


def _stage_memory(ctx: _Context, activations: int, dense: int,
                  expert: int) -> dict[str, int]:
    """One GPU of a stage: weights, gradients and optimizer states (of its ``dense`` and
    ``expert`` parameters) by ZeRO stage, its ``activations`` (``held_activations``), the
    workspace."""
    layout, zero = ctx.layout, ctx.layout.zero

    def part(per: int, divide: bool) -> int:
        if not divide:
            return (dense + expert) * per
        return -(-dense * per // layout.dp) + -(-expert * per // ctx.edp)

    return {"weights": part(ctx.e, zero >= 3), "gradients": part(ctx.grad_e, zero >= 2),
            "optimizer": part(ctx.state_e, zero >= 1), "activations": activations,
            "workspace": WORKSPACE_BYTES}
