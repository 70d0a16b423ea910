"""Serving a model over a pipeline of ``pp`` stages, each ``tp`` GPUs (``analyze --pp N``,
with ``--tp``: tp x pp GPUs over one or more nodes), as vLLM runs ``--pipeline-parallel-size``.
Every rule read from vLLM's source:

- The split: vLLM's ``get_pp_indices`` (``vllm/distributed/utils.py``) gives each stage blocks
  // pp transformer blocks and the remainder one more each to the stages before the last, from
  the second-last backwards (``partitions[-i] += 1`` for i from 2: the last stage holds the
  final norm and the LM head; 5 blocks over 2 stages: 3 and 2); ``vllm_stage_blocks``. The
  embedding runs on the first stage, the final norm and the LM head on the last (``LlamaModel``:
  ``get_pp_group().is_first_rank`` / ``is_last_rank``; ``make_layers``), so a stage is its
  blocks with the layers before the first (first stage) or after the last (last stage):
  ``parallel_shard.stage_spans`` with these counts. A split given by hand, as
  ``VLLM_PP_LAYER_PARTITION`` gives vLLM one (``--pp A,B,...``: the blocks of each stage,
  ``get_pp_indices`` taking them as they are where they add up to the model's layers and
  refusing them otherwise), is taken instead (``stage_blocks``). What a stage holds besides its
  own layers' weights (``_held_bytes``): for Llama, Mistral and Qwen2 (dense RMSNorm blocks) a
  tied LM head's embedding on the last stage (``LlamaModel`` and ``Qwen2Model`` build
  ``embed_tokens`` on the first rank, or on the last where ``tie_word_embeddings``, ``norm`` on
  the last, and ``LlamaForCausalLM`` / ``Qwen2ForCausalLM`` ``lm_head`` on the last; every other
  rank a ``PPMissingLayer``); for GPT-2 (LayerNorm blocks) and Mixtral (RMSNorm blocks of
  experts) every layer outside the blocks on every stage, whichever runs it:
  ``GPT2Model.__init__`` builds ``wte``, ``wpe`` and ``ln_f`` on every rank and
  ``GPT2LMHeadModel`` its ``lm_head`` (tied to ``wte`` or its own), ``MixtralModel.__init__``
  ``embed_tokens`` and ``norm`` and ``MixtralForCausalLM`` its ``lm_head``, none a
  ``PPMissingLayer``. A model.yaml's blocks of experts are taken as Mixtral's (vLLM's other MoE
  models differ model by model), but for blocks of multi-head latent attention, DeepSeek-V2 /
  V3's, which hold as Llama's: ``DeepseekV2Model`` builds ``embed_tokens`` on the first rank and
  ``norm`` on the last, ``DeepseekV2ForCausalLM`` (V3's too) ``lm_head`` on the last, every
  other rank a ``PPMissingLayer`` (vllm/model_executor/models/deepseek_v2.py), its dense first
  blocks or not.
- What a stage hands the next each step (``IntermediateTensors``): for the Llama family
  (Llama, Mistral, Qwen2, Mixtral: RMSNorm blocks, whose fused residual add keeps the residual
  apart) ``hidden_states`` and ``residual`` (``LlamaModel.forward``), for GPT-2 (LayerNorm
  blocks) ``hidden_states`` only (``GPT2Model.forward``); each tokens x hidden at the
  activations' size. vLLM's worker sends them by "send-allgather"
  (``vllm/v1/worker/gpu_worker.py``, ``Worker.execute_model``: ``send_tensor_dict(...,
  all_gather_group=get_tp_group())``; ``GroupCoordinator.send_tensor_dict`` and
  ``recv_tensor_dict`` in ``vllm/distributed/parallel_state.py``): where tp divides a tensor,
  each of the tp GPUs sends its 1 / tp slice to its peer of the next stage, which then
  all-gathers the tensor over its node's link; one tensor at a time. Its pickled metadata,
  sent over the CPU group first, is not modelled.
- Over which link: vLLM numbers ranks tp fastest, then pp (``initialize_model_parallel``), so
  a hand-off crosses nodes where a pair of its ranks sits in two nodes of ``gpus_per_node``
  (``parallel_comm.crosses_nodes``): at tp 8 on 8-GPU nodes every hand-off is between nodes,
  on the inter-node link (``plan.make_fabric``'s, one NIC per GPU: InfiniBand NDR by default);
  where tp x pp fits a node, on the intra-node link. Times per hand-off, for a tensor of S
  bytes: roof S / tp / B (+ the all-gather's (tp - 1) / tp x S / B_intra), predicted each
  plus its latencies: S / tp / B + a, and NCCL's ring all-gather, (tp - 1) steps of a_intra;
  where tp does not divide the tensor each GPU sends it whole, no all-gather.
- Batches in flight: vLLM V0 ran pp "virtual engines", a scheduler each
  (``LLMEngine``; each ``Scheduler`` gets ``num_gpu_blocks // pipeline_parallel_size`` of the
  KV cache, ``vllm/core/scheduler.py``); vLLM V1, modelled here, keeps a batch queue of
  ``max_concurrent_batches`` = pp scheduled batches (``vllm/v1/engine/core.py``,
  ``EngineCore.__init__``, ``step_with_batch_queue``;
  ``vllm/v1/executor/multiproc_executor.py``, ``MultiprocExecutor.max_concurrent_batches``),
  all sharing one KV cache pool. Either way pp batches are in flight: each GPU holds the KV
  cache of its stage's layers for pp batches (``memory.memory_parts``' ``kv_copies``), so the
  batch that fits, each in-flight batch's, is the most loaded stage's.
- Times: one batch's step is the sum of its stages (each its GEMMs, ops and its blocks'
  tensor-parallel all-reduces) and the pp - 1 hand-offs: its latency, the report's step time.
  With pp batches in flight each stage works on one while the others are elsewhere, so a
  batch comes round every max(latency, pp x the slowest stage) (the slowest stage serves pp
  batches a round; a batch cannot come round faster than its own latency) and the group makes
  pp batches' tokens a round: tokens/s = pp x tokens / that. A generation's time to first
  token and time per output token are one batch's latencies (the first batch's, alone); its
  tokens/s are pp batches' at that rate, the decode steps' slowest share taken at the last
  decode step's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InputError, option
from ..files.fields import positive_int
from ..hardware.links import Link
from ..model.layers import Embedding, Linear, Transformer
from ..model.lm_head import keep_vocabularies
from ..model.network import Network
from ..model.repeats import LayerRun, Layers
from .collectives import Fabric, _link_dict, p2p_time_s, ring_time_s
from .memory import WORKSPACE_BYTES, Memory, memory_of, memory_parts
from .parallel_comm import crosses_nodes
from .parallel_shard import stage_spans
from .parallel_times import layer_times, stage_times
from .serving_tp import no_blocks_problem, step_comm

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from .report import Report

#: what one stage hands the next (vLLM's ``IntermediateTensors``): the Llama family's
#: (``LlamaModel.forward``) and GPT-2's (``GPT2Model.forward``)
LLAMA_TENSORS = ("hidden_states", "residual")
GPT2_TENSORS = ("hidden_states",)


def vllm_stage_blocks(blocks: int, pp: int) -> tuple[int, ...]:
    """The transformer blocks of each of ``pp`` stages as vLLM's ``get_pp_indices`` splits
    them (module docstring): 5 over 2 -> (3, 2); 10 over 4 -> (2, 3, 3, 2); 126 over 2 ->
    (63, 63)."""
    base, extra = divmod(blocks, pp)
    counts = [base] * pp
    for i in range(2, extra + 2):
        counts[-i] += 1
    return tuple(counts)


def stage_blocks(network: Network, pp: Any) -> tuple[int, ...]:
    """The transformer blocks of each stage ``pp`` asks for (``checked_pp`` first): vLLM's
    split of a count (``vllm_stage_blocks``), or the blocks of each stage as given (a list, as
    ``VLLM_PP_LAYER_PARTITION`` gives them)."""
    if isinstance(pp, (list, tuple)):
        return tuple(int(blocks) for blocks in pp)
    return vllm_stage_blocks(_blocks(network), int(pp))


def _blocks(network: Network) -> int:
    return sum(run.count for run in network.layer_runs if isinstance(run.layer, Transformer))


def _given_blocks(pp: Any, fail: Any) -> tuple[int, ...] | None:
    """The blocks of each stage where ``pp`` lists them (each a positive integer), else
    None."""
    if not isinstance(pp, (list, tuple)):
        return None
    if not pp:
        raise fail("pp", "expected the blocks of each stage, got an empty list")
    return tuple(positive_int(blocks, fail, "pp") for blocks in pp)


def checked_pp(network: Network, pp: Any, inter: str | None = None) -> int:
    """The stages ``pp`` asks for (a positive integer, or the blocks of each stage as a list
    that adds up to the model's: ``VLLM_PP_LAYER_PARTITION``'s rule in ``get_pp_indices``), a
    count that ``network`` can be served over; one line (InputError) otherwise: a training step
    (``plan`` lays those out), a model without transformer blocks, or encoder blocks (vLLM
    serves a pipeline for models that implement ``SupportsPP``, its decoders), more stages than
    blocks (each stage runs one at least), a list that does not add up, and ``inter`` without
    a pipeline (the link between nodes is the hand-offs')."""
    def fail(key: str, problem: str) -> InputError:
        return InputError(network.source, key, problem)

    given = _given_blocks(pp, fail)
    pp = positive_int(len(given) if given is not None else pp, fail, "pp")
    src = network.source
    if pp == 1:
        if inter is not None:
            raise InputError(src, "", f"{option('inter')} goes with {option('pp', 'N')} above "
                                      f"1 (the link between nodes the pipeline's stages hand "
                                      f"off over)")
        return pp
    if network.mode == "train":
        raise InputError(src, "", f"{option('pp')} serves an inference step or a generation; "
                                  f"a training step's pipeline is `roofline plan`'s")
    runs = [run for run in network.layer_runs if isinstance(run.layer, Transformer)]
    blocks = _blocks(network)
    if not blocks:
        raise InputError(src, "", no_blocks_problem(network, "pipeline", "pp"))
    encoder = next((run.copy(0) for run in runs
                    if isinstance(run.layer, Transformer) and not run.layer.causal), None)
    if encoder is not None:
        raise InputError(src, "", f"pipeline parallelism {pp} over block {encoder.name!r}, "
                                  f"which is not causal: vLLM serves a pipeline for decoder "
                                  f"models only (SupportsPP) ({option('pp')})")
    if pp > blocks:
        raise InputError(src, "", f"pipeline parallelism {pp} is more stages than the "
                                  f"model's {blocks} transformer blocks: each stage runs one "
                                  f"at least ({option('pp')})")
    if given is not None and sum(given) != blocks:
        raise InputError(src, "", f"the stages' blocks {','.join(map(str, given))} add up to "
                                  f"{sum(given)}, not the model's {blocks} transformer blocks "
                                  f"(vLLM refuses such a VLLM_PP_LAYER_PARTITION) "
                                  f"({option('pp')})")
    return pp


def check_groups(network: Network, tp: int, pp: int, gpus_per_node: int) -> None:
    """One line (InputError) where a stage's tensor-parallel group would straddle two nodes:
    vLLM numbers ranks tp fastest, then pp (module docstring), so stage s runs ranks s x tp to
    (s + 1) x tp - 1, and where those sit in two nodes of ``gpus_per_node`` its all-reduces
    cross between them, which serving prices on the node's link only (tp 2 x pp 2 on nodes of
    3: stage 1's ranks 2 and 3)."""
    for s in range(pp):
        first, last = s * tp, (s + 1) * tp - 1
        if first // gpus_per_node != last // gpus_per_node:
            raise InputError(network.source, "", (
                f"tensor parallelism {tp} x pipeline parallelism {pp} on nodes of "
                f"{gpus_per_node} GPUs puts stage {s}'s tensor-parallel group (ranks {first} "
                f"to {last}) in two nodes, its all-reduces between them, which is not "
                f"modelled: give a tp that divides {option('gpus_per_node')} "
                f"({option('tp')})"))


def _stage(network: Network, *spans: range) -> Network:
    """The layers of ``spans`` as a network of their own, in the model's order (a stage's, for
    its memory)."""
    layers = network.layers
    assert isinstance(layers, Layers)
    runs = []
    for span in sorted(spans, key=lambda span: span.start):
        for index, run in zip(layers.starts(), layers.runs):
            first, last = max(span.start, index), min(span.stop, index + run.count)
            if first < last:
                runs.append(LayerRun(run.layer, last - first, run.first_copy + first - index,
                                     run.named))
    return keep_vocabularies(replace(network, layers=Layers(runs)), network)


def _llama_like(block: Transformer) -> bool:
    """Whether ``block`` hands on a residual as the Llama family's do in vLLM (RMSNorm blocks:
    Llama, Mistral, Qwen2, Mixtral), else GPT-2's hidden states alone (LayerNorm blocks)
    (module docstring)."""
    return block.norm == "rmsnorm"


def _held_everywhere(blocks: list[Transformer]) -> bool:
    """Whether vLLM builds the layers outside the blocks on every pipeline rank for a model of
    ``blocks``: GPT-2's (LayerNorm) and Mixtral's (experts), not the dense Llama family's nor
    DeepSeek's (latent attention), whichever of its blocks has experts (module docstring)."""
    if any(block.mla for block in blocks):
        return False
    return any(not _llama_like(block) or block.experts > 0 for block in blocks)


def _held_bytes(network: Network, span: range) -> int:
    """The weights the stage ``span`` holds of layers it does not run (module docstring): where
    vLLM builds them on every rank (GPT-2, Mixtral) every layer before the first block and after
    the last the stage lacks, else a tied head's embedding (``_tied_bytes``)."""
    layers = network.layers
    assert isinstance(layers, Layers)
    runs = list(zip(layers.starts(), layers.runs))
    blocks = [(start, run) for start, run in runs if isinstance(run.layer, Transformer)]
    if not _held_everywhere([run.layer for _, run in blocks]):
        return _tied_bytes(network, span)
    first = blocks[0][0]
    last = blocks[-1][0] + blocks[-1][1].count
    missing = [r for r in (range(0, first), range(last, len(layers)))
               if r and not (span.start <= r.start and r.stop <= span.stop)]
    if not missing:
        return 0

    def weights(stage: Network) -> int:
        return memory_parts(stage, 0)["weights"]
    return weights(_stage(network, span, *missing)) - weights(_stage(network, span))


def _tied_bytes(network: Network, span: range) -> int:
    """The embedding weights a tied LM head in ``span`` holds where its embedding (the one of
    its vocabulary) is not in it (vLLM builds ``embed_tokens`` on the last stage for a tied
    head), at the model's dtype."""
    layers = network.layers
    assert isinstance(layers, Layers)
    inside = [layer for layer, _ in layers.runs_in(span.start, span.stop)]
    heads = {layer.out_features for layer in inside if isinstance(layer, Linear) and layer.tied}
    if not heads or any(isinstance(layer, Embedding) and layer.vocab in heads
                        for layer in inside):
        return 0
    embedding = next(run.layer for run in network.layer_runs
                     if isinstance(run.layer, Embedding) and run.layer.vocab in heads)
    return embedding.vocab * embedding.dim * network.step().e


def _memory(network: Network, span: range, hardware: HardwareSpec, pp: int) -> Memory:
    """One GPU of the stage ``span``: its layers' weights and, for pp batches, KV cache, and
    the weights it holds of layers it does not run (``_held_bytes``) in its weights (the
    fitting batch held to them: they ride in the workspace while that is worked out)."""
    stage = _stage(network, span)
    tied = _held_bytes(network, span)
    workspace = (WORKSPACE_BYTES if hardware.kind == "gpu" else 0)
    memory = memory_of(stage, hardware, workspace + tied, kv_copies=pp)
    if not tied:
        return memory
    parts = dict(memory.parts)
    parts["weights"] += tied
    parts["workspace"] -= tied
    return replace(memory, parts=parts)


@dataclass(frozen=True)
class Stages:
    """The pipeline's stages: each one's layers (a range), blocks, first and last layer names,
    and one GPU's memory (a generation's: the larger of its prefill's and its last decode
    step's); the batch the pipeline fits is the most loaded stage's."""

    spans: tuple[range, ...]
    blocks: tuple[int, ...]
    names: tuple[tuple[str, str], ...]
    memories: tuple[Memory | None, ...]
    memory_steps: tuple[str, ...] = ()  # a generation's: "prefill" or "decode" per stage
    decode_max_batch: int | None = None  # as ``Generation.decode_max_batch``, every stage's
    given: bool = False  # the blocks of each stage given (``--pp A,B,...``), not vLLM's split

    @property
    def heaviest(self) -> int:
        """The stage whose GPU holds the most (the first on a tie)."""
        totals = [m.total_bytes if m else 0 for m in self.memories]
        return totals.index(max(totals))

    @property
    def max_batch(self) -> int | None:
        fits = [m.max_batch for m in self.memories if m is not None]
        return None if not fits or None in fits else min(f for f in fits if f is not None)

    def memory(self) -> Memory | None:
        """The heaviest stage's memory, with the largest batch and seq every stage fits."""
        memory = self.memories[self.heaviest]
        if memory is None:
            return None
        seqs = [m.max_seq for m in self.memories if m is not None and m.max_seq is not None]
        return replace(memory, max_batch=self.max_batch,
                       max_seq=min(seqs) if seqs else memory.max_seq)


def stages_of(network: Network, shard: Network, pp: Any, hardware: HardwareSpec,
              prompt: int | None = None, generate: int | None = None) -> Stages:
    """``shard``'s (one tensor-parallel GPU's network) stages, as ``pp`` asks for them
    (``stage_blocks``), and their memory; with ``prompt`` and ``generate``, a generation's
    (``generation.generate``'s steps)."""
    from .generation import _peak_memory, check_lengths

    counts = stage_blocks(network, pp)
    given = isinstance(pp, (list, tuple))
    pp = len(counts)
    spans = stage_spans(shard, pp, counts)
    layers = shard.layers
    names = tuple((layers[s.start].name, layers[s.stop - 1].name) for s in spans)
    if prompt is None or generate is None:
        return Stages(spans, counts, names, tuple(_memory(shard, s, hardware, pp)
                                                  for s in spans), given=given)
    whole = shard.with_overrides(mode="inference")
    prompt, generate = check_lengths(whole, prompt, generate)
    steps = generate - 1
    prefill = whole.with_overrides(phase="prefill", seq=prompt, logits=whole.logits or "last")
    decode = whole.with_overrides(phase="decode", seq=prompt + steps)
    memories, which, limits = [], [], []
    for span in spans:
        first = _memory(prefill, span, hardware, pp)
        last = _memory(decode, span, hardware, pp) if steps else None
        peak, step = _peak_memory(first, last)
        memories.append(peak)
        which.append(step)
        limits.append((first, last))
    # the largest batch the last decode step fits on every stage where the prefills fit fewer
    # (``Generation.decode_max_batch``), else None
    low = [f.max_batch for f, _ in limits if f is not None and f.max_batch is not None]
    high = [d.max_batch for _, d in limits if d is not None and d.max_batch is not None]
    limit = None
    if steps and len(low) == len(high) == len(spans) and min(high) > min(low):
        limit = min(high)
    return Stages(spans, counts, names, tuple(memories), tuple(which), limit, given)


@dataclass(frozen=True)
class Handoff:
    """What stage ``after`` hands the next each step: ``tensors``, ``nbytes`` each (the
    whole), each GPU sending ``sent`` bytes of each over ``link`` (and where ``gathered``, the
    tensor all-gathered over the node's link after)."""

    after: int
    tensors: tuple[str, ...]
    nbytes: int
    sent: int
    gathered: bool
    crosses_nodes: bool
    link: Link
    roof_s: float
    predicted_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"after_stage": self.after, "tensors": list(self.tensors),
                "bytes": self.nbytes * len(self.tensors),
                "bytes_per_gpu": self.sent * len(self.tensors), "all_gather": self.gathered,
                "crosses_nodes": self.crosses_nodes, "link": self.link.name,
                "time_s": self.roof_s, "predicted_time_s": self.predicted_s}


