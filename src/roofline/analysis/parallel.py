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
an all-gather (the same bytes and ring steps, so the same time), the output layer's too (its
input all-gathered in the forward pass, its input gradient reduce-scattered in the backward
one, where the all-reduce was); the all-gather of a column-parallel layer's input again in the
backward pass for its weight gradient (Megatron-LM keeps each GPU's T / tp rows only,
``LinearWithGradAccumulationAndAsyncCommunication.backward``) is issued asynchronously before
the data-gradient GEMM and taken hidden behind it, not charged; the norms, dropouts and
residual adds run on T / tp tokens (their op time is divided by tp; not the attention core's
dropout over the scores, already split by heads) and the activations they keep are divided by
tp. The parameters every GPU of the group holds whole and runs on its T / tp tokens (a block's
norms, the row-parallel projections' biases, an MoE block's router, a latent attention's down
projections and latent norms, the final norm) then get a part of their gradient on each GPU:
Megatron-Core sums them over the group once a step, after the data-parallel reduce and before
the optimizer (``finalize_model_grads``' ``_allreduce_non_tensor_model_parallel_grads``, the
parameters marked ``sequence_parallel``), one all-reduce of a GPU's such gradients flattened
together, at the gradient's size (as the data-parallel reduce), exposed
(``parallel_comm.duplicated_parameters``, ``_tp_grad_comm``; until 0.9.0 not counted). A block's
query and key norms (``qk_norm``) are summed so with or without sequence parallelism
(``qk_layernorm``): each GPU normalizes its own heads. Activation memory per block (the
paper's sec. 4.2, with its 2-byte activations, dropout and naive attention): sbh (34 + 5as/h)
without TP, sbh (10 + 24/t + 5as/(ht)) with TP (10 sbh replicated: the two norms' inputs, the
inputs of the QKV and the first FFN projection, the two dropout masks), sbh/t (34 + 5as/h) with
TP and SP. The replicated part
here is what ``Transformer.saved_bytes`` counts for those tensors: 4 T h e + 2 T h (masks).

Pipeline parallelism (``pp``): the transformer blocks are split into pp stages as evenly as
they go (the first ones take one more when they do not divide); the layers before the first
block (embedding) join the first stage, those after the last block (final norm, output layer)
the last. Schedule 1F1B (Narayanan et al., sec. 2.2): with m micro-batches a step takes (m + p
- 1) times the slowest stage's micro-batch time, the bubble (p - 1) / (m + p - 1) of the step;
stage i keeps the activations of min(m, p - i) micro-batches (the first stage p). Between
stages each micro-batch sends T h elements forward and their gradient backward
(point-to-point), each GPU of the tensor-parallel group all of them, or with sequence
parallelism its T / tp tokens' (T h / tp: the activations at a boundary are divided along
the sequence; Megatron-LM's ``get_tensor_shapes`` divides the sequence by tp; until 0.9.0
every GPU was charged T h; Narayanan et al.'s scatter/gather of the whole T h without
sequence parallelism is not modelled). Ranks run tensor first, then data, then pipeline (as
Megatron-LM orders them), so stage i holds the tp x dp ranks from i tp dp on and each GPU
sends to the one tp dp ranks later or earlier: over the inter-node link where some such pair
sits in two nodes (``crosses_nodes``), else the intra-node link.

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
and, with uniform routing, computes the same T k expert rows as before. Each MoE block moves
them as Megatron-Core's all-to-all token dispatcher does (``parallel_comm._moe_comm``): each GPU
all-to-alls the routed rows (k h elements a token) of its own tokens, T / tp of them with tensor
parallelism (sequence parallel, which Megatron-Core requires of MoE with tp > 1), four times per
micro-batch (dispatch and combine, forward and backward); with tp > 1 the experts are split over
the tensor-parallel group too (Megatron-LM's default expert tensor parallelism), which
all-gathers the T k rows before them and reduce-scatters their output, forward and backward, in
place of the FFN's all-reduces of T h (the attention keeps its two). Expert weights are
data-parallel over dp / ep GPUs. The router is not split, by expert nor by tensor parallelism
(Megatron-Core's ``TopKRouter`` keeps its E x h weight whole on every GPU): each GPU scores its
own tokens against all E experts before the dispatch, so its GEMMs keep N = E, its softmax and
logits T E, and its weight is a dense parameter (``Transformer.expert_shards``,
``local_experts``).

Two step times per layout: the roofline (``step_s``: every GEMM and op at its roof, a lower
bound) and the prediction (``predicted_step_s``: every GEMM and op at analyze's
``predicted_time_s``, on the device's prediction basis), each with the same communication,
pipeline and overlap rules; layouts are ranked by the prediction, which sees what the roof does
not (a small micro-batch's or a narrow tensor-parallel shard's tile waste, a kernel's fixed
time).

Recomputation (``recompute``, ``analysis.recompute``): the forward work it runs again is in
the backward pass of each recomputing layer (``parallel_times``), at the roof and predicted,
so the 1F1B step and the data-parallel overlap windows see it: with full recomputation each
block's whole forward (Narayanan et al., sec. 5.1: 96 B s l h^2 (1 + ...) FLOPs an iteration
against 72 without), and its forward transfers made again, six tensor-parallel all-reduces (or
their reduce-scatter and all-gather pairs) and six expert-parallel all-to-alls a micro-batch,
not four (``parallel_comm.RECOMPUTED_TRANSFERS``); with selective, naive attention's core
(Korthikanti et al. 2022, sec. 5), which sends nothing; flash attention's backward already
recomputes its scores. A layout's JSON ``recompute_s`` is that share of its compute.

Interleaved pipeline stages (``vp``, Megatron-LM's virtual pipeline stages; Narayanan et al.,
sec. 2.2.2): each pipeline GPU holds vp model chunks, the blocks split into pp x vp chunks as
stages are (``gpu_chunks``, ``gpu_blocks``), chunk c on GPU c mod pp. A step takes (m + (p -
1) / vp) times the slowest GPU's micro-batch time, all its chunks one after another (the fill
and drain run chunks of 1 / vp of a GPU's work; in the steady state each GPU runs every chunk
of every micro-batch, as a 1F1B stage its layers): the bubble (p - 1) / (vp m + p - 1) of the
step. Every chunk boundary is between two GPUs: each chunk sends its output forward and its
input's gradient back (``parallel_stage._pipeline_p2p``), vp times a middle 1F1B stage's,
the last stage's forward sends and the first's backward ones over the wrap from the last stage
to the first (``wrap_crosses_nodes``). Stage s keeps 2 (p - s - 1) + (vp - 1) p + 1 chunks of
micro-batches in flight (Megatron-Core's ``get_pp_rank_microbatches``, at most m vp;
``parallel_memory.in_flight``): the first stage 1 + (p - 1) / (p vp) times 1F1B's p; each
chunk's share of them as Megatron-Core orders its forwards (``chunks_in_flight``: the last
stage's last chunk, the model's head with it, one micro-batch deep, as under 1F1B). It needs
pp > 1, pp x vp no more than the blocks and m a multiple of pp (Megatron-Core's default
micro-batch group, pp; a larger ``--microbatch-group-size-per-virtual-pipeline-stage`` is not
modelled).

