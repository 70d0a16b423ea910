"""Serving a model over ``dp`` data-parallel ranks (``analyze --dp D``), as vLLM serves
``--data-parallel-size D`` (with ``--enable-expert-parallel`` for a mixture of experts). Every
rule read from vLLM's source or documentation:

- Which GPUs. Each DP rank is an engine of its own (vLLM's ``docs/serving/
  data_parallel_deployment.md``: "each DP rank is deployed as a separate core engine process"),
  its own ``--tensor-parallel-size`` T GPUs, D x T GPUs in all. A rank's attention, its dense
  layers, its embedding and its LM head are split over its T GPUs as ``--tp T`` splits them
  (``serving_tp``). The experts of a mixture form one group over all D x T GPUs: vLLM's
  ``FusedMoEParallelConfig.make`` (``vllm/model_executor/layers/fused_moe/config.py``)
  flattens tp across dp (``flatten_tp_across_dp_and_pcp``: ``dp_size x tp_size`` devices) and,
  with ``enable_expert_parallel``, sets ``ep_size`` to that and ``tp_size`` to 1: "each device
  owns a set of experts fully", E / (D x T) whole experts a GPU (``DeepseekV2MoE``:
  ``n_local_physical_experts = n_physical_experts // ep_size``; vLLM's expert-parallel page,
  "Each EP rank has NUM_TOTAL_EXPERTS / NUM_EP_RANKS experts"). Without expert parallelism vLLM
  splits each expert tensor-parallel over the D x T GPUs (the data-parallel page: "expert layers
  form a tensor parallel group of size DP x TP"): not modelled here, ``--dp`` is always
  expert-parallel. A dense model's ranks share nothing: each is a replica serving its own
  sequences (the data-parallel page: "model weights are replicated across separate
  instances/GPUs to process independent batches of requests"; only MoE ranks must stay in
  step).
- Which tensor parallelism within a rank is modelled. With T = 1 (vLLM's documented DeepSeek
  deployment, ``--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel`` on
  an 8-GPU H200 node, ``docs/serving/expert_parallel_deployment.md``) every GPU runs its rank's
  attention whole. With T above 1 and D above 1 under expert parallelism vLLM runs the MoE
  layers sequence-parallel (``ParallelConfig.use_sequence_parallel_moe``,
  ``vllm/config/parallel.py``: each of the T GPUs takes 1 / T of its rank's tokens into the
  experts, ``sequence_parallel_chunk``, the shared experts replicated, ``DeepseekV2MLP(...,
  disable_tp=is_sequence_parallel)``, and the rank's tokens all-gathered over tp after,
  ``DeepseekV2MoE.forward``): a mixture of experts at T above 1 is refused here (one line);
  a dense model at T above 1 is D replicas of ``--tp T``.
- The batch. The request batch is spread evenly over the D ranks, batch / D sequences each
  (vLLM's front end balances requests over the engines); a batch D does not divide is refused
  (one line): with an uneven spread the step is the busiest rank's. Each GPU's KV cache holds
  its own rank's sequences only; with latent attention (MLA) the latent is whole on each of the
  rank's T GPUs (``serving_tp.kv_head_replicas``). Memory per GPU: the rank's attention weights
  / T, the experts / (D x T) (``parallel_shard.shard_network``'s ``ep``), the embedding and LM
  head vocabulary-parallel over the rank's T (whole at T = 1), and the KV cache of its rank's
  batch / D sequences; the batch that fits is a rank's, D times it the group's.
- Communication of each MoE layer, vLLM's default all2all backend: ``ParallelConfig``'s
  ``all2all_backend = "allgather_reducescatter"`` (``vllm/config/parallel.py``; it was the
  ``VLLM_ALL2ALL_BACKEND`` environment variable in ``vllm/envs.py`` before), whose
  ``AgRsAll2AllManager`` (``vllm/distributed/device_communicators/all2all.py``) dispatches by an
  all-gather over the DP group (``dispatch``: ``all_gatherv`` of the hidden states, the top-k
  weights and the top-k ids, as ``MoEPrepareAndFinalizeNaiveDPEPModular.prepare`` calls it in
  ``fused_moe/prepare_finalize/naive_dp_ep.py``) and combines by a reduce-scatter of the experts'
  output (``combine``: ``reduce_scatterv``). The hidden states are gathered as the experts
  read them: ``prepare`` quantizes them before the dispatch (``_quantize_and_setup_dispatch``:
  ``moe_kernel_quantize_input`` to the MoE quantization config's ``quant_dtype``, fp8 or int8
  under W8A8, None, so the model's dtype, for a weight-only format or none), so their element
  size e is the activations' dtype's (``--activations``: 1 byte under fp8 or int8, else the
  model's 2); the experts' output comes back at the model's dtype, e_o (``finalize``'s
  ``TopKWeightAndReduceContiguous`` sum, then ``combine``). For t tokens a rank, hidden h,
  top_k k, each GPU adds t (h e + 8 k) bytes to the gathered buffer (the top-k weights fp32,
  the ids int32: vLLM's routing returns ``topk_weights.to(torch.float32),
  topk_ids.to(torch.int32)``), whole D t (h e + 8 k); the combine reduce-scatters D t h e_o.
  Priced as every collective here (``collectives.ring_time_s``, NCCL's ring on the node's link,
  ``plan.make_fabric``): roof (p - 1) / p x the whole buffer / B, predicted plus (p - 1)
  steps' latency; exposed (nothing overlaps them: the experts wait for the dispatch, the next
  layer for the combine). vLLM's ``deepep_*`` (DeepEP all-to-all kernels), ``naive`` and
  ``flashinfer_*`` backends move other bytes and are not modelled, nor are a W8A8 dispatch's
  scales (``extra_tensors``: under fp8 block quantization h / 128 fp32 values a token, 3% of
  its fp8 hidden states; one fp32 a token per-token, none per-tensor, a scalar kept on every
  rank), nor the monolithic kernels' path that gathers the router logits in place of the top-k
  ids and weights (``MoEPrepareAndFinalizeNaiveDPEPMonolithic``, for kernels that route
  inside), or the sum of the top-k outputs over all D t gathered rows that the
  all-gather path runs before its combine (the even spread's routed rows are counted, a GPU's
  t k).
- Lockstep. A mixture of experts' ranks synchronize in every MoE layer, so each step is the
  slowest rank's, and a rank with no request runs a dummy forward pass to stay in step (the
  data-parallel page: "empty dummy forward passes are performed in all ranks that don't
  currently have any requests scheduled"). With the batch spread evenly and the routed rows
  spread evenly over the experts (the tool's stated even spread, ``Transformer._expert_rows``,
  the ``experts:`` line of analyze's output) every rank is equally loaded: none idles and the
  step time is every rank's.
- Tokens/s: the D ranks' together, D x the rank's tokens over the step (or D x a rank's batch x
  G over a generation's latency).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InputError, option
from ..files.fields import positive_int
from ..hardware.links import Link
from ..model.dtypes import itemsize
from ..model.layers import Transformer
from ..model.network import Network
from .collectives import DEFAULT_GPUS_PER_NODE, _link_dict, ring_time_s
from .serving_tp import GenerationComm

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec
    from .report import Report

#: vLLM's default all2all backend for expert-parallel MoE layers (``ParallelConfig``)
ALL2ALL_BACKEND = "allgather_reducescatter"
#: bytes a token sends with each of its top-k experts: its routing weight in fp32 and its
#: expert id in int32 (vLLM's routing functions return both so)
ROUTE_BYTES = 4 + 4


def moe_blocks(network: Network) -> tuple[Transformer | None, int]:
    """The first block of experts in ``network`` and how many blocks of experts it has
    (every copy of every run): (None, 0) for a dense model."""
    first, count = None, 0
    for run in network.layer_runs:
        if isinstance(run.layer, Transformer) and run.layer.experts:
            if first is None:
                first = run.layer
            count += run.count
    return first, count


@dataclass(frozen=True)
class Collective:
    """One MoE layer's dispatch (all-gather) or combine (reduce-scatter): ``nbytes`` the whole
    buffer, ``per_gpu`` what each GPU adds to it (the dispatch) or keeps of it (the combine)."""

    what: str  # "all-gather" or "reduce-scatter"
    nbytes: int
    per_gpu: int
    roof_s: float
    predicted_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"collective": self.what, "bytes": self.nbytes, "bytes_per_gpu": self.per_gpu,
                "algorithm": "ring", "time_s": self.roof_s, "predicted_time_s": self.predicted_s}


@dataclass(frozen=True)
class DispatchComm:
    """One forward step's expert-parallel communication: ``layers`` MoE layers, each a dispatch
    and a combine over the ``dp`` GPUs, of a step of ``tokens`` a rank."""

    tokens: int
    layers: int
    dispatch: Collective | None
    combine: Collective | None
    hidden_dtype: str = ""  # the dtype the dispatch gathers the hidden states in ("": none)

    @property
    def roof_s(self) -> float:
        parts = [c.roof_s for c in (self.dispatch, self.combine) if c]
        return self.layers * sum(parts)

    @property
    def predicted_s(self) -> float:
        parts = [c.predicted_s for c in (self.dispatch, self.combine) if c]
        return self.layers * sum(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "moe_layers": self.layers,
                "hidden_dtype": self.hidden_dtype or None,
                "dispatch": self.dispatch.to_dict() if self.dispatch else None,
                "combine": self.combine.to_dict() if self.combine else None,
                "time_s": self.roof_s, "predicted_time_s": self.predicted_s}


def dispatch_comm(network: Network, dp: int, link: Link) -> DispatchComm:
    """The dispatch and combine of every MoE layer of ``network``'s step (one rank's: its batch
    the rank's) over ``dp`` GPUs on ``link`` (module docstring); none for a dense model."""
    block, layers = moe_blocks(network)
    step = network.step()
    if block is None or dp <= 1:
        return DispatchComm(step.tokens, layers, None, None)
    # the hidden states as the experts read them, the output at the model's dtype (docstring)
    t, e, h, k = step.tokens, itemsize(network.activation_dtype), block.hidden, block.top_k
    each = t * (h * e + ROUTE_BYTES * k)
    gathered = dp * each
    out = dp * t * h * step.e
    bw, lat = link.bandwidth_gbs, link.latency_us
    dispatch = Collective("all-gather", gathered, each, ring_time_s("all-gather", gathered, dp, bw),
                          ring_time_s("all-gather", gathered, dp, bw, lat))
    combine = Collective("reduce-scatter", out, out // dp,
                         ring_time_s("reduce-scatter", out, dp, bw),
                         ring_time_s("reduce-scatter", out, dp, bw, lat))
    return DispatchComm(t, layers, dispatch, combine, network.activation_dtype)