def handoff(after: int, block: Transformer, tokens: int, e: int, tp: int, fabric: Fabric,
            width: int | None = None) -> Handoff:
    """The hand-off after stage ``after``, whose last block is ``block``, of a step of
    ``tokens`` (module docstring), each tensor ``width`` wide: the stage's last layer's output
    (a model.yaml's plain layer after the block, a projection, widens what the next stage
    reads), else the block's hidden size."""
    tensors = LLAMA_TENSORS if _llama_like(block) else GPT2_TENSORS
    values = tokens * (width or block.hidden)
    nbytes = values * e
    gathered = tp > 1 and values % tp == 0
    sent = nbytes // tp if gathered else nbytes
    across = crosses_nodes(after, tp, fabric.gpus_per_node)
    link, intra = (fabric.inter if across else fabric.intra), fabric.intra
    roof = sent / (link.bandwidth_gbs * 1e9)
    predicted = p2p_time_s(sent, link.bandwidth_gbs, link.latency_us)
    if gathered:
        roof += ring_time_s("all-gather", nbytes, tp, intra.bandwidth_gbs)
        predicted += ring_time_s("all-gather", nbytes, tp, intra.bandwidth_gbs,
                                 intra.latency_us)
    n = len(tensors)
    return Handoff(after, tensors, nbytes, sent, gathered, across, link, n * roof,
                   n * predicted)


