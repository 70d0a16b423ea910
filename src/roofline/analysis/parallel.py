"""A training step split over GPUs: tensor, sequence, pipeline, data (ZeRO) and expert
parallelism, per GPU. Each rule is stated here; the collectives' times are
``analysis.collectives``.

Tensor parallelism (``tp``; Megatron-LM: Shoeybi et al. 2019, Narayanan et al., SC'21): in every
transformer block the QKV projection and the FFN's up (and gate) projection are split by
columns (each GPU computes heads / tp query heads, kv_heads / tp KV heads and ffn / tp FFN
columns), the output projection and the FFN's down projection by rows (their K is divided), so
each GPU runs the block with heads, kv_heads and ffn divided by tp (``shard_network``), and the
existing analysis (alignment, tile and wave quantization, batch advice) applies to the shards.
The embedding and the output layer (the linear layer whose outputs are the vocabulary) are
vocabulary-parallel: vocab / tp rows, the vocabulary first padded to a multiple of 128 tp as
Megatron-LM does (``--make-vocab-size-divisible-by 128``). Any other layer (a norm, a linear
layer that is not the logits) runs whole on every GPU of the group (``replicated``). tp must
divide heads, kv_heads and ffn (one line otherwise). Communication per micro-batch of T = b s
tokens (Narayanan et al., sec. 2.3: "two all-reduces in the forward pass and two in the
backward pass" per layer): each block all-reduces T h elements twice in the forward pass and
twice in the backward pass; the vocabulary-parallel embedding once in the forward pass (T h),
the output layer once in the backward pass (its input gradient, T h) and its cross entropy 3
times T fp32 values (the maximum, the sum of exponentials, the target logit).

Sequence parallelism (``sequence_parallel``; Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models", 2022): each all-reduce becomes a reduce-scatter and
an all-gather (the same bytes and ring steps, so the same time); the norms, dropouts and
residual adds run on T / tp tokens (their op time is divided by tp) and the activations they
keep are divided by tp. Activation memory per block (the paper's sec. 4.2, with its 2-byte
activations, dropout and naive attention): sbh (34 + 5as/h) without TP, sbh (10 + 24/t +
5as/(ht)) with TP (10 sbh replicated: the two norms' inputs, the inputs of the QKV and the first
FFN projection, the two dropout masks), sbh/t (34 + 5as/h) with TP and SP. The replicated part
here is what ``Transformer.saved_bytes`` counts for those tensors: 4 T h e + 2 T h (masks).

Pipeline parallelism (``pp``): the transformer blocks are split into pp stages as evenly as
they go (the first ones take one more when they do not divide); the layers before the first
block (embedding) join the first stage, those after the last block (final norm, output layer)
the last. Schedule 1F1B (Narayanan et al., sec. 2.2): with m micro-batches a step takes (m + p
- 1) times the slowest stage's micro-batch time, the bubble (p - 1) / (m + p - 1) of the step;
stage i keeps the activations of min(m, p - i) micro-batches (the first stage p). Between
stages each micro-batch sends T h elements forward and their gradient backward
(point-to-point). Ranks run tensor first, then data, then pipeline (as Megatron-LM orders
them), so stage i holds the tp x dp ranks from i tp dp on and each GPU sends to the one tp dp
ranks later or earlier: over the inter-node link where some such pair sits in two nodes
(``crosses_nodes``), else the intra-node link.

Data parallelism (``dp``) with ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward
Training Trillion Parameter Models", SC'20): per GPU, Psi parameters (its TP and pipeline
shard), weights 2 Psi, gradients 2 Psi and Adam's fp32 states 12 Psi bytes in mixed precision;
stage 1 divides the optimizer states by Nd = dp, stage 2 the gradients too, stage 3 the weights
too (FSDP's full sharding is stage 3). Communication of the gradients G = Psi x gradient size:
stages 0 and 1 all-reduce them once a step (stage 1 as a reduce-scatter and an all-gather of
the updated weights: the same volume); stage 2 reduce-scatters them after every micro-batch's
backward and all-gathers the updated weights once; stage 3 all-gathers the weights before every
micro-batch's forward and again before its backward and reduce-scatters the gradients (with
one micro-batch, 3 (Nd - 1)/Nd Psi: 1.5 times the all-reduce, the paper's sec. 7.2.2). ZeRO 2
and 3 are not combined with pipeline parallelism (DeepSpeed refuses it; Megatron-LM's
distributed optimizer is stage 1).

Overlap, an assumption stated in every output: tensor-, expert- and pipeline-parallel
transfers sit on the critical path (exposed); the data-parallel collectives hide behind
backward compute where they can: stages 0 and 1 behind the last micro-batch's backward pass,
stage 2 behind every backward pass, stage 3 behind every forward and backward pass. What does
not fit in that window is exposed; ``step_s`` counts it, ``step_no_overlap_s`` counts it all.

Expert parallelism (``ep``, mixture-of-experts blocks): the experts are split over ep GPUs of
the data-parallel group (ep divides dp and the experts); each GPU holds experts / ep of them
and, with uniform routing, computes the same T k expert rows as before. Each MoE block
all-to-alls the T k routed rows of h elements four times per micro-batch (dispatch and combine,
forward and backward). Expert weights are data-parallel over dp / ep GPUs. The router is not
split, by expert nor by tensor parallelism (Megatron-Core's ``TopKRouter`` keeps its E x h weight
whole on every GPU): each GPU scores its own tokens against all E experts before the dispatch,
so its GEMMs keep N = E, its softmax and logits T E, and its weight is a dense parameter
(``Transformer.expert_shards``, ``local_experts``).

Two step times per layout: the roofline (``step_s``: every GEMM and op at its roof, a lower
bound) and the prediction (``predicted_step_s``: every GEMM and op at analyze's
``predicted_time_s``, on the device's prediction basis), each with the same communication,
pipeline and overlap rules; layouts are ranked by the prediction, which sees what the roof does
not (a small micro-batch's or a narrow tensor-parallel shard's tile waste, a kernel's fixed
time).

Not modelled: the work recomputation adds, interleaved (virtual) pipeline stages, context
parallelism, ZeRO-3's gathered-layer buffer, compute-communication contention.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError, option
from ..hardware.spec import HardwareSpec
from ..model.dtypes import itemsize
from ..model.layers import Embedding, Linear, Step, Transformer, saved_bytes
from ..model.network import Network
from .collectives import Fabric
from .memory import MASTER_BYTES, OPTIMIZER_STATE_BYTES, WORKSPACE_BYTES
from .parallel_layout import (
    ZERO_STAGES,
    Layout,
    _Context,
    check_layout,
    check_training,
    divisors,
)
from .parallel_result import LayoutResult, StageCost, pipeline_bubble
from .parallel_shard import (
    _vocabularies,
    blocks_of,
    padded_vocab,
    replicated_layers,
    shard_network,
    split_stages,
    unnamed_layers,
)
from .parallel_times import StageTimes, layer_times, stage_times
from .report import Report, analyze

#: the names callers import from here, some of them defined in the parallel_* modules
__all__ = ["ZERO_STAGES", "Layout", "LayoutResult", "activation_bytes_per_block", "blocks_of",
           "check_layout", "check_training", "crosses_nodes", "divisors", "evaluate",
           "padded_vocab", "pipeline_bubble", "shard_network", "shard_report", "split_stages"]

CE_ALLREDUCES = 3  # the vocabulary-parallel cross entropy: max, sum of exp, target logit
CE_BYTES = 4  # fp32


def activation_bytes_per_block(block: Transformer, step: Step, recompute: str, tp: int,
                               sequence_parallel: bool) -> int:
    """What one (sharded) block keeps for the backward pass: ``saved_bytes`` of the shard,
    with sequence parallelism its replicated part (module docstring) divided by tp too."""
    kept = saved_bytes(block, step, recompute)
    if not sequence_parallel or tp == 1:
        return kept
    if recompute == "full":  # the block's input, kept sharded along the sequence
        return kept // tp
    t, h, e = step.tokens, block.hidden, step.e
    replicated = 4 * t * h * e + (2 * t * h if block.dropout else 0)
    return kept - replicated + replicated // tp


def _expert_parameters(layer: Any) -> int:
    """A block's expert weights (and their biases), those this GPU holds: data-parallel
    over dp / ep GPUs (its router's weight is dense, over dp)."""
    return layer.expert_parameters if isinstance(layer, Transformer) else 0


def evaluate(network: Network, hardware: HardwareSpec, layout: Layout, batch: int,
             fabric: Fabric, report: Report | None = None,
             cache: dict[tuple[Any, ...], Any] | None = None) -> LayoutResult:
    """``layout`` for a global batch of ``batch`` sequences (module docstring). ``report``: the
    sharded network analyzed at the micro-batch (``shard_report``), when already made;
    ``cache``: its ``layer_times`` by (``id(report)``, sp_tp) and each stage's
    ``stage_times`` by (``id(report)``, sp_tp, the stage's layers), kept by a caller that
    evaluates many layouts over the same reports (``plan``)."""
    check_layout(network, layout)
    per_rank = layout.dp * layout.micro_batch
    if batch % per_rank:
        raise InputError(network.source, "", f"the global batch {batch} is not a multiple of "
                                             f"dp x micro-batch = {layout.dp} x "
                                             f"{layout.micro_batch} ({option('batch')})")
    if report is None:
        report = shard_report(network, hardware, layout)
    sharded = report.network
    e = itemsize(sharded.operand_dtype)
    state_e = OPTIMIZER_STATE_BYTES[sharded.optimizer] + (
        MASTER_BYTES if e < MASTER_BYTES and sharded.optimizer != "none" else 0)
    ctx = _Context(layout, fabric, sharded.step(), batch // per_rank, e,
                   itemsize(sharded.grad_accumulation) if sharded.grad_accumulation else e,
                   state_e, sharded.recompute,
                   {padded_vocab(v, layout.tp) // layout.tp for v in _vocabularies(network)})
    stage_indices = split_stages(sharded, layout.pp)
    sp_tp = layout.tp if ctx.sp else 1
    if cache is None:
        both = layer_times(report, sp_tp)
    else:
        both = cache.get((id(report), sp_tp)) or cache.setdefault(
            (id(report), sp_tp), layer_times(report, sp_tp))

    layers = unnamed_layers(sharded)

    def sums(indices: tuple[int, ...]) -> StageTimes:
        if cache is None:
            return stage_times(both, indices)
        key = (id(report), sp_tp, indices)  # layouts alike but for dp, ZeRO or m share it
        found = cache.get(key)
        return found if found is not None else cache.setdefault(key,
                                                                stage_times(both, indices))

    stages = [_stage(ctx, s, [layers[i] for i in indices], sums(indices), sharded.parameters)
              for s, indices in enumerate(stage_indices)]
    blocks = [layer for layer in layers if isinstance(layer, Transformer)]
    allreduce = ctx.step.tokens * blocks[0].hidden * e if blocks else 0
    capacity = hardware.memory_capacity_bytes
    return LayoutResult(layout, batch, sharded.seq or 1, ctx.m,
                        tuple(roof for roof, _ in stages),
                        None if capacity is None else round(capacity), allreduce,
                        tuple(replicated_layers(network, layout.tp)), report,
                        tuple(predicted for _, predicted in stages))


def _stage(ctx: _Context, s: int, layers: list[Any], times: StageTimes,
           parameters: int) -> tuple[StageCost, StageCost]:
    """Stage ``s``: its compute per micro-batch, its communication, its memory; at the roof
    and at the predicted times (``times``: the stage's ``stage_times``, the update over the
    shard's ``parameters``). Communication and memory do not depend on the times and are
    worked out once."""
    layout, fabric, t, e = ctx.layout, ctx.fabric, ctx.step.tokens, ctx.e
    runs = _runs(layers)
    tp_comm, ep_comm = _model_parallel_comm(ctx, runs)
    p2p = 0.0
    if layout.pp > 1:
        # what crosses each boundary: the activations the stage's last layer hands forward
        # (not the last stage's: its output layer's are the logits, which stay), and the
        # gradient of its first layer's input sent back (not the first stage's)
        stride = layout.tp * layout.dp
        if s < layout.pp - 1:
            p2p += fabric.p2p_s(t * (layers[-1].out_width or 0) * e,
                                crosses_nodes(s, stride, fabric.gpus_per_node))
        if s > 0:
            p2p += fabric.p2p_s(t * (layers[0].in_width or 0) * e,
                                crosses_nodes(s - 1, stride, fabric.gpus_per_node))
    params = sum(layer.parameters * count for layer, count in runs)
    expert = sum(_expert_parameters(layer) * count for layer, count in runs)
    dense = params - expert
    dp_comm = _dp_comm(ctx, dense, expert)
    sharded_update = (dense / (layout.dp if layout.zero >= 1 else 1)
                      + expert / (ctx.edp if layout.zero >= 1 else 1))
    memory = _stage_memory(ctx, s, runs, dense, expert)

    def timed(predicted: bool) -> StageCost:
        fwd, bwd, mem_s, update = times[predicted]
        window = {0: bwd, 1: bwd, 2: ctx.m * bwd, 3: ctx.m * (fwd + bwd)}[layout.zero]
        return StageCost(fwd, bwd, mem_s, tp_comm, ep_comm, p2p,
                         update / max(1, parameters) * sharded_update, dp_comm, window, params,
                         memory)

    return timed(False), timed(True)


def crosses_nodes(boundary: int, stride: int, gpus_per_node: int) -> bool:
    """Whether the boundary after stage ``boundary`` (its ``stride`` ranks from ``boundary x
    stride`` on, each sending to the rank ``stride`` later) has a pair in two nodes of
    ``gpus_per_node``: some node's first rank M with boundary x stride < M <= the last sender's
    partner, (boundary + 2) x stride - 1."""
    first = boundary * stride
    return (first // gpus_per_node + 1) * gpus_per_node < first + 2 * stride


def _runs(layers: list[Any]) -> list[tuple[Any, int]]:
    """``layers`` as (layer, how many times in a row): a repeat's unnamed copies are one
    object (``unnamed_layers``), so what a copy costs is worked out once."""
    runs: list[tuple[Any, int]] = []
    for layer in layers:
        if runs and runs[-1][0] is layer:
            runs[-1] = (layer, runs[-1][1] + 1)
        else:
            runs.append((layer, 1))
    return runs


def _model_parallel_comm(ctx: _Context, runs: list[tuple[Any, int]]) -> tuple[float, float]:
    """Tensor- and expert-parallel communication of one micro-batch on these layers (as
    ``_runs``), each copy's transfers added in layer order."""
    tp_comm = ep_comm = 0.0
    for layer, count in runs:
        tp_times, ep_times = _layer_comm(ctx, layer)
        for _ in range(count):
            for time in tp_times:
                tp_comm += time
            for time in ep_times:
                ep_comm += time
    return tp_comm, ep_comm


def _layer_comm(ctx: _Context, layer: Any) -> tuple[list[float], list[float]]:
    """The tensor- and expert-parallel transfers of one micro-batch on one layer, each a
    time."""
    tp, fabric, t, e = ctx.layout.tp, ctx.fabric, ctx.step.tokens, ctx.e
    if isinstance(layer, Transformer):
        ep = []
        if layer.experts and ctx.layout.ep > 1:
            routed = t * layer.top_k * layer.hidden * e
            ep = [4 * fabric.time_s("all-to-all", routed, ctx.layout.ep, tp)]
        return [4 * fabric.time_s("all-reduce", t * layer.hidden * e, tp, 1)], ep
    if isinstance(layer, Embedding):
        return [fabric.time_s("all-reduce", t * layer.dim * e, tp, 1)], []
    if isinstance(layer, Linear) and layer.out_features in ctx.vocabularies and tp > 1:
        return [fabric.time_s("all-reduce", t * layer.in_features * e, tp, 1),
                CE_ALLREDUCES * fabric.time_s("all-reduce", t * CE_BYTES, tp, 1)], []
    return [], []


def _dp_comm(ctx: _Context, dense: int, expert: int) -> float:
    """The data-parallel collectives of one step, by ZeRO stage (module docstring): dense
    weights over dp GPUs tp apart, expert weights over dp / ep GPUs tp ep apart."""
    layout, fabric, m = ctx.layout, ctx.fabric, ctx.m
    total = 0.0
    for group, stride, count in ((layout.dp, layout.tp, dense),
                                 (ctx.edp, layout.tp * layout.ep, expert)):
        grads, weights = count * ctx.grad_e, count * ctx.e
        if layout.zero <= 1:
            total += fabric.time_s("all-reduce", grads, group, stride)
        elif layout.zero == 2:
            total += (m * fabric.time_s("reduce-scatter", grads, group, stride)
                      + fabric.time_s("all-gather", weights, group, stride))
        else:
            total += m * (2 * fabric.time_s("all-gather", weights, group, stride)
                          + fabric.time_s("reduce-scatter", grads, group, stride))
    return total


def _stage_memory(ctx: _Context, s: int, runs: list[tuple[Any, int]], dense: int,
                  expert: int) -> dict[str, int]:
    """One GPU of stage ``s`` (its layers as ``_runs``): weights, gradients and optimizer
    states by ZeRO stage, the activations of the micro-batches 1F1B keeps in flight, the
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
    activations = kept * min(ctx.m, layout.pp - s)
    if s == layout.pp - 1:  # the logits the loss reads, one micro-batch at a time
        activations += step.tokens * (runs[-1][0].out_width or 0) * ctx.e
    if ctx.recompute == "full":  # one block's tensors while it is recomputed
        activations += max(saved_bytes(layer, step, "none") - saved_bytes(layer, step, "full")
                           for layer, _ in runs)
    return {"weights": part(ctx.e, zero >= 3), "gradients": part(ctx.grad_e, zero >= 2),
            "optimizer": part(ctx.state_e, zero >= 1), "activations": activations,
            "workspace": WORKSPACE_BYTES}


def shard_report(network: Network, hardware: HardwareSpec, layout: Layout,
                 quantization: bool = False) -> Report:
    """One GPU's step at the layout's micro-batch: the tensor- and expert-parallel shard
    analyzed like any network (its GEMMs' shapes, alignment, quantization and advice)."""
    check_layout(network, layout)
    sharded = shard_network(network, layout.tp, layout.ep)
    return analyze(sharded.with_overrides(batch=layout.micro_batch), hardware, quantization)


