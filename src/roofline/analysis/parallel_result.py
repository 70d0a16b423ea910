"""A layout's result (``LayoutResult``): per GPU, each pipeline stage's micro-batch times,
communication and memory (``StageCost``), the pipelined step they make ((m + p - 1) times the
slowest stage under 1F1B, (m + (p - 1) / v) interleaved; the bubble, ``pipeline_bubble``), the
data-parallel communication exposed and hidden, the duplicated parameters' gradient all-reduce
over the tensor-parallel group after it (exposed), the memory against the capacity, the bound,
and the same at the predicted times; ``to_dict`` is plan's JSON contract (docs/design.md).
The rules: ``analysis.parallel``."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from .parallel_layout import Layout
from .report import Report


@dataclass(frozen=True)
class StageCost:
    """One pipeline stage on one GPU: per micro-batch times, and the step's memory."""

    forward_s: float
    backward_s: float  # recomputation's forward work included (``recompute_s``)
    memory_bound_s: float  # of forward + backward, the memory-bound time
    tp_comm_s: float
    ep_comm_s: float
    p2p_s: float
    optimizer_s: float
    dp_comm_s: float
    dp_window_s: float  # the compute the data-parallel collectives can hide behind
    parameters: int
    memory: dict[str, int]
    recompute_s: float = 0.0  # of backward_s, the forward run again (analysis.recompute)
    #: once a step, after the data-parallel reduce: the all-reduce over the tensor-parallel
    #: group of the gradients of the parameters each of its GPUs holds whole, and their bytes
    #: (``parallel_comm.duplicated_parameters``); exposed
    tp_grad_s: float = 0.0
    tp_grad_bytes: int = 0

    @classmethod
    def of(cls, *values: Any) -> StageCost:
        """A stage's cost from every field's value in order, the same object as
        ``StageCost(*values)`` made without the frozen dataclass's ``__init__``, which sets a
        field at a time through ``object.__setattr__`` (two a stage, a third of a layout
        search's time; ``parallel_stage._stage``); given fewer values, that ``__init__``, its
        defaults."""
        if len(values) != len(_STAGE_FIELDS):
            return cls(*values)
        cost = object.__new__(cls)
        cost.__dict__.update(zip(_STAGE_FIELDS, values))
        return cost

    @property
    def microbatch_s(self) -> float:
        return (self.forward_s + self.backward_s + self.tp_comm_s + self.ep_comm_s
                + self.p2p_s)

    @property
    def dp_overlapped_s(self) -> float:
        return min(self.dp_comm_s, self.dp_window_s)

    @property
    def dp_exposed_s(self) -> float:
        return self.dp_comm_s - self.dp_overlapped_s


_STAGE_FIELDS = tuple(f.name for f in fields(StageCost))