@dataclass(frozen=True)
class PipelineStep:
    """One step of one batch through the pipeline: each stage's time (its GEMMs, ops and
    tensor-parallel communication), at the roof and predicted, and the hand-offs."""

    tokens: int
    pp: int
    stage_s: tuple[float, ...]
    predicted_stage_s: tuple[float, ...]
    handoffs: tuple[Handoff, ...]

    @property
    def transfer_s(self) -> float:
        return sum(h.roof_s for h in self.handoffs)

    @property
    def predicted_transfer_s(self) -> float:
        return sum(h.predicted_s for h in self.handoffs)

    def latency(self, predicted: bool = False) -> float:
        """One batch's step: its stages and hand-offs in turn."""
        if predicted:
            return sum(self.predicted_stage_s) + self.predicted_transfer_s
        return sum(self.stage_s) + self.transfer_s

    def slowest(self, predicted: bool = False) -> int:
        times = self.predicted_stage_s if predicted else self.stage_s
        return times.index(max(times))

    def slowest_share(self, predicted: bool = False) -> float:
        """The slowest stage's part of the stages' time."""
        times = self.predicted_stage_s if predicted else self.stage_s
        return max(times) / sum(times) if sum(times) else 1.0 / self.pp

    def cycle(self, predicted: bool = False) -> float:
        """How often a batch comes round with pp in flight: max(latency, pp x slowest)."""
        times = self.predicted_stage_s if predicted else self.stage_s
        return max(self.latency(predicted), self.pp * max(times))

    def tokens_per_s(self, predicted: bool = False) -> float:
        """The group's tokens a second, pp batches in flight."""
        return self.pp * self.tokens / self.cycle(predicted)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "stage_times_s": list(self.stage_s),
                "predicted_stage_times_s": list(self.predicted_stage_s),
                "bottleneck_stage": self.slowest(),
                "predicted_bottleneck_stage": self.slowest(True),
                "handoffs": [h.to_dict() for h in self.handoffs],
                "transfer_time_s": self.transfer_s,
                "predicted_transfer_time_s": self.predicted_transfer_s,
                "latency_s": self.latency(), "predicted_latency_s": self.latency(True),
                "cycle_s": self.cycle(), "predicted_cycle_s": self.cycle(True),
                "tokens_per_s": self.tokens_per_s(),
                "predicted_tokens_per_s": self.tokens_per_s(True)}


