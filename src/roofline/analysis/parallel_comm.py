"""A stage's collectives, each a time on the layout's fabric (``analysis.collectives``; the rules
in ``analysis.parallel``): tensor parallelism's all-reduces of each block, the embedding and the
logits (with the vocabulary-parallel cross entropy's, ``CE_ALLREDUCES``) and expert
parallelism's all-to-alls (``_layer_comm``, ``_model_parallel_comm``), data parallelism's by
ZeRO stage (``_dp_comm``), the once-a-step all-reduce over the tensor-parallel group of the
gradients of the parameters each of its GPUs holds whole (``duplicated_parameters``,
``_tp_grad_comm``), and whether a pipeline boundary's transfers cross nodes
(``crosses_nodes``; the interleaved schedule's wrap from the last stage to the first,
``wrap_crosses_nodes``)."""

from __future__ import annotations

from typing import Any

from ..model.layers import Embedding, Linear, Norm, Transformer, mla
from ..model.repeated_sum import repeated_sum
from .parallel_layout import _Context

CE_ALLREDUCES = 3  # the vocabulary-parallel cross entropy: max, sum of exp, target logit
CE_BYTES = 4  # fp32
#: A block's tensor- (and expert-) parallel transfers its forward pass makes, made again where
#: full recomputation runs that forward once more in the backward pass
RECOMPUTED_TRANSFERS = 2