@dataclass(frozen=True)
class DataParallel(GenerationComm):
    """The data-parallel ranks a Report's GPU serves in (``Report.data_parallel``): the batch
    spread over them, where the experts sit, and the expert-parallel communication of the
    report's own step (``step``) and of a generation's prefill and each decode step."""

    dp: int
    tp: int
    batch: int  # the request batch, all ranks'
    link: Link
    gpus_per_node: int
    basis: str
    step: DispatchComm
    experts: int = 0  # the model's routed experts a block (0: a dense model)
    prefill: DispatchComm | None = None
    decode: DispatchComm | None = None
    decode_steps: int = 0
    #: the step's time with its communication (roof, predicted), for tokens/s
    step_s: float = 0.0
    predicted_step_s: float = 0.0
    rank_max_batch: int | None = None  # the largest batch one rank fits (None: not stated)

    @property
    def gpus(self) -> int:
        return self.dp * self.tp

    @property
    def rank_batch(self) -> int:
        return self.batch // self.dp

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def local_experts(self) -> int | None:
        return self.experts // self.gpus if self.moe else None

    @property
    def max_batch(self) -> int | None:
        """The request batch the group fits: each rank's largest, D times."""
        return None if self.rank_max_batch is None else self.dp * self.rank_max_batch

    def tokens_per_s(self, predicted: bool = False) -> float:
        """The D ranks' tokens a second: D x a rank's step tokens over the step's time."""
        time = self.predicted_step_s if predicted else self.step_s
        return self.dp * self.step.tokens / time if time > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``data_parallel_ranks`` object."""
        return {"dp": self.dp, "tp": self.tp, "gpus": self.gpus,
                "gpus_per_node": self.gpus_per_node, "batch": self.batch,
                "rank_batch": self.rank_batch, "expert_parallel": self.moe,
                "experts": self.experts or None, "local_experts": self.local_experts,
                "all2all_backend": ALL2ALL_BACKEND if self.moe else None,
                "link": _link_dict(self.link), "link_basis": self.basis, "overlap": False,
                "lockstep": self.moe, "step": self.step.to_dict(),
                "step_time_s": self.step_s, "predicted_step_time_s": self.predicted_step_s,
                # a generation's are its own (``generation.tokens_per_s``, the D ranks'): the
                # last decode step's rate beside them would be a second, larger figure
                "tokens_per_s": None if self.prefill else self.tokens_per_s(),
                "predicted_tokens_per_s": None if self.prefill else self.tokens_per_s(True),
                "rank_max_batch": self.rank_max_batch, "max_batch": self.max_batch,
                "prefill": self.prefill.to_dict() if self.prefill else None,
                "decode": self.decode.to_dict() if self.decode else None,
                "generation_time_s": self.generation_s,
                "predicted_generation_time_s": self.predicted_generation_s}


def requested(dp: Any = 1) -> bool:
    """Whether a call asks for data-parallel serving (``dp`` off its default; a bool, which
    equals 1 in Python, is taken as asked, so that ``checked_dp`` refuses it)."""
    return dp != 1 or isinstance(dp, bool)


def checked_dp(network: Network, dp: Any, tp: Any, pp: Any, gpus_per_node: Any) -> tuple[int,
                                                                                         int, int]:
    """``dp``, ``tp`` and ``gpus_per_node`` as positive integers that ``network`` can be served
    over data-parallel; one line (InputError) otherwise: a training step (``plan`` lays those
    out), a pipeline (not modelled with data parallelism), D x T past one node (across nodes the
    dispatch would cross the inter-node link: not modelled), no batch or one D does not divide,
    a mixture of experts at T above 1 (vLLM's sequence-parallel MoE, not modelled) or whose
    experts D x T does not divide; then the tensor-parallel checks (``serving_tp.checked``)."""
    from .serving_tp import checked

    def fail(key: str, problem: str) -> InputError:
        return InputError(network.source, key, problem)

    src = network.source
    dp = positive_int(dp, fail, "dp")
    if network.mode == "train":
        raise InputError(src, "", f"{option('dp')} serves an inference step or a generation; a "
                                  f"training step's data parallelism is `roofline plan`'s")
    if isinstance(pp, (list, tuple)) or pp != 1:
        raise InputError(src, "", f"{option('dp')} with {option('pp')} is not modelled: serve "
                                  f"data-parallel ranks of one tensor-parallel group each "
                                  f"({option('pp', '1')})")
    block, _ = moe_blocks(network)
    if block is not None and tp != 1:
        raise InputError(src, "", f"{option('dp')} {dp} with {option('tp')} {tp} over a mixture "
                                  f"of experts runs vLLM's sequence-parallel MoE (each GPU of a "
                                  f"rank taking 1/{tp} of its tokens into the experts), which "
                                  f"is not modelled: give {option('tp', '1')} with "
                                  f"{option('dp')}")
    tp, gpus_per_node = checked(network, tp, gpus_per_node)
    if dp * tp > gpus_per_node:
        raise InputError(src, "", f"data parallelism {dp} x tensor parallelism {tp} is "
                                  f"{dp * tp} GPUs, past one node of {gpus_per_node} "
                                  f"({option('gpus_per_node')}): across nodes the experts' "
                                  f"dispatch would cross the inter-node link, which is not "
                                  f"modelled ({option('dp')})")
    batch = network.batch
    if batch is None:
        raise InputError(src, "batch", f"{option('dp')} spreads the batch over its ranks: give "
                                       f"{option('batch')}")
    if batch % dp:
        raise InputError(src, "", f"batch {batch} does not spread evenly over {dp} "
                                  f"data-parallel ranks: give a batch that is a multiple of "
                                  f"{dp} (with an uneven spread every step is the busiest "
                                  f"rank's) ({option('dp')})")
    if block is not None and block.experts % (dp * tp):
        raise InputError(src, "", f"{dp * tp} GPUs do not split the {block.experts} experts of "
                                  f"block {block.name!r} evenly: expert parallelism gives each "
                                  f"GPU whole experts, E / (dp x tp) ({option('dp')})")
    return dp, tp, gpus_per_node


def serve_dp(network: Network, hardware: HardwareSpec, dp: Any, tp: Any = 1,
             gpus_per_node: Any = DEFAULT_GPUS_PER_NODE, intra: str | None = None,
             prompt: int | None = None, generate: int | None = None,
             quantization: bool = False, pp: Any = 1) -> Report:
    """The Report of one GPU of ``network`` served over ``dp`` data-parallel ranks of ``tp``
    GPUs each (module docstring): a step as ``analyze`` gives it, or with ``prompt`` and
    ``generate`` a generation, of one rank's batch / dp sequences, its GPU's share of the
    experts, with ``data_parallel`` attached and the expert-parallel communication in the
    step's totals and the generation's times."""
    from .generation import generate as run_generation
    from .parallel_shard import shard_network
    from .plan import make_fabric
    from .report import analyze
    from .serving_tp import serve

    dp, tp, gpus_per_node = checked_dp(network, dp, tp, pp, gpus_per_node)
    fabric = make_fabric(hardware, intra, None, gpus_per_node)
    link = fabric.intra
    basis = fabric.basis.split("; ")[0] if intra is None else "given"
    batch = network.batch
    assert batch is not None  # checked_dp's
    if network.phase == "prefill" and network.logits is None:
        # a server samples each sequence's next token (as ``serving_tp.serve``)
        network = network.with_overrides(logits="last")
    rank = network.with_overrides(batch=batch // dp)
    block, _ = moe_blocks(network)
    experts = block.experts if block is not None else 0
    if tp > 1:  # a dense model's replicas, each served as --tp serves it
        report = serve(rank, hardware, tp, gpus_per_node, intra, prompt, generate, quantization)
    else:
        shard = shard_network(rank, 1, ep=dp, serving=True) if experts else rank
        report = (analyze(shard, hardware, quantization) if prompt is None or generate is None
                  else run_generation(shard, hardware, prompt, generate, quantization))
    g = report.generation
    if g is None:
        comm = dispatch_comm(rank, dp if experts else 1, link)
        group = DataParallel(dp, tp, batch, link, gpus_per_node, basis, comm, experts)
    else:
        whole = rank.with_overrides(mode="inference")
        prefill = dispatch_comm(whole.with_overrides(phase="prefill", seq=g.prompt,
                                                     logits=g.logits), dp if experts else 1,
                                link)
        steps = g.decode_steps
        decode = dispatch_comm(whole.with_overrides(phase="decode", seq=g.prompt + steps),
                               dp if experts else 1, link) if steps else None
        d_roof, d_predicted = (decode.roof_s, decode.predicted_s) if decode else (0.0, 0.0)
        g = replace(g, ttft_s=g.ttft_s + prefill.roof_s,
                    predicted_ttft_s=g.predicted_ttft_s + prefill.predicted_s,
                    decode_s=g.decode_s + steps * d_roof,
                    predicted_decode_s=g.predicted_decode_s + steps * d_predicted, ranks=dp)
        group = DataParallel(dp, tp, batch, link, gpus_per_node, basis, decode or prefill,
                             experts, prefill, decode, steps)
    totals = report.totals  # without this group's communication
    memory = report.memory
    group = replace(group, step_s=totals["time_s"] + group.step.roof_s,
                    predicted_step_s=totals["predicted_time_s"] + group.step.predicted_s,
                    rank_max_batch=memory.max_batch if memory else None)
    return replace(report, generation=g, data_parallel=group)