def pipeline_step(report: Report, network: Network, stages: Stages, fabric: Fabric,
                  tp: int) -> PipelineStep:
    """``report``'s step (one tensor-parallel GPU's shard of ``network``, the whole model at
    that step's settings) through the stages: each stage's GEMMs and ops summed over its layers
    (``parallel_times``) plus its blocks' tensor-parallel communication (``serving_tp``)."""
    times = layer_times(report, 1)
    step = network.step()
    layers = network.layers
    assert isinstance(layers, Layers)
    roof, predicted, handoffs = [], [], []
    for s, span in enumerate(stages.spans):
        summed = stage_times(times, [span])
        comm = step_comm(network, tp, fabric.intra, span) if tp > 1 else None
        roof.append(summed[False][0] + summed[False][1] + (comm.roof_s if comm else 0.0))
        predicted.append(summed[True][0] + summed[True][1]
                         + (comm.predicted_s if comm else 0.0))
        if s + 1 < len(stages.spans):
            block = [layer for layer, _ in layers.runs_in(span.start, span.stop)
                     if isinstance(layer, Transformer)][-1]
            width = layers[span.stop - 1].out_width
            handoffs.append(handoff(s, block, step.tokens, step.e, tp, fabric, width))
    return PipelineStep(step.tokens, len(stages.spans), tuple(roof), tuple(predicted),
                        tuple(handoffs))