@dataclass(frozen=True)
class LayoutResult:
    """A layout of one training step on ``layout.gpus`` GPUs: per GPU, its step time and its
    parts, communication exposed and overlapped, memory against the capacity, the bound."""

    layout: Layout
    batch: int  # the global batch: sequences per optimizer step
    seq: int
    micro_batches: int  # m, per data-parallel rank
    stages: tuple[StageCost, ...]
    capacity_bytes: int | None
    allreduce_bytes: int  # one tensor-parallel all-reduce of a block (T h e)
    replicated: tuple[str, ...] = ()
    report: Report | None = field(default=None, compare=False, repr=False)
    #: the stages with every GEMM and op at its predicted time (empty: the prediction's own view)
    predicted_stages: tuple[StageCost, ...] = ()

    @cached_property
    def predicted(self) -> LayoutResult:
        """This layout with every GEMM and op at its predicted time (``analysis.parallel``); made
        once (ranking, the front and the table all read it)."""
        if not self.predicted_stages:
            return self
        return replace(self, stages=self.predicted_stages, predicted_stages=())

    @property
    def predicted_step_s(self) -> float:
        return self.predicted.step_s

    @cached_property
    def critical(self) -> StageCost:
        """The slowest stage per micro-batch: it sets the pipeline's pace."""
        return max(self.stages, key=lambda s: s.microbatch_s)

    @property
    def pipeline_s(self) -> float:
        """(m + p - 1) x the slowest stage's micro-batch time (m x it without a pipeline);
        interleaved, (m + (p - 1) / v) x it (``bubble_s``)."""
        return (self.micro_batches + self.bubble_slots) * self.critical.microbatch_s

    @property
    def bubble_slots(self) -> float:
        """The bubble in micro-batch times of the slowest stage: p - 1 under 1F1B; (p - 1) / v
        interleaved (Narayanan et al., sec. 2.2.2: the fill and drain run chunks of 1 / v of a
        stage's work). A stage is a GPU: all its v chunks, whose micro-batch time is one chunk
        after another, pace the steady state, as its whole stage does in 1F1B."""
        lay = self.layout
        return lay.pp - 1 if lay.vp == 1 else (lay.pp - 1) / lay.vp

    @cached_property
    def tail(self) -> StageCost:
        """The stage whose exposed data-parallel communication, duplicated gradients'
        all-reduce and update take longest: what follows the pipeline's last backward."""
        return max(self.stages, key=lambda s: s.dp_exposed_s + s.tp_grad_s + s.optimizer_s)

    @cached_property
    def step_s(self) -> float:
        tail = self.tail
        return self.pipeline_s + tail.dp_exposed_s + tail.tp_grad_s + tail.optimizer_s

    @property
    def step_no_overlap_s(self) -> float:
        return self.pipeline_s + max(s.dp_comm_s + s.tp_grad_s + s.optimizer_s
                                     for s in self.stages)

    @property
    def tp_grad_bytes(self) -> int:
        """The most bytes of duplicated gradients a stage all-reduces over its tensor-parallel
        group once a step (``StageCost.tp_grad_bytes``; 0 at tp 1)."""
        return max(s.tp_grad_bytes for s in self.stages)

    @property
    def bubble_fraction(self) -> float:
        """(p - 1) / (m + p - 1); interleaved (p - 1) / (v m + p - 1) (``pipeline_bubble``)."""
        return pipeline_bubble(self.layout.pp, self.micro_batches, self.layout.vp)

    @property
    def recompute_s(self) -> float:
        """Of the parts' ``compute_s``, the forward work recomputation runs again: the critical
        stage's per micro-batch, m times (0 with ``recompute`` none, or where it runs nothing
        again: selective with flash attention)."""
        return self.micro_batches * self.critical.recompute_s

    @property
    def parts(self) -> dict[str, float]:
        """The step by part, seconds per GPU (they add up to ``step_s``)."""
        c, m, tail = self.critical, self.micro_batches, self.tail
        return {"compute_s": m * (c.forward_s + c.backward_s), "tp_comm_s": m * c.tp_comm_s,
                "ep_comm_s": m * c.ep_comm_s, "p2p_s": m * c.p2p_s,
                "bubble_s": self.bubble_slots * c.microbatch_s,
                "dp_comm_exposed_s": tail.dp_exposed_s,
                "dp_comm_overlapped_s": tail.dp_overlapped_s,
                "tp_grad_allreduce_s": tail.tp_grad_s, "optimizer_s": tail.optimizer_s}

    @cached_property
    def memory(self) -> dict[str, int]:
        """The stage that needs the most memory, by part (made once: ranking reads it for
        every layout)."""
        return max((s.memory for s in self.stages), key=lambda parts: sum(parts.values()))

    @cached_property
    def memory_bytes(self) -> int:
        return sum(self.memory.values())

    @property
    def fits(self) -> bool | None:
        return None if self.capacity_bytes is None else self.memory_bytes <= self.capacity_bytes

    @property
    def tokens_per_s(self) -> float:
        return self.batch * self.seq / self.step_s

    @property
    def bound(self) -> str:
        """What takes the largest share of the step: compute (compute-bound work), memory
        (memory-bound work and the optimizer update), communication (exposed), or the
        pipeline bubble."""
        parts, c, m = self.parts, self.critical, self.micro_batches
        memory = m * c.memory_bound_s + parts["optimizer_s"]
        shares = {"compute": parts["compute_s"] - m * c.memory_bound_s, "memory": memory,
                  "communication": exposed_comm_s(parts), "pipeline bubble": parts["bubble_s"]}
        return max(shares, key=lambda k: shares[k])

    def to_dict(self) -> dict[str, Any]:
        memory, predicted = self.memory, self.predicted
        return self.layout.to_dict() | {
            "micro_batches": self.micro_batches, "step_s": self.step_s,
            "step_no_overlap_s": self.step_no_overlap_s, "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": self.tokens_per_s / self.layout.gpus,
            "parts": self.parts, "bubble_fraction": self.bubble_fraction, "bound": self.bound,
            "recompute_s": self.recompute_s,
            "predicted_step_s": predicted.step_s,
            "predicted_tokens_per_s": predicted.tokens_per_s,
            "predicted_parts": predicted.parts, "predicted_bound": predicted.bound,
            "predicted_recompute_s": predicted.recompute_s,
            "tp_allreduce_bytes": self.allreduce_bytes,
            "tp_grad_allreduce_bytes": self.tp_grad_bytes,
            "memory": memory | {"total_bytes": self.memory_bytes,
                                "capacity_bytes": self.capacity_bytes, "fits": self.fits},
            "replicated_layers": list(self.replicated)}


#: The parts of a step (``LayoutResult.parts``) that are communication on its critical path:
#: tensor-, expert- and pipeline-parallel transfers, the data-parallel collectives' exposed
#: share and the duplicated gradients' all-reduce (the "comm exposed" of plan's tables)
EXPOSED_COMM = ("tp_comm_s", "ep_comm_s", "p2p_s", "dp_comm_exposed_s", "tp_grad_allreduce_s")


def exposed_comm_s(parts: dict[str, float]) -> float:
    """The step's exposed communication: ``EXPOSED_COMM``'s parts added in that order."""
    total = 0.0
    for key in EXPOSED_COMM:
        total += parts[key]
    return total


def pipeline_bubble(pp: int, micro_batches: int, vp: int = 1) -> float:
    """The bubble's share of the step: (p - 1) / (m + p - 1) under 1F1B; interleaved over vp
    chunks a GPU, (p - 1) / (vp m + p - 1), its (p - 1) / vp micro-batch times over m + (p - 1) /
    vp (Narayanan et al., sec. 2.2.2: (p - 1) / (vp m) of the ideal m)."""
    return (pp - 1) / (vp * micro_batches + pp - 1)
