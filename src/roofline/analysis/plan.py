"""The layout search: for N GPUs of one kind, every (tp, pp, dp, ep, ZeRO stage, micro-batch)
split of a training step of a global batch that the model allows, evaluated per GPU
(``analysis.parallel``), those that fit ranked by predicted step time (the roofline step time
beside it, a lower bound), and the Pareto front of predicted step time against GPU count.

Candidates, for each N: tp a divisor of N up to the GPUs of one node (tensor parallelism stays
inside a node, on its fastest link) that divides every block's heads, kv_heads and ffn; pp a
divisor of N / tp no larger than the number of transformer blocks, the blocks split as evenly as
they go where pp does not divide them (``parallel.stage_blocks``: the first stages one block
more; Llama 3's 405B trained with pp 16 over its 126 blocks, Meta's "The Llama 3 Herd of
Models", 2024, Table 4, its first and last stages one block fewer, sec. 3.3.2), the step paced
by the slowest stage (``parallel.evaluate``); dp = N / (tp pp); the micro-batch a power of two
(1, 2, 4, 8 unless given) with dp x micro-batch dividing the global batch; ZeRO 0 to 3 (0 and 1
with a pipeline; 0 alone where dp is 1, unless stages are given: ZeRO shards the weights,
gradients and optimizer states over the data-parallel ranks, and over one it leaves every byte
and collective as stage 0 has them, ``_zero_stages``); ep (MoE models) a divisor of dp and of
the experts (1 unless given); with experts, tp > 1 only with sequence parallelism
(Megatron-Core's ``MoELayer`` refuses MoE training with tensor parallelism without it, and its
dispatcher starts from each GPU's T / tp tokens, ``parallel_comm._moe_comm``); vp, the model
chunks of Megatron-LM's interleaved schedule a pipeline GPU holds (1, the 1F1B schedule, unless
given), above 1 only with pp > 1, pp x vp chunks no more than the blocks (split as evenly as
they go, as stages are: ``parallel.gpu_blocks``) and the micro-batches a data-parallel rank runs
a multiple of pp (Megatron-Core's interleaved schedule runs them in groups of
``microbatch_group_size_per_vp_stage``, pp by default, and refuses a last group smaller than
pp). These rules are
``_broken_rule``'s, in one place: when no split of any count keeps them all, the error names the
rule the splits that got furthest broke. Sequence parallelism is on whenever tp > 1 unless
turned off (its reduce-scatters and all-gathers take the all-reduces' time, it saves activation
memory, and it adds one small all-reduce a step: the gradients of the parameters every GPU of
the group holds whole, ``parallel_comm.duplicated_parameters``). Each distinct (tp, ep,
micro-batch) shard is analyzed once, and what a part of a layout sets is worked out once for the
layouts that share it (``parallel.evaluate``'s ``cache``). The front: the fastest fitting layout
at each GPU count that is faster than every smaller count's.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from itertools import product
from typing import TYPE_CHECKING, Any

from ..errors import InputError, option, render_options
from ..files.numbers import parse_int, quoted, span
from ..hardware.spec import HardwareSpec
from ..model.layers import Transformer
from ..model.network import Network
from .collectives import DEFAULT_GPUS_PER_NODE, Fabric
from .parallel import (
    ZERO_STAGES,
    Layout,
    LayoutResult,
    blocks_of,
    check_layout,
    check_training,
    divisors,
    evaluate,
    gpu_blocks,
    shard_report,
)
from .predict import basis_of, fit_of
from .report import Report

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..hardware.links import Link

DEFAULT_MICRO_BATCHES = (1, 2, 4, 8)


def parse_counts(value: str, name: str) -> tuple[int, ...]:
    """``8``, ``8,16,64`` or ``A..B``: A, every power of two strictly between, and B, as
    ``sweep`` reads a range (``numbers.span``: 8..512 the powers of two, 6..48 is 6, 8, 16, 32,
    48); ``name`` is the option the error names."""
    text = value.strip()
    try:
        if ".." in text:
            low, high = (parse_int(part) for part in text.split("..", 1))
            if not low <= high:
                raise ValueError
            return span(low, high)
        return tuple(sorted({parse_int(piece) for piece in text.split(",")}))
    except ValueError as exc:
        why = f" ({exc})" if str(exc) else ""
        raise InputError(name, "", f"expected a count, a comma list (8,16,64) or A..B (A, the "
                                   f"powers of two between, B), got {quoted(value)}{why}") from None


@dataclass(frozen=True)
class Plan:
    """Every evaluated layout, fitting or not, and the front."""

    network: Network
    hardware: HardwareSpec
    batch: int
    fabric: Fabric
    gpus: tuple[int, ...]
    results: tuple[LayoutResult, ...]  # every candidate, by GPUs then predicted step time
    reports: dict[tuple[int, int, int], Report] = field(default_factory=dict, repr=False)
    #: values of a given --tp, --pp or --ep list the model cannot take, each with why, where the
    #: list held others it can (``_usable``)
    left_out: tuple[str, ...] = ()

    @property
    def fitting(self) -> list[LayoutResult]:
        return list(self._fitting)

    @cached_property
    def _fitting(self) -> tuple[LayoutResult, ...]:
        return tuple(r for r in self.results if r.fits is not False)

    @cached_property
    def _by_count(self) -> dict[int, tuple[list[LayoutResult], list[LayoutResult]]]:
        """Per GPU count, the layouts tried and those that fit fastest first (``ranked``),
        made once: the outputs read them count by count, a plan of 64 counts 70 times."""
        tried: dict[int, list[LayoutResult]] = {}
        for r in self.results:
            tried.setdefault(r.layout.gpus, []).append(r)
        return {n: (tried_n, sorted((r for r in tried_n if r.fits is not False),
                                    key=lambda r: (r.predicted_step_s, r.step_s)))
                for n, tried_n in tried.items()}

    def ranked(self, gpus: int) -> list[LayoutResult]:
        """The layouts on ``gpus`` GPUs that fit, fastest predicted first (then by the
        roofline step time)."""
        return list(self._by_count.get(gpus, ([], []))[1])

    def shortfall(self, gpus: int) -> dict[str, int] | None:
        """Where layouts on ``gpus`` GPUs were tried and none fits: the least memory a GPU needs
        in any of them (``least_bytes``), and the least without the activations
        (``least_without_activations_bytes``: weights, gradients, optimizer states and the
        workspace allowance of a layout's fullest stage), which no recomputation lowers. None
        where one fits or none was tried."""
        considered = self._by_count.get(gpus, ([], []))[0]
        if not considered or self.ranked(gpus):
            return None
        return {"least_bytes": min(r.memory_bytes for r in considered),
                "least_without_activations_bytes": min(
                    max(sum(s.memory.values()) - s.memory["activations"] for s in r.stages)
                    for r in considered)}

    @property
    def front(self) -> list[LayoutResult]:
        """The Pareto front of predicted step time against GPUs: the best layout at each count
        that beats every smaller count."""
        out: list[LayoutResult] = []
        for n in self.gpus:
            ranked = self.ranked(n)
            if ranked and (not out or ranked[0].predicted_step_s < out[-1].predicted_step_s):
                out.append(ranked[0])
        return out

    @property
    def assumptions(self) -> tuple[str, ...]:
        """``ASSUMPTIONS``, the schedule's line saying the interleaved one where a layout
        interleaves (``INTERLEAVED``)."""
        lines: tuple[str, ...] = ASSUMPTIONS
        if any(r.layout.vp > 1 for r in self.results):
            lines = tuple(INTERLEAVED if text.startswith("1F1B") else text for text in lines)
        net = self.network
        if net.activation_dtype != net.operand_dtype:
            # model.quantized.kept_in_training: Megatron-Core's output layer and router gating
            # run outside the fp8 recipe
            act, d = net.activation_dtype, net.operand_dtype
            lines += (f"every weight GEMM in {act} (--activations), forward and backward, but "
                      f"the LM head's and the routers', in {d}: Megatron-Core runs its output "
                      f"layer and router gating outside {act}",)
        return lines

    @property
    def best(self) -> LayoutResult | None:
        front = self.front
        return front[-1] if front else None

    def __repr__(self) -> str:
        """One line (the dataclass's own repr printed every layout and report: 2.9 MB for a
        plan of Mistral-7B over 8..64 GPUs, which Jupyter would print whole)."""
        from ..units import count, seconds

        best = self.best
        found = (f"best {best.layout.label} on {count(best.layout.gpus, 'GPU')}, "
                 f"{seconds(best.predicted_step_s)} predicted" if best else "none fits")
        counts = ", ".join(str(n) for n in self.gpus)
        return (f"<Plan {self.network.name} on {self.hardware.name}: {counts} GPUs, "
                f"{count(len(self.results), 'layout')}, {len(self.fitting)} fit; {found}>")

    def _repr_html_(self) -> str:
        """Jupyter: the block of ``roofline plan --format html``'s page (its chart, the
        layouts' sortable tables, the front, the best layout)."""
        from ..output.html import plan_fragment

        return plan_fragment(self)

    def plot(self, ax: Axes | None = None) -> Axes:
        """Step time against GPUs, every fitting layout and the Pareto front
        (``roofline.plot.plot_plan``, ``plan --plot``); returns the Axes, a figure of its own
        without ``ax``."""
        from ..plot import plot_plan

        return plot_plan(self, ax=ax)

    @cached_property
    def _blocks(self) -> int:
        """The transformer blocks the pipeline stages split (``parallel.blocks_of``)."""
        return len(blocks_of(self.network))

    def layout_dict(self, r: LayoutResult) -> dict[str, Any]:
        """One layout as the JSON holds it (``LayoutResult.to_dict``) with the blocks each
        pipeline GPU runs, ``stage_blocks`` (``parallel.gpu_blocks``); the CSV's row reads the
        same dict (``output.plan_csv``)."""
        return r.to_dict() | {"stage_blocks": list(gpu_blocks(self._blocks, r.layout.pp,
                                                              r.layout.vp))}

    def to_dict(self, top: int | None = None) -> dict[str, Any]:
        """JSON: the model and device, the fabric, the prediction's basis (as analyze's), the
        assumptions, per GPU count the fitting layouts fastest first (``top`` of them), and the
        front."""
        net = self.network
        layout = self.layout_dict
        per_count = []
        unknown: dict[str, int | None] = {"least_bytes": None,
                                          "least_without_activations_bytes": None}
        for n in self.gpus:
            ranked = self.ranked(n)
            considered = self._by_count.get(n, ([], []))[0]
            per_count.append({"gpus": n, "candidates": len(considered),
                              "fitting": len(ranked),
                              "layouts": [layout(r) for r in ranked[:top]]}
                             | (self.shortfall(n) or unknown))
        return {"model": net.name, "hardware": self.hardware.name, "dtype": net.operand_dtype,
                "batch": self.batch, "seq": net.seq, "optimizer": net.optimizer,
                "recompute": net.recompute, "attention": attention_form(net),
                "fabric": self.fabric.to_dict(),
                "prediction_basis": basis_of(self.hardware),
                "prediction_fit": fit_of(self.hardware),
                "capacity_basis": self.hardware.memory_capacity_basis,
                "assumptions": list(self.assumptions), "left_out": list(self.left_out),
                "counts": per_count, "front": [layout(r) for r in self.front]}


def attention_form(network: Network) -> str | None:
    """The attention its transformer blocks run (``flash``, ``naive``, or both joined by
    ``+``), which sets the activations a layout keeps; None without blocks."""
    forms = dict.fromkeys(run.layer.attention for run in network.layer_runs
                          if isinstance(run.layer, Transformer))
    return "+".join(forms) or None


ASSUMPTIONS = (
    "step times per GPU as analyze gives them: the roofline (a lower bound) and the prediction "
    "(each GEMM and op at its predicted time); layouts ranked by the prediction",
    "tensor-, expert- and pipeline-parallel transfers are exposed; data-parallel collectives "
    "hide behind the backward passes they are issued with (ZeRO 0/1: the last micro-batch's, "
    "2: every backward, 3: every forward and backward); after them the gradients of the "
    "parameters every tensor-parallel GPU holds whole (norms, routers, latent down "
    "projections) are all-reduced over its group once a step, exposed (Megatron-Core's "
    "finalize_model_grads)",
    "ring collectives, hierarchical across nodes, one NIC per GPU; NCCL's per-step latency",
    "1F1B pipeline schedule; ranks ordered tensor, data, pipeline; ZeRO 2 and 3 without a "
    "pipeline only (pp 1: DeepSpeed refuses the combination)",
    "memory per GPU without ZeRO-3's gathered-layer buffer (the full weights of the layer "
    "running and of the next, being gathered)",
    "recomputation runs its forward work again in each layer's backward pass, timed there "
    "(full: every block's forward, its tensor- and expert-parallel transfers again; "
    "selective: naive attention's core; with flash attention nothing)",
)


#: the schedule's assumption where a layout interleaves (vp > 1)
INTERLEAVED = (
    "1F1B pipeline schedule, interleaved where vp > 1 (Megatron-LM's: each GPU holds vp model "
    "chunks, chunk c of pp x vp on GPU c mod pp; bubble (p - 1) / vp micro-batch times, "
    "point-to-point transfers at every chunk boundary, the micro-batches a multiple of pp); "
    "ranks ordered tensor, data, pipeline; ZeRO 2 and 3 without a pipeline only (pp 1: "
    "DeepSpeed refuses the combination)")


def _choices(given: Sequence[int] | None, default: Sequence[int]) -> list[int]:
    return sorted(set(given)) if given else list(default)


def plan_layouts(network: Network, hardware: HardwareSpec, gpus: Sequence[int], batch: int,
                 fabric: Fabric, tp: Sequence[int] | None = None,
                 pp: Sequence[int] | None = None, zero: Sequence[int] | None = None,
                 micro_batch: Sequence[int] | None = None, ep: Sequence[int] | None = None,
                 sequence_parallel: bool = True, quantization: bool = False,
                 progress: Callable[[str], None] | None = None,
                 vp: Sequence[int] | None = None) -> Plan:
    """Every layout of ``network``'s training step (global batch ``batch``) on each count in
    ``gpus`` (module docstring). Given lists restrict the choices; a given value the model
    cannot take (tp not dividing the heads, a pipeline deeper than the blocks, ZeRO 2 with a
    pipeline) is one line, and so is a layout no count can hold. ``vp``: the model chunks a
    pipeline GPU holds (interleaved stages; default 1, 1F1B)."""
    network.check()
    check_training(network)  # before the layouts: an inference step has none to divide
    tp, tp_out = _usable(network, "tp", tp,
                         lambda v: Layout(tp=v, sequence_parallel=sequence_parallel))
    pp, pp_out = _usable(network, "pp", pp, lambda v: Layout(pp=v))
    ep, ep_out = _usable(network, "ep", ep, lambda v: Layout(ep=v, dp=v))
    # a chunk count no given pipeline takes: the shallowest given deeper than 1 (2 when none
    # is given) takes the most chunks
    shallow = min((p for p in pp or [2] if p > 1), default=1)
    vp, vp_out = _usable(network, "vp", vp, lambda v: Layout(pp=shallow if v > 1 else 1, vp=v))
    _check_choices(network, gpus, tp, pp, zero, ep, sequence_parallel)
    zero_out: list[str] = []
    if zero and pp and min(pp) > 1:  # a stage no given depth takes: left out, as tp's values
        zero, zero_out = _usable(network, "zero", zero, lambda v: Layout(pp=min(pp), zero=v))
    reports: dict[tuple[int, int, int], Report] = {}
    times: dict[tuple[Any, ...], Any] = {}  # evaluate's cache: per report, sp_tp (and stage)
    results: list[LayoutResult] = []
    layouts, why_none = _candidates(network, gpus, batch, fabric, tp, pp, zero, micro_batch, ep,
                                    sequence_parallel, vp)
    # a chunk count every pipeline takes but no split of the batch runs (its micro-batches
    # never a multiple of pp): said, not dropped, with the rule its splits broke
    taken = {lay.vp for lay in layouts}
    for v in [v for v in vp or () if layouts and v not in taken]:
        why = _candidates(network, gpus, batch, fabric, tp, pp, zero, micro_batch, ep,
                          sequence_parallel, [v])[1]
        vp_out.append(f"vp {v}: " + render_options(why, lambda n, _: n).rsplit(" (", 1)[0])
    shards = len({(lay.tp, lay.ep, lay.micro_batch) for lay in layouts})
    if progress and layouts:  # one line, then each quarter: a line a shard was 44 for 405B
        progress(f"plan: {len(layouts):,} layouts over {shards} distinct shards (tp, ep, "
                 f"micro-batch), each shard analyzed once ...")
    quarters = {shards * q // 4 for q in (1, 2, 3)} - {0, shards} if shards >= 8 else set()
    with _collector_paused():
        for layout in layouts:
            key = (layout.tp, layout.ep, layout.micro_batch)
            if key not in reports:
                if progress and len(reports) in quarters:
                    progress(f"plan: {len(reports)} of {shards} shards analyzed")
                reports[key] = shard_report(network, hardware, layout, quantization)
            results.append(evaluate(network, hardware, layout, batch, fabric, reports[key],
                                    times))
        results.sort(key=lambda r: (r.layout.gpus, r.predicted_step_s, r.step_s,
                                    r.step_no_overlap_s, r.memory_bytes))
    if not results:
        raise InputError(network.source, "", f"no layout of the global batch {batch} runs on "
                                             f"{', '.join(map(str, gpus))} GPUs with the "
                                             f"choices given: {why_none}")
    return Plan(network, hardware, batch, fabric, tuple(gpus), tuple(results), reports,
                (*tp_out, *pp_out, *vp_out, *ep_out, *zero_out))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the search, as it was after: the search keeps
    hundreds of thousands of small objects and makes no cycles (two ``StageCost`` a stage,
    341,860 for Llama-2-70B over 64 GPU counts), which the collector scanned again and again as
    they grew (9 full passes over up to 0.8 million objects there): a fifth of that model's
    search over 8..4096 GPUs, an eighth of the one over 64 counts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _usable(network: Network, name: str, given: Sequence[int] | None,
            layout: Callable[[int], Layout]) -> tuple[Sequence[int] | None, list[str]]:
    """``given`` (the ``name`` list: tp, pp, ep, or the ZeRO stages at the shallowest pipeline
    given) without the values the model cannot take (``check_layout``: a pipeline deeper than
    the blocks, tp not dividing the heads, ZeRO 2 with a pipeline, ...), and
    each of those as ``pp 64: why``; where none is left, the first one's error: a range such as
    ``--pp 1..64`` on 32 blocks plans its 1-32 and says 64 was left out, a lone value the
    model cannot take stays an error."""
    if not given:
        return given, []
    kept: list[int] = []
    out: list[str] = []
    first: InputError | None = None
    for value in sorted(set(given)):
        try:
            check_layout(network, layout(value))
        except InputError as exc:
            first = first or exc
            why = render_options(exc.problem, lambda n, v: n if v is None else f"{n} {v}")
            out.append(f"{name} {value}: {why.removesuffix(f' ({name})')}")
        else:
            kept.append(value)
    if not kept:
        assert first is not None
        raise first
    return kept, out


def _check_choices(network: Network, gpus: Sequence[int], tp: Sequence[int] | None,
                   pp: Sequence[int] | None, zero: Sequence[int] | None,
                   ep: Sequence[int] | None, sequence_parallel: bool) -> None:
    """Explicit choices the model cannot take, and a layout no count can hold: one line."""
    for value in tp or ():
        check_layout(network, Layout(tp=value, sequence_parallel=sequence_parallel))
    for value in pp or ():
        check_layout(network, Layout(pp=value))  # no deeper than the blocks
    for value in ep or ():
        check_layout(network, Layout(ep=value, dp=value))
    for value in zero or ():
        if value not in ZERO_STAGES:
            raise InputError(network.source, "", f"{option('zero')} must be 0, 1, 2 or 3, got "
                                                 f"{value}")
    smallest = min(tp or [1]) * min(pp or [1]) * min(ep or [1])
    if smallest > max(gpus):
        raise InputError(network.source, "", f"the smallest layout asked for (tp x pp x ep = "
                                             f"{smallest}) needs more GPUs than the "
                                             f"{max(gpus)} given ({option('gpus')})")


def _candidates(network: Network, gpus: Sequence[int], batch: int, fabric: Fabric,
                tp: Sequence[int] | None, pp: Sequence[int] | None,
                zero: Sequence[int] | None, micro_batch: Sequence[int] | None,
                ep: Sequence[int] | None, sequence_parallel: bool,
                vp: Sequence[int] | None = None) -> tuple[list[Layout], str]:
    """Every layout the module docstring allows, GPU count by count; and, when there is
    none, the rule the splits that got furthest broke (``_broken_rule``), as a clause."""
    blocks = len(blocks_of(network))
    experts = max((run.layer.experts for run in network.layer_runs
                   if isinstance(run.layer, Transformer)), default=0)
    tp_ok = {t: _tp_ok(network, t) for n in gpus for t in divisors(n)} | {
        t: _tp_ok(network, t) for t in tp or ()}
    layouts: list[Layout] = []
    furthest: int | None = None
    for n in gpus:
        tps = _choices(tp, [d for d in divisors(n) if d <= fabric.gpus_per_node])
        for t, p, e, v in product(tps, _choices(pp, divisors(n)), _choices(ep, [1]),
                                  _choices(vp, [1])):
            dp = n // (t * p) if n % (t * p) == 0 else 0
            for b in _micro_batches(micro_batch, batch, dp):
                for z in _zero_stages(zero, dp):
                    broken = _broken_rule(n, t, p, e, b, z, tp_ok[t], blocks, experts, batch,
                                          sequence_parallel, v)
                    if broken is None:
                        layouts.append(Layout(t, p, dp, e, z, b, sequence_parallel and t > 1,
                                              v))
                        continue
                    if furthest is None or broken > furthest:
                        furthest = broken
                    if broken <= MICRO_BATCH_RULES:  # every ZeRO stage breaks it too
                        break
                if broken is not None and broken <= SPLIT_RULES:  # every micro-batch too
                    break
    if layouts or furthest is None:
        return layouts, ""
    return layouts, _rule_text(furthest, blocks, experts)


def _zero_stages(given: Sequence[int] | None, dp: int) -> list[int]:
    """The ZeRO stages to try at ``dp`` data-parallel ranks: those given, else every stage, but
    stage 0 alone at dp 1, where a stage shards over one rank and changes nothing (its rows
    were stage 0's, repeated, and crowded other layouts out of ``--top``)."""
    if given:
        return _choices(given, ZERO_STAGES)
    return [0] if dp == 1 else list(ZERO_STAGES)


def _micro_batches(given: Sequence[int] | None, batch: int, dp: int) -> list[int]:
    """The micro-batches to try at ``dp`` data-parallel ranks: those given, else
    ``DEFAULT_MICRO_BATCHES`` (an LLM's sequences a micro-batch) and each rank's whole share of
    the batch, one micro-batch a step (no gradient accumulation), which a small model wants: an
    MLP's 4096 rows on 2 GPUs in micro-batches of 8 rows run 256 thin, memory-bound steps where
    one of 2048 rows runs near the peak."""
    if given:
        return list(given)
    share = batch // dp if dp and batch % dp == 0 else 0
    return [*DEFAULT_MICRO_BATCHES, *([share] if share > max(DEFAULT_MICRO_BATCHES) else [])]


#: ``_broken_rule``'s first rules, 0 to 4, read the GPU count, tp, pp and ep only, and rule 5
#: the micro-batch too: a split that breaks one of them breaks it at every ZeRO stage (and
#: micro-batch), so ``_candidates`` asks no further (Llama-2-70B over 64 GPU counts, every
#: knob open: 255,330 splits asked, 1,464,760 before)
SPLIT_RULES, MICRO_BATCH_RULES = 4, 5


def _broken_rule(n: int, tp: int, pp: int, ep: int, micro_batch: int, zero: int, tp_ok: bool,
                 blocks: int, experts: int, batch: int, sequence_parallel: bool,
                 vp: int = 1) -> int | None:
    """The first rule (module docstring) the split breaks, as its index in the order they are
    checked, which ``_rule_text`` words; None when it keeps them all. A split that breaks a
    later rule kept the earlier ones: the error names the furthest."""
    if n % (tp * pp):
        return 0
    dp = n // (tp * pp)
    broken = (not tp_ok, pp > 1 and pp > blocks, dp % ep,
              ep > 1 and (not experts or experts % ep), batch % (dp * micro_batch),
              zero >= 2 and pp > 1, experts > 0 and tp > 1 and not sequence_parallel,
              vp > 1 and pp == 1, vp > 1 and pp * vp > blocks,
              vp > 1 and batch // (dp * micro_batch) % pp > 0)
    return next((index for index, fails in enumerate(broken, 1) if fails), None)


def _rule_text(rule: int, blocks: int, experts: int) -> str:
    """``_broken_rule``'s rule ``rule`` as a clause."""
    return (f"tp x pp must divide the GPU count ({option('gpus')})",
            f"tp must divide every block's heads, kv_heads and ffn ({option('tp')})",
            f"pp must be at most the model's {blocks} transformer blocks ({option('pp')})",
            f"ep must divide dp, the GPUs over tp x pp ({option('ep')})",
            f"ep must divide the {experts} experts ({option('ep')})",
            f"dp x micro-batch must divide the global batch ({option('batch')})",
            f"ZeRO 2 and 3 do not combine with a pipeline ({option('zero')})",
            "experts with tensor parallelism need sequence parallelism: Megatron-Core refuses "
            f"MoE training with tp > 1 without it ({option('tp', '1')} or "
            f"{option('sequence_parallel')})",
            f"interleaved stages (vp > 1) need a pipeline, pp > 1 ({option('vp')})",
            f"pp x vp must be at most the model's {blocks} transformer blocks ({option('vp')})",
            "interleaved stages need the micro-batches a data-parallel rank runs to be a "
            f"multiple of pp ({option('batch')}, {option('vp')})"
            )[rule]


DEFAULT_INTER = "ib-ndr"


def make_fabric(hardware: HardwareSpec, intra: str | None = None, inter: str | None = None,
                gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> Fabric:
    """The links of a cluster of ``hardware``: ``intra`` and ``inter`` (links.yaml names or
    GB/s) when given; else inside a node the NVSwitch of an SXM entry's NVLink generation (an
    8-GPU HGX board), or PCIe of the entry's host-link generation (a PCIe card's NVLink
    bridge joins two GPUs only: ``nvlink3-bridge`` names a GA102 pair's), and between nodes
    InfiniBand NDR, one 400 Gb/s NIC per GPU (as in a DGX H100). The basis says which were
    defaults. A default switch joins the GPUs of its board only (``Link.node_gpus``, 8): a node
    of more GPUs names its link (one line). A PCIe link between boards without peer-to-peer
    access (``gpu.pcie_p2p`` false) is marked so, ``Link.p2p``, and its label and the basis say
    it (``NO_P2P``)."""
    from ..hardware.links import resolve_link

    if gpus_per_node < 1:
        raise InputError("gpus_per_node", "", f"expected at least 1, got {gpus_per_node}")
    said = []
    if intra is None:
        name = _default_intra(hardware)
        said.append(f"intra-node {name} (default for {hardware.name})")
        inside = resolve_link(name, "intra")
        _check_node(inside, hardware, gpus_per_node)
    else:
        inside = resolve_link(intra, "intra")
    if inside.type == "pcie" and hardware.gpu is not None and hardware.gpu.pcie_p2p is False:
        inside = replace(inside, p2p=False, label=f"{inside.label}, {NO_P2P}")
        said.append(f"{hardware.name}: {NO_P2P}")
    if inter is None:
        inter = DEFAULT_INTER
        said.append(f"inter-node {inter} (default)")
    return Fabric(inside, resolve_link(inter, "inter"), gpus_per_node, "; ".join(said) or "given")


#: What a PCIe link is between boards that cannot read each other's memory over it
#: (``gpu.pcie_p2p`` false: GeForce RTX 3090 and 4090, whose deviceQuery says ``Peer access
#: ... : No``): NCCL's ring through host memory, which NCCL's own model prices as any PCI path
#: (``src/graph/tuning.cc``: every intra-node path but NVLink is ``NCCL_HW_PCI``), and no vLLM
#: custom all-reduce (``CustomAllreduce.__init__``: "disabled because your platform lacks GPU
#: P2P capability"; ``serving_tp.allreduce``).
NO_P2P = "no peer-to-peer access (through host memory)"

#: The intra-node link of an SXM entry by its NVLink generation: V100's NVLink 2 (a DGX-1's
#: hybrid cube-mesh, no switch), then each generation's 8-GPU HGX board's switch.
SXM_INTRA = {2: "nvlink2", 3: "nvswitch-a100", 4: "nvswitch-h100", 5: "nvswitch-b200"}


def _default_intra(hardware: HardwareSpec) -> str:
    nvlink = hardware.stored.get("nvlink") or {}
    version = nvlink.get("version") if isinstance(nvlink, dict) else None
    if "sxm" in hardware.name.lower() and version in SXM_INTRA:
        return SXM_INTRA[version]
    link = hardware.host_link
    if link is not None and link.type == "pcie" and link.generation in (3, 4, 5):
        return f"pcie{link.generation}-x16"
    raise InputError(hardware.name, "", f"no intra-node link known for this entry: give one "
                                        f"({option('intra')} NAME or GB/s)")


def _check_node(link: Link, hardware: HardwareSpec, gpus_per_node: int) -> None:
    """One line where the default switch of ``hardware``'s board joins fewer GPUs than a node
    is said to hold: its bandwidth and latency are that board's, not a larger node's."""
    if link.node_gpus is not None and gpus_per_node > link.node_gpus:
        raise InputError(hardware.name, "", f"{option('gpus_per_node')} {gpus_per_node}: the "
                                            f"default link inside a node, {link.label}, joins "
                                            f"{link.node_gpus}; name the link of a "
                                            f"{gpus_per_node}-GPU node ({option('intra')} "
                                            f"NAME|GBPS)")


def _tp_ok(network: Network, tp: int) -> bool:
    """Whether tp divides every block's heads, kv_heads and ffn (sequence parallelism, which
    an MoE model's tp needs, is ``_broken_rule``'s to check)."""
    try:
        check_layout(network, Layout(tp=tp, sequence_parallel=True))
    except InputError:
        return False
    return True