@dataclass(frozen=True)
class PipelineParallel:
    """The pipeline a Report's shard runs in (``Report.pipeline_parallel``): its stages, the
    links, the report's own step (``step``) and a generation's prefill and decode steps."""

    pp: int
    tp: int
    fabric: Fabric
    stages: Stages
    step: PipelineStep
    prefill: PipelineStep | None = None
    decode: PipelineStep | None = None
    decode_steps: int = 0
    inter_given: bool = False  # whether ``--inter`` was given (said where no hand-off takes it)

    @property
    def in_flight(self) -> int:
        return self.pp

    @property
    def nodes(self) -> int:
        return -(-self.tp * self.pp // self.fabric.gpus_per_node)

    def generation_transfer(self, predicted: bool = False) -> float | None:
        """A generation's hand-offs: its prefill's and every decode step's (None for a step)."""
        if self.prefill is None:
            return None
        each = (lambda p: p.predicted_transfer_s) if predicted else (lambda p: p.transfer_s)
        return each(self.prefill) + self.decode_steps * (each(self.decode) if self.decode
                                                         else 0.0)

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``pipeline_parallel`` object."""
        stages = self.stages
        return {"pp": self.pp, "tp": self.tp, "gpus": self.tp * self.pp,
                "gpus_per_node": self.fabric.gpus_per_node, "nodes": self.nodes,
                "inter": _link_dict(self.fabric.inter), "intra": _link_dict(self.fabric.intra),
                "link_basis": self.fabric.basis, "overlap": False,
                "in_flight_batches": self.in_flight,
                "split": "given" if stages.given else "vllm",
                "stages": [{"stage": s, "layers": [span.start, span.stop - 1],
                            "first_layer": first, "last_layer": last, "blocks": blocks,
                            "memory": memory.to_dict() if memory else None}
                           for s, (span, (first, last), blocks, memory) in enumerate(zip(
                               stages.spans, stages.names, stages.blocks, stages.memories))],
                "memory_stage": stages.heaviest,
                "step": self.step.to_dict(),
                "prefill": self.prefill.to_dict() if self.prefill else None,
                "decode": self.decode.to_dict() if self.decode else None,
                "generation_transfer_time_s": self.generation_transfer(),
                "predicted_generation_transfer_time_s": self.generation_transfer(True)}


def pipelined(report: Report, network: Network, stages: Stages, fabric: Fabric, tp: int,
              inter_given: bool = False) -> Report:
    """``report`` (one GPU's tensor-parallel shard of ``network``, as ``serving_tp.serve``
    makes it) served over the pipeline: ``Report.pipeline_parallel`` attached, the hand-offs in
    its step's totals (and a generation's times), its memory the most loaded stage's;
    ``inter_given``: whether the inter-node link was given, not plan's default."""
    pp = len(stages.spans)
    memory = stages.memory()
    g = report.generation
    if g is None:
        group = PipelineParallel(pp, tp, fabric, stages,
                                 pipeline_step(report, network, stages, fabric, tp),
                                 inter_given=inter_given)
        return replace(report, memory=memory, pipeline_parallel=group)
    whole = network.with_overrides(mode="inference")
    prefill = pipeline_step(g.prefill, whole.with_overrides(
        phase="prefill", seq=g.prompt, logits=g.logits), stages, fabric, tp)
    steps = g.decode_steps
    decode = pipeline_step(report, whole.with_overrides(phase="decode", seq=g.prompt + steps),
                           stages, fabric, tp) if steps else None

    def steady(predicted: bool) -> float:
        """One batch's generation, pp in flight: each phase max(its latency, pp x its slowest
        stage's share of its stages' time)."""
        assert g is not None
        ttft, decode_s = ((g.predicted_ttft_s, g.predicted_decode_s) if predicted
                          else (g.ttft_s, g.decode_s))
        moved = prefill.predicted_transfer_s if predicted else prefill.transfer_s
        total = max(ttft + moved, pp * prefill.slowest_share(predicted) * ttft)
        if decode is None:
            return total
        moved = steps * (decode.predicted_transfer_s if predicted else decode.transfer_s)
        return total + max(decode_s + moved, pp * decode.slowest_share(predicted) * decode_s)

    d_roof, d_predicted = ((decode.transfer_s, decode.predicted_transfer_s) if decode
                           else (0.0, 0.0))
    g = replace(g, ttft_s=g.ttft_s + prefill.transfer_s,
                predicted_ttft_s=g.predicted_ttft_s + prefill.predicted_transfer_s,
                decode_s=g.decode_s + steps * d_roof,
                predicted_decode_s=g.predicted_decode_s + steps * d_predicted,
                in_flight=pp, steady_s=steady(False), predicted_steady_s=steady(True),
                memory_step=stages.memory_steps[stages.heaviest] if stages.memory_steps
                else g.memory_step, decode_max_batch=stages.decode_max_batch)
    group = PipelineParallel(pp, tp, fabric, stages, decode or prefill, prefill, decode, steps,
                             inter_given)
    return replace(report, generation=g, memory=memory, pipeline_parallel=group)