Not modelled: context parallelism, ZeRO-3's gathered-layer buffer, compute-communication
contention.

Here: ``evaluate`` (a layout for a global batch) and ``shard_report`` (one GPU's shard analyzed).
The rules above are worked out in ``parallel_layout`` (``Layout``, the layouts a network can
run), ``parallel_shard`` (what one GPU holds: its shard, its pipeline stage),
``parallel_times`` (a shard's compute per layer and stage), ``parallel_comm`` (the
collectives), ``parallel_memory`` (one GPU's memory), ``parallel_stage`` (a stage's cost, all
of these combined) and ``parallel_result`` (``LayoutResult``: the pipelined step, 1F1B or
interleaved, its parts and bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError, option
from ..hardware.spec import HardwareSpec
from ..model.dtypes import itemsize
from ..model.layers import Step, Transformer
from ..model.lm_head import vocabularies
from ..model.network import Network
from ..model.repeats import Layers
from .collectives import Fabric
from .memory import MASTER_BYTES, OPTIMIZER_STATE_BYTES
from .parallel_comm import crosses_nodes
from .parallel_layout import (
    ZERO_STAGES,
    Layout,
    _Context,
    check_layout,
    check_training,
    divisors,
)
from .parallel_memory import activation_bytes_per_block
from .parallel_result import LayoutResult, StageCost, pipeline_bubble
from .parallel_shard import (
    blocks_of,
    gpu_blocks,
    gpu_chunks,
    padded_vocab,
    replicated_layers,
    shard_network,
    split_stages,
    stage_blocks,
    stage_spans,
)
from .parallel_stage import StageShape, _runs, _stage, stage_shape
from .parallel_times import LayerTimes, StageTimes, layer_times, stage_times
from .report import Report, analyze

#: the names callers import from here, some of them defined in the parallel_* modules
__all__ = ["ZERO_STAGES", "Layout", "LayoutResult", "activation_bytes_per_block", "blocks_of",
           "check_layout", "check_training", "crosses_nodes", "divisors", "evaluate",
           "gpu_blocks", "gpu_chunks", "padded_vocab", "pipeline_bubble", "shard_network",
           "shard_report", "split_stages", "stage_blocks"]


def evaluate(network: Network, hardware: HardwareSpec, layout: Layout, batch: int,
             fabric: Fabric, report: Report | None = None,
             cache: dict[tuple[Any, ...], Any] | None = None) -> LayoutResult:
    """``layout`` for a global batch of ``batch`` sequences (module docstring). ``report``: the
    sharded network analyzed at the micro-batch (``shard_report``), when already made;
    ``cache``: what a part of the layout sets, kept by a caller that evaluates many layouts of
    one network on one device and fabric over the same reports (``plan``): by the report
    (``id(report)``) the shard's step, parameters, vocabularies and replicated layers
    (``_ShardFacts``), by it and sp_tp its ``layer_times`` and stages alike (``_stages``), by
    them, pp and vp each stage's ``StageShape`` and ``stage_times``, and the data-parallel
    collectives by what they read (``_stage``'s ``dp_comms``); a layout then adds what its
    dp, ZeRO stage and micro-batches change, each of its stages alike made once (``_stage``'s
    ``made``). A stage's layers are read as ranges and runs
    (``stage_spans``, ``Layers.runs_in``): a layout costs what the model's runs do, not its
    copies. Without a cache each stage is worked out on its own, nothing shared."""
    check_layout(network, layout)
    per_rank = layout.dp * layout.micro_batch
    if batch % per_rank:
        raise InputError(network.source, "", f"the global batch {batch} is not a multiple of "
                                             f"dp x micro-batch = {layout.dp} x "
                                             f"{layout.micro_batch} ({option('batch')})")
    if layout.vp > 1 and (batch // per_rank) % layout.pp:
        raise InputError(network.source, "", f"the interleaved schedule runs the "
                                             f"{batch // per_rank} micro-batches of a "
                                             f"data-parallel rank in groups of pp = {layout.pp}"
                                             f" (Megatron-LM's default micro-batch group): "
                                             f"they must be a multiple of it "
                                             f"({option('batch')}, {option('vp')})")
    if report is None:
        report = shard_report(network, hardware, layout)
    shared, cache = cache is not None, {} if cache is None else cache
    sharded = report.network
    facts = cache.get((id(report),))
    if facts is None:
        facts = cache.setdefault((id(report),), _ShardFacts.of(network, sharded, layout.tp))
    e = itemsize(sharded.operand_dtype)
    state_e = OPTIMIZER_STATE_BYTES[sharded.optimizer] + (
        MASTER_BYTES if e < MASTER_BYTES and sharded.optimizer != "none" else 0)
    ctx = _Context(layout, fabric, facts.step, batch // per_rank, e,
                   itemsize(sharded.grad_accumulation) if sharded.grad_accumulation else e,
                   state_e, sharded.recompute, facts.vocabularies)
    sp_tp = layout.tp if ctx.sp else 1
    key = (id(report), sp_tp, layout.pp, layout.vp)  # layouts alike but for dp, ZeRO or m
    stages_of = cache.get(key)
    if stages_of is None:
        both, known = cache.get((id(report), sp_tp)) or cache.setdefault(
            (id(report), sp_tp), (layer_times(report, sp_tp), {}))
        stages_of = cache.setdefault(key, _stages(ctx, sharded, both, known if shared else None))
    dp_comms = cache.setdefault(("dp_comm",), {}) if shared else None
    made: dict[tuple[Any, ...], tuple[StageCost, StageCost]] | None = {} if shared else None
    stages = [_stage(ctx, s, shape, times, facts.parameters, dp_comms, made)
              for s, (shape, times) in enumerate(stages_of)]
    capacity = hardware.memory_capacity_bytes
    return LayoutResult(layout, batch, sharded.seq or 1, ctx.m,
                        tuple(roof for roof, _ in stages),
                        None if capacity is None else round(capacity), facts.allreduce(e),
                        facts.replicated, report,
                        tuple(predicted for _, predicted in stages))


@dataclass(frozen=True)
class _ShardFacts:
    """What ``evaluate`` reads of a shard's network, the same for every layout over its
    report: its step, parameters, sharded vocabularies (the logits' widths), the layers tensor
    parallelism leaves whole, its first block's hidden width."""

    step: Step
    parameters: int
    vocabularies: set[int]
    replicated: tuple[str, ...]
    hidden: int | None

    @classmethod
    def of(cls, network: Network, sharded: Network, tp: int) -> _ShardFacts:
        first_block = next((run.layer for run in sharded.layer_runs
                            if isinstance(run.layer, Transformer)), None)
        return cls(sharded.step(), sharded.parameters,
                   {padded_vocab(v, tp) // tp for v in vocabularies(network)},
                   tuple(replicated_layers(network, tp)),
                   first_block.hidden if first_block else None)

    def allreduce(self, e: int) -> int:
        """One tensor-parallel all-reduce of a block, T h e bytes (0 without blocks)."""
        return self.step.tokens * self.hidden * e if self.hidden is not None else 0


def _stages(ctx: _Context, sharded: Network, both: LayerTimes,
            known: dict[tuple[Any, ...], tuple[StageShape, StageTimes]] | None
            ) -> list[tuple[StageShape, StageTimes]]:
    """Each pipeline GPU's ``StageShape`` and ``stage_times`` (``both``: the shard's
    ``layer_times``), its layers in chunk order with interleaved stages; of ``ctx`` it reads
    what the shard, sequence parallelism, pp and vp set. ``known``: those of the stages worked
    out already over the same ``both``, by what sets them: whether the stage is the first or
    the last (the logits, the point-to-point transfers at the model's ends), its layers' runs
    (each chunk's) and the segments of layer times they cover (``LayerRows.cover``: the same
    for the roof's and the prediction's rows); the middle stages of a pipeline and of other
    depths alike share one (Llama-2-70B's search over 64 GPU counts: 84,704 stages, 2,629
    unlike). None: each stage worked out on its own (``evaluate`` without a cache)."""
    layout = ctx.layout
    if layout.vp > 1:  # each GPU's chunks, its layers in chunk order
        chunks = gpu_chunks(sharded, layout.pp, layout.vp)
        stage_spans_ = chunks
    else:
        chunks, stage_spans_ = (), tuple((span,) for span in stage_spans(sharded, layout.pp))
    layers = sharded.layers
    assert isinstance(layers, Layers)
    rows = both[False][0]

    def runs(spans: tuple[range, ...]) -> list[tuple[Any, int]]:
        return _runs(piece for span in spans for piece in layers.runs_in(span.start, span.stop))

    def alike(pieces: list[tuple[Any, int]]) -> tuple[tuple[int, int], ...]:
        return tuple((id(layer), count) for layer, count in pieces)

    out = []
    for s, spans in enumerate(stage_spans_):
        stage_runs = runs(spans)
        chunk_runs = [runs((chunk,)) for chunk in chunks[s]] if chunks else None
        key = (s == 0, s == layout.pp - 1, alike(stage_runs),
               chunk_runs and tuple(alike(chunk) for chunk in chunk_runs), rows.cover(spans))
        found = None if known is None else known.get(key)
        if found is None:
            found = (stage_shape(ctx, s, stage_runs, chunk_runs), stage_times(both, spans))
            if known is not None:
                known[key] = found
        out.append(found)
    return out


def shard_report(network: Network, hardware: HardwareSpec, layout: Layout,
                 quantization: bool = False) -> Report:
    """One GPU's step at the layout's micro-batch: the tensor- and expert-parallel shard
    analyzed like any network (its GEMMs' shapes, alignment, quantization and advice)."""
    check_layout(network, layout)
    sharded = shard_network(network, layout.tp, layout.ep)
    return analyze(sharded.with_overrides(batch=layout.micro_batch), hardware, quantization)