def crosses_nodes(boundary: int, stride: int, gpus_per_node: int) -> bool:
    """Whether the boundary after stage ``boundary`` (its ``stride`` ranks from ``boundary x
    stride`` on, each sending to the rank ``stride`` later) has a pair in two nodes of
    ``gpus_per_node``: some node's first rank M with boundary x stride < M <= the last sender's
    partner, (boundary + 2) x stride - 1."""
    first = boundary * stride
    return (first // gpus_per_node + 1) * gpus_per_node < first + 2 * stride


def wrap_crosses_nodes(pp: int, stride: int, gpus_per_node: int) -> bool:
    """Whether the interleaved schedule's wrap-around boundary, from the last pipeline stage's
    chunk to the first stage's next one (ranks ``(pp - 1) stride + j`` to ``j``, j below
    ``stride``), has a pair in two nodes: the ranks are ``d = (pp - 1) stride`` apart, so
    always where d reaches a node, else where some j's place in its node, at most
    min(stride, gpus_per_node) - 1, is d or less from the node's end."""
    d = (pp - 1) * stride
    return d >= gpus_per_node or min(stride, gpus_per_node) - 1 >= gpus_per_node - d


def _model_parallel_comm(ctx: _Context, runs: list[tuple[Any, int]]) -> tuple[float, float]:
    """Tensor- and expert-parallel communication of one micro-batch on these layers (as
    ``_runs``), each copy's transfers added in layer order."""
    tp_comm = ep_comm = 0.0
    for layer, count in runs:
        tp_times, ep_times = _layer_comm(ctx, layer)
        if count > 1:  # a repeat's copies added at once, as one by one (repeated_sum)
            tp_comm = repeated_sum(tp_comm, tp_times, count)
            ep_comm = repeated_sum(ep_comm, ep_times, count)
            continue
        for time in tp_times:
            tp_comm += time
        for time in ep_times:
            ep_comm += time
    return tp_comm, ep_comm


def _layer_comm(ctx: _Context, layer: Any) -> tuple[list[float], list[float]]:
    """The tensor- and expert-parallel transfers of one micro-batch on one layer, each a
    time. A block's are four, two in its forward pass and two in its backward; with full
    recomputation its forward runs again in the backward pass, transfers included (the
    all-reduces, or all-gather and reduce-scatter, of its tensor-parallel projections; an
    MoE block's dispatch and combine): six (``RECOMPUTED_TRANSFERS``)."""
    tp, fabric, t, e = ctx.layout.tp, ctx.fabric, ctx.step.tokens, ctx.e
    if isinstance(layer, Transformer):
        scale = 1 + (RECOMPUTED_TRANSFERS / 4 if ctx.recompute == "full" else 0)
        if not layer.experts:
            return [4 * scale * fabric.time_s("all-reduce", t * layer.hidden * e, tp, 1)], []
        tp_times, ep_times = _moe_comm(ctx, layer)
        return [scale * time for time in tp_times], [scale * time for time in ep_times]
    if isinstance(layer, Embedding):
        return [fabric.time_s("all-reduce", t * layer.dim * e, tp, 1)], []
    if isinstance(layer, Linear) and layer.out_features in ctx.vocabularies and tp > 1:
        return [fabric.time_s("all-reduce", t * layer.in_features * e, tp, 1),
                CE_ALLREDUCES * fabric.time_s("all-reduce", t * CE_BYTES, tp, 1)], []
    return [], []


def _moe_comm(ctx: _Context, layer: Transformer) -> tuple[list[float], list[float]]:
    """A mixture-of-experts block's transfers of one micro-batch, as Megatron-Core's all-to-all
    token dispatcher moves them (``MoEAlltoAllTokenDispatcher``: A2A over EP, then AG over TP;
    RS over TP, then A2A over EP): the attention's two all-reduces of T h; each GPU all-to-alls
    the routed rows of its own T / tp tokens (sequence parallel: Megatron-Core refuses MoE with
    tp > 1 without it) four times (dispatch and combine, forward and backward), and the
    expert-tensor-parallel group (tp GPUs, Megatron-LM's default
    ``expert_tensor_parallel_size``) all-gathers the T k rows its experts run and
    reduce-scatters their outputs, forward and backward. Until 0.9.0 each GPU all-to-alled all T
    tokens' rows (tp times the bytes) and the FFN's all-reduces were of T h."""
    tp, ep, fabric, t, e = ctx.layout.tp, ctx.layout.ep, ctx.fabric, ctx.step.tokens, ctx.e
    row = layer.top_k * layer.hidden * e  # one token's routed rows
    tp_times = [2 * fabric.time_s("all-reduce", t * layer.hidden * e, tp, 1)]
    if tp > 1:
        tp_times.append(4 * fabric.time_s("all-gather", t * row, tp, 1))
    mine = -(-t // tp) * row  # this GPU's own tokens' routed rows
    ep_times = [4 * fabric.time_s("all-to-all", mine, ep, tp)] if ep > 1 else []
    return tp_times, ep_times


def _dp_comm(ctx: _Context, dense: int, expert: int) -> float:
    """The data-parallel collectives of one step, by ZeRO stage (``analysis.parallel``): dense
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


def duplicated_parameters(layer: Any, sp: bool) -> int:
    """The parameters of one (sharded) layer that every GPU of its tensor-parallel group holds
    whole and makes a part of the gradient of, which Megatron-Core all-reduces (sums) over the
    group once a step (``finalize_model_grads``' ``_allreduce_non_tensor_model_parallel_grads``:
    each parameter marked ``sequence_parallel`` under sequence parallelism, and ``q_layernorm`` /
    ``k_layernorm`` whatever it). Under sequence parallelism (``sp``), each GPU running them on
    its own T / tp tokens (``parallel_times``' ``SP_KINDS``, ``ROUTER``, ``LATENT``):

    - a block's two norms (``TENorm`` and ``TELayerNormColumnParallelLinear``'s
      ``layer_norm_weight`` and ``layer_norm_bias``, marked by Transformer Engine), hidden each,
      twice that for a layernorm (its shift);
    - with ``bias: all`` the row-parallel projections' biases, hidden each: ``proj``'s and the
      FFN's down projection's, or in an MoE block the shared expert's (``RowParallelLinear``
      marks its bias); a routed expert's is not (its expert-tensor-parallel group gathers every
      row routed to it: a whole gradient on each GPU), nor a column-parallel bias (split);
    - an MoE block's router, hidden x experts (``TopKRouter``);
    - a latent attention's down projections, hidden x (q_lora_rank + kv_lora_rank +
      qk_rope_head_dim), ``kv_a`` alone without a query latent, and its latent norms
      (``linear_q_down_proj`` / ``linear_kv_down_proj``, ``TELinear(parallel_mode=
      'duplicated')``, marked ``sequence_parallel``);
    - a norm layer (the final norm: ``TENorm``).

    With or without it, the query and key norms of a block with ``qk_norm`` (head_dim each,
    twice for a layernorm): the group's GPUs normalize different heads with the one scale
    (Megatron-Core's ``qk_layernorm``). Layers tensor parallelism leaves whole and runs on all T
    tokens (``replicated_layers``), an embedding's position and token-type tables (the sequence
    is scattered after them) and an expert's weights make whole gradients: none."""
    if isinstance(layer, Norm):
        return layer.parameters if sp else 0
    if not isinstance(layer, Transformer):
        return 0
    scale = 2 if layer.norm == "layernorm" else 1
    total = 2 * layer.head_dim * scale if layer.qk_norm else 0
    if not sp:
        return total
    total += 2 * layer.hidden * scale
    if layer.bias == "all":  # proj's, and the dense FFN's or the shared expert's down projection's
        total += layer.hidden * (2 if not layer.experts or layer.shared_ffn else 1)
    if layer.experts:
        total += layer.hidden * layer.experts
    if layer.mla:
        total += layer.hidden * (layer.q_lora_rank + mla.cache_width(layer)) + mla.norms(layer)
    return total


def _tp_grad_comm(ctx: _Context, runs: list[tuple[Any, int]]) -> tuple[int, float]:
    """A stage's duplicated gradients (``duplicated_parameters``) in bytes, at the gradient's
    size (the main-grad buffer, as data parallelism reduces it: ``_dp_comm``), and the time of
    their one all-reduce over the tp GPUs of the group (``Fabric.time_s``, stride 1: inside a
    node): Megatron-Core flattens every such gradient of the GPU's model chunks into one buffer
    and all-reduces it once a step, after the data-parallel reduce, before the optimizer
    (exposed). None at tp 1."""
    if ctx.layout.tp == 1:
        return 0, 0.0
    nbytes = sum(duplicated_parameters(layer, ctx.sp) * count for layer, count in runs)
    nbytes *= ctx.grad_e
    return nbytes, ctx.fabric.time_s("all-reduce", nbytes, ctx.layout.tp, 1)
