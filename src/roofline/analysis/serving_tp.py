"""Serving a model over ``tp`` GPUs of one node by tensor parallelism (``analyze --tp N``,
``compare --tp N``, ``sweep --tp N``): each GPU runs its shard (``parallel_shard.shard_network``:
heads, kv_heads and ffn / tp, the vocabulary-parallel embedding and output layer), analyzed as
any model (its GEMMs, memory per GPU, the batch that fits), plus the communication of every
forward step, exposed (nothing overlaps it: each transfer waits for the GEMM before it and
holds up the one after).

Where tp passes a block's kv_heads, vLLM gives each GPU one KV head, the same head on tp /
kv_heads GPUs (``QKVParallelLinear``, ``parallel_shard.served_kv_heads``; tp must then be a
multiple of kv_heads, ``check_serving``): each GPU's QKV GEMM is (heads / tp + 2) x head_dim
wide, its attention reads its one head's K and V, and the K and V weights and the KV cache it
holds are 1 / kv_heads of the model's, not 1 / tp (``TensorParallel.kv_replicas``).

A step of T tokens (batch x prompt in a prefill, batch in a decode step) sends, Megatron-style
(Shoeybi et al. 2019, sec. 3; vLLM's ``RowParallelLinear`` and ``VocabParallelEmbedding``):

- two all-reduces of T x hidden per transformer block (after the attention's output
  projection and after the FFN's down projection), and one after the vocabulary-parallel
  embedding;
- the logits gathered to one rank for sampling: vLLM's ``LogitsProcessor._gather_logits``
  calls ``tensor_model_parallel_gather`` (to rank 0; an all-gather only on devices without a
  gather, TPUs): rows x vocab elements, rows the logits the step keeps (the batch, or every
  token with ``logits all``), the vocabulary padded as vLLM pads it (to a multiple of 64,
  ``padded_vocab(serving=True)``; Llama's 32000 stays 32000), which the shard's embedding and
  output layer divide by tp.

Times, on the node's intra-node link (``plan.make_fabric``: NVSwitch in an SXM node, PCIe for
PCIe cards) of bandwidth B per direction and per-step latency a (``Link.latency_us``, NCCL's
figure), for a buffer of S bytes on each of p GPUs:

- roof: the bytes alone at the link's bandwidth, a lower bound: 2 (p - 1) / p x S / B for an
  all-reduce (bandwidth-optimal), (p - 1) / p x S / B for the gather.
- predicted: the algorithm vLLM runs (its custom all-reduce, ``csrc/custom_all_reduce.cuh``,
  ``CustomAllreduce::allreduce``, for 2, 4, 6 or 8 GPUs and buffers under its 8 MiB buffer):
  with 2 GPUs, or on NVLink with 4 or fewer under 512 KiB or 8 or fewer under 256 KiB, the
  one-shot kernel (``cross_device_reduce_1stage``: every GPU reads its p - 1 peers' whole
  buffers and adds them), 2 a + (p - 1) S / B; larger buffers on NVLink the two-shot kernel
  (``cross_device_reduce_2stage``: reduce-scatter, then all-gather, through peer memory),
  2 a + 2 (p - 1) / p x S / B; each kernel synchronizes the GPUs twice (its start and end
  syncs), each charged one step's latency a. Otherwise (PCIe with more than 2 GPUs, where vLLM
  turns its kernel off; larger buffers; a link whose GPUs cannot read each other's memory,
  InfiniBand or Ethernet given as ``--intra``, or PCIe between GeForce boards, ``Link.p2p``
  false (vLLM's ``CustomAllreduce`` checks P2P access and is "disabled because your platform
  lacks GPU P2P capability" on two RTX 3090s or 4090s): the kernel needs P2P access) NCCL's ring,
  ``collectives.ring_time_s``:
  2 (p - 1) a + 2 (p - 1) / p x S / B. The gather: (p - 1) / p x S / B + a (the root receives
  every peer's part at once).

The ring's 2 (p - 1) latencies would make a decode step's small all-reduces cost 47.6 us each
at tp 8 on NVSwitch (14 x 3.4 us); vLLM's one-shot kernel was timed at 9.3 us for 16 KB and
11.8 us for 128 KB on 8 H100s (sgl-project/sglang#2904, host-timed without a CUDA graph),
against this module's 7.05 and 8.84 us; its two-shot at 24.1 us for 1 MB (10.9 here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InputError, option
from ..files.fields import positive_int
from ..hardware.links import Link
from ..hardware.spec import HardwareSpec
from ..model.layers import Embedding, Linear, Transformer
from ..model.lm_head import is_lm_head, vocabularies
from ..model.network import Network
from ..model.repeats import Layers
from .collectives import DEFAULT_GPUS_PER_NODE, _link_dict, ring_time_s
from .parallel_shard import padded_vocab, shard_network

if TYPE_CHECKING:
    from .report import Report
#: vLLM's custom all-reduce: the GPU counts it runs on and the largest buffer it takes (its
#: ``max_size`` default, 8 MiB); its one-shot kernel's limits by GPU count (bytes below)
CUSTOM_GPUS = (2, 4, 6, 8)
CUSTOM_MAX_BYTES = 8 * 1024 * 1024
ONE_SHOT_BELOW = ((4, 512 * 1024), (8, 256 * 1024))
KERNEL_SYNCS = 2  # start_sync and end_sync of either kernel


@dataclass(frozen=True)
class Transfer:
    """``count`` collectives of one kind in a step, each of ``nbytes`` on every GPU."""

    what: str  # "all-reduce" or "gather"
    count: int
    nbytes: int
    algorithm: str  # "one-shot", "two-shot", "ring" or "gather"
    roof_s: float  # one of them
    predicted_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"collective": self.what, "count": self.count, "bytes": self.nbytes,
                "algorithm": self.algorithm, "time_s": self.roof_s,
                "predicted_time_s": self.predicted_s}


@dataclass(frozen=True)
class StepComm:
    """One forward step's tensor-parallel transfers: ``tokens`` rows each."""

    tokens: int
    transfers: tuple[Transfer, ...]

    @property
    def roof_s(self) -> float:
        return sum(t.count * t.roof_s for t in self.transfers)

    @property
    def predicted_s(self) -> float:
        return sum(t.count * t.predicted_s for t in self.transfers)

    @property
    def count(self) -> int:
        return sum(t.count for t in self.transfers)

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "time_s": self.roof_s,
                "predicted_time_s": self.predicted_s, "collectives": self.count,
                "transfers": [t.to_dict() for t in self.transfers]}


class GenerationComm:
    """A served group's communication over a generation, for a dataclass holding a
    generation's ``prefill`` and ``decode`` step communication (``roof_s``, ``predicted_s``)
    and its ``decode_steps``: the prefill's plus each decode step's, each as ``decode`` (a
    decode step's transfers are of its tokens, not of the KV cache it reads, so every step's
    are alike); None for a single step (no ``prefill``). ``TensorParallel``'s and the
    data-parallel ranks' (``serving_dp.DataParallel``)."""

    prefill: Any
    decode: Any
    decode_steps: int

    def _generation(self, predicted: bool) -> float | None:
        if self.prefill is None:
            return None

        def one(comm: Any) -> float:
            return (comm.predicted_s if predicted else comm.roof_s) if comm is not None else 0.0

        return one(self.prefill) + self.decode_steps * one(self.decode)

    @property
    def generation_s(self) -> float | None:
        """All the generation's communication at the roof (None for a single step)."""
        return self._generation(False)

    @property
    def predicted_generation_s(self) -> float | None:
        return self._generation(True)


@dataclass(frozen=True)
class TensorParallel(GenerationComm):
    """The tensor-parallel group a Report's shard runs in, and its communication: of the
    report's own step (``step``), and of a generation's prefill and each decode step."""

    tp: int
    link: Link
    gpus_per_node: int
    basis: str  # where the link came from
    step: StepComm
    prefill: StepComm | None = None
    decode: StepComm | None = None
    decode_steps: int = 0
    #: the GPUs that hold each KV head: tp / kv_heads where tp passes kv_heads, else 1; tp
    #: with latent attention (vLLM counts MLA's latent as one KV head)
    kv_replicas: int = 1
    #: the model's blocks use latent attention (MLA): its KV cache whole on every GPU
    latent: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``tensor_parallel`` object."""
        return {"tp": self.tp, "gpus_per_node": self.gpus_per_node,
                "link": _link_dict(self.link),
                "link_basis": self.basis, "overlap": False,
                "kv_head_replicas": self.kv_replicas, "step": self.step.to_dict(),
                "prefill": self.prefill.to_dict() if self.prefill else None,
                "decode": self.decode.to_dict() if self.decode else None,
                "generation_time_s": self.generation_s,
                "predicted_generation_time_s": self.predicted_generation_s}


def requested(tp: Any = 1, gpus_per_node: Any = DEFAULT_GPUS_PER_NODE,
              intra: str | None = None, pp: Any = 1, inter: str | None = None) -> bool:
    """Whether a call asks for serving over several GPUs (any of its settings given off its
    default): ``api.analyze_model``, ``whatif.compare`` and ``whatif.sweep`` then ``serve``."""
    return (tp != 1 or intra is not None or gpus_per_node != DEFAULT_GPUS_PER_NODE or pp != 1
            or inter is not None)


def checked(network: Network, tp: Any, gpus_per_node: Any) -> tuple[int, int]:
    """``tp`` and ``gpus_per_node`` as positive integers (``files.fields.positive_int``),
    which ``network`` can be served over (``check_serving``); one line otherwise. compare and
    sweep ask it once, before the first device or point."""
    def fail(key: str, problem: str) -> InputError:
        return InputError(network.source, key, problem)

    tp, gpus_per_node = positive_int(tp, fail, "tp"), positive_int(gpus_per_node, fail,
                                                                    "gpus_per_node")
    check_serving(network, tp, gpus_per_node)
    return tp, gpus_per_node


def served_fields(report: Report) -> dict[str, Any]:
    """A compare device's or a sweep point's JSON fields of its serving over several GPUs, as
    analyze gives them: its ``totals.tp_comm_time_s`` and ``predicted_tp_comm_time_s`` (the
    step's exposed communication, inside its ``time_s`` and ``predicted_time_s``) and its
    ``tensor_parallel`` object; over a pipeline its ``totals.pp_comm_time_s`` and
    ``predicted_pp_comm_time_s`` (the step's hand-offs, inside them too) and its
    ``pipeline_parallel`` object; none where one GPU runs the step."""
    tp, pp = report.tensor_parallel, report.pipeline_parallel
    fields: dict[str, Any] = {}
    totals: Any = report.totals  # a ServedTotals where either is attached
    if tp is not None:
        fields |= {"tp_comm_time_s": totals["tp_comm_time_s"],
                   "predicted_tp_comm_time_s": totals["predicted_tp_comm_time_s"],
                   "tensor_parallel": tp.to_dict()}
    if pp is not None:
        fields |= {"pp_comm_time_s": totals["pp_comm_time_s"],
                   "predicted_pp_comm_time_s": totals["predicted_pp_comm_time_s"],
                   "pipeline_parallel": pp.to_dict()}
    return fields


def check_serving(network: Network, tp: int, gpus_per_node: int) -> None:
    """One line (InputError) for a tensor-parallel serving request the model cannot take: a
    training step (``plan`` lays those out), tp past one node's GPUs (serving across nodes is
    not modelled; tp below 1 is ``serve``'s positive-integer check), a model without
    transformer blocks, tp not dividing a block's heads or ffn, or neither dividing its kv_heads
    nor a multiple of them (vLLM's rule, ``_check_block``)."""
    src = network.source
    if network.mode == "train":
        raise InputError(src, "", f"{option('tp')} serves an inference step or a generation; a "
                                  f"training step's split over GPUs is `roofline plan`'s")
    if tp > gpus_per_node:
        raise InputError(src, "", f"tensor parallelism {tp} spans more than one node of "
                                  f"{gpus_per_node} GPUs ({option('gpus_per_node')}): serving "
                                  f"across nodes is not modelled by tensor parallelism (by "
                                  f"pipeline stages it is: {option('pp', 'N')})")
    blocks = _blocks(network)
    if not blocks and tp > 1:
        raise InputError(src, "", no_blocks_problem(network, "tensor", "tp"))
    for block in blocks:
        _check_block(src, block, tp)


def no_blocks_problem(network: Network, kind: str, key: str) -> str:
    """Why ``kind`` ("tensor", "pipeline") parallelism has nothing to split in ``network``,
    which has no transformer blocks: a captured module's layers are the ops torch ran, never a
    block (``model.capture``), which its config.json or a model.yaml describes."""
    if network.framework == "torch":
        return (f"{kind} parallelism splits transformer blocks, and a captured module has none: "
                f"its layers are the ops torch ran; serve the model from its config.json or a "
                f"model.yaml with {option(key, 'N')}, or use {option(key, '1')}")
    return (f"{kind} parallelism splits transformer blocks; the model has none (use "
            f"{option(key, '1')})")


def _blocks(network: Network) -> list[Transformer]:
    """The first copy of each run of ``network``'s transformer blocks (a run's copies alike: its
    first named in a message)."""
    blocks = []
    for run in network.layer_runs:
        if isinstance(run.layer, Transformer):
            block = run.copy(0)
            assert isinstance(block, Transformer)
            blocks.append(block)
    return blocks


def _check_block(src: str, block: Transformer, tp: int) -> None:
    """vLLM's split of a block over tp GPUs: ``heads`` and the FFN's width divided by tp (its
    ``ModelConfig.verify_with_parallel_config``, "Total number of attention heads (...) must be
    divisible by tensor parallel size (...)"; ``MergedColumnParallelLinear``'s ``divide``);
    kv_heads divided by tp, or where tp reaches them one a GPU, replicated tp / kv_heads times,
    which needs tp a multiple of them (``QKVParallelLinear``: ``divide(tp_size,
    total_num_kv_heads)``, else ``divide(total_num_kv_heads, tp_size)``, whose assertion reads
    "<numerator> is not divisible by <denominator>"). Megatron-LM's rule, plan's, asks tp to
    divide kv_heads (``parallel_layout._check_block``)."""
    for what, value in (("heads", block.heads), ("kv_heads", block.kv_heads),
                        ("ffn", block.ffn),
                        *((("shared_ffn", block.shared_ffn),) if block.shared_ffn else ())):
        if what == "kv_heads" and tp >= value:
            if tp % value:
                raise InputError(src, "", f"tensor parallelism {tp} is past kv_heads ({value}) "
                                          f"of block {block.name!r} but no multiple of them: "
                                          f"vLLM gives each GPU one KV head, the same on tp / "
                                          f"kv_heads GPUs, and refuses it ({tp} is not "
                                          f"divisible by {value}) ({option('tp')})")
        elif value % tp:
            either = (", or one replicated where tp is a multiple of them (vLLM: "
                      f"{value} is not divisible by {tp})" if what == "kv_heads" else "")
            raise InputError(src, "", f"tensor parallelism {tp} does not divide {what} "
                                      f"({value}) of block {block.name!r}: each GPU must get "
                                      f"whole {what}{either} ({option('tp')})")


def kv_head_replicas(network: Network, tp: int) -> int:
    """How many GPUs of the group hold each KV head (``parallel_shard.served_kv_heads``): tp /
    kv_heads where tp passes a block's kv_heads (the most over the blocks), else 1; all tp
    with latent attention, whose one latent a token vLLM keeps whole on every GPU
    (``ModelConfig.get_num_kv_heads``: 1 for MLA; ``layers.mla``)."""
    return max((tp if block.mla else tp // block.kv_heads for block in _blocks(network)
                if block.mla or tp > block.kv_heads), default=1)


def latent_kv(network: Network) -> bool:
    """Whether ``network``'s blocks keep a latent-attention (MLA) KV cache."""
    return any(block.mla for block in _blocks(network))


def allreduce(nbytes: int, p: int, link: Link) -> tuple[str, float, float]:
    """One all-reduce of ``nbytes`` on each of ``p`` GPUs: (algorithm, roof, predicted
    seconds) (module docstring)."""
    if p <= 1 or nbytes <= 0:
        return "none", 0.0, 0.0
    b, a = link.bandwidth_gbs * 1e9, link.latency_us * 1e-6
    roof = ring_time_s("all-reduce", nbytes, p, link.bandwidth_gbs)
    nvlink = link.type == "nvlink"
    # GPUs that read each other's memory (P2P): not on a PCIe link between GeForce boards
    # (``Link.p2p``, ``plan.make_fabric``), where vLLM turns its kernel off
    peer = link.p2p and (nvlink or link.type == "pcie")
    if p in CUSTOM_GPUS and nbytes < CUSTOM_MAX_BYTES and (p == 2 and peer or nvlink):
        if p == 2 or any(p <= most and nbytes < below for most, below in ONE_SHOT_BELOW):
            return "one-shot", roof, KERNEL_SYNCS * a + (p - 1) * nbytes / b
        return "two-shot", roof, KERNEL_SYNCS * a + roof
    return "ring", roof, ring_time_s("all-reduce", nbytes, p, link.bandwidth_gbs,
                                     link.latency_us)


def gather(nbytes: int, p: int, link: Link) -> tuple[float, float]:
    """The logits gathered to one rank: (roof, predicted seconds); ``nbytes`` the whole."""
    if p <= 1 or nbytes <= 0:
        return 0.0, 0.0
    roof = (p - 1) / p * nbytes / (link.bandwidth_gbs * 1e9)
    return roof, roof + link.latency_us * 1e-6


def step_comm(network: Network, tp: int, link: Link, span: range | None = None) -> StepComm:
    """The tensor-parallel transfers of ``network``'s (the whole model's, not the shard's)
    forward step (module docstring); with ``span``, of those layers only (a pipeline stage's,
    ``analysis.serving_pp``)."""
    step = network.step()
    tokens, e = step.tokens, step.e
    vocabulary = vocabularies(network)
    sizes: dict[tuple[str, int], int] = {}  # (collective, bytes) -> count

    def add(what: str, nbytes: int, count: int) -> None:
        sizes[(what, nbytes)] = sizes.get((what, nbytes), 0) + count

    layers = network.layers
    assert isinstance(layers, Layers)
    span = range(len(layers)) if span is None else span
    for layer, copies in layers.runs_in(span.start, span.stop):
        if isinstance(layer, Transformer):
            add("all-reduce", tokens * layer.hidden * e, 2 * copies)
        elif isinstance(layer, Embedding):
            add("all-reduce", tokens * layer.dim * e, copies)
        elif is_lm_head(layer, vocabulary):
            assert isinstance(layer, Linear)
            vocab = padded_vocab(layer.out_features, tp, serving=True)
            add("gather", _logit_rows(network) * vocab * e, copies)
    transfers = []
    for (what, nbytes), count in sizes.items():
        if what == "gather":
            roof, predicted = gather(nbytes, tp, link)
            transfers.append(Transfer(what, count, nbytes, "gather", roof, predicted))
        else:
            algorithm, roof, predicted = allreduce(nbytes, tp, link)
            transfers.append(Transfer(what, count, nbytes, algorithm, roof, predicted))
    return StepComm(tokens, tuple(transfers))


def _logit_rows(network: Network) -> int:
    """The rows of logits a step keeps: its output layer's tokens (``Network.last_step``: the
    batch in a decode step or a prefill keeping the last token's, else every token)."""
    return network.last_step().tokens


def serve(network: Network, hardware: HardwareSpec, tp: int,
          gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
          intra: str | None = None, prompt: int | None = None, generate: int | None = None,
          quantization: bool = False, pp: Any = 1, inter: str | None = None) -> Any:
    """The Report of one GPU's shard of ``network`` served over ``tp`` GPUs: a step as
    ``analyze`` gives it, or with ``prompt`` and ``generate`` a generation
    (``generation.generate``), with ``tensor_parallel`` attached and its communication in the
    step's totals and the generation's times (module docstring); with ``pp`` above 1 over a
    pipeline of pp such groups, the stages linked by ``inter`` between nodes
    (``serving_pp``: ``pipeline_parallel`` attached, the memory the most loaded stage's)."""
    from .generation import generate as run_generation
    from .plan import make_fabric
    from .report import analyze
    from .serving_pp import check_groups, checked_pp, pipelined, stages_of

    asked, pp = pp, checked_pp(network, pp, inter)  # first: its refusal of training names --pp
    tp, gpus_per_node = checked(network, tp, gpus_per_node)
    check_groups(network, tp, pp, gpus_per_node)
    fabric = make_fabric(hardware, intra, inter, gpus_per_node)
    link = fabric.intra
    basis = fabric.basis.split("; ")[0] if intra is None else "given"
    if network.phase == "prefill" and network.logits is None:
        # a server samples each sequence's next token: it keeps the last token's logits
        # (vLLM's LogitsProcessor prunes the hidden states to the sampled positions first),
        # where a bare prefill step otherwise computes, and here would gather, every token's
        network = network.with_overrides(logits="last")
    shard = shard_network(network, tp, serving=True)
    replicas = kv_head_replicas(network, tp)
    # a pipeline's stages and their memory first: the batch advice names the batch they fit
    stages = stages_of(network, shard, asked, hardware, prompt, generate) if pp > 1 else None
    memory = stages.memory() if stages else None
    served = tp > 1 or stages is None  # a tensor-parallel object only where tp is (or asked)
    if prompt is None or generate is None:
        report = analyze(shard, hardware, quantization, memory=memory)
        comm = step_comm(network, tp, link)
        report = replace(report, tensor_parallel=TensorParallel(
            tp, link, gpus_per_node, basis, comm, kv_replicas=replicas,
            latent=latent_kv(network)) if served else None)
        return (pipelined(report, network, stages, fabric, tp, inter is not None) if stages
                else report)
    report = run_generation(shard, hardware, prompt, generate, quantization, memory)
    g = report.generation
    assert g is not None
    whole = network.with_overrides(mode="inference")
    prefill = step_comm(whole.with_overrides(phase="prefill", seq=g.prompt, logits=g.logits),
                        tp, link)
    steps = g.decode_steps
    decode = step_comm(whole.with_overrides(phase="decode", seq=g.prompt + steps), tp,
                       link) if steps else None
    d_roof, d_predicted = (decode.roof_s, decode.predicted_s) if decode else (0.0, 0.0)
    g = replace(g, ttft_s=g.ttft_s + prefill.roof_s,
                predicted_ttft_s=g.predicted_ttft_s + prefill.predicted_s,
                decode_s=g.decode_s + steps * d_roof,
                predicted_decode_s=g.predicted_decode_s + steps * d_predicted)
    group = TensorParallel(tp, link, gpus_per_node, basis, decode or prefill, prefill, decode,
                           steps, replicas, latent_kv(network)) if served else None
    report = replace(report, generation=g, tensor_parallel=group)
    return (pipelined(report, network, stages, fabric, tp, inter is not None) if stages
            else report)
