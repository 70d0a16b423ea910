"""Beyond one device: a step's input streamed from host memory, and data-parallel training
with a ring all-reduce. Arithmetic on a Report's totals; links are data (``links.yaml``).

Host link (``--stream-input``): the step reads its input (``Network.input_bytes``: the first
layer's dense batch, sparse rows with their indices, images, an embedding's int64 token ids;
refused where the first layer does not say, a captured module's) from host memory over the device's
host link, ``time = bytes / bandwidth``; the step is host-link-bound when that is longer than
its compute time (the roofline step time), else device-bound.

Data parallelism (``--data-parallel P --interconnect NAME|GBPS``): each of P workers runs the
model's batch and all-reduces its gradients, ``G = parameters x gradient element size`` bytes
(the ``grad_accumulation`` dtype when set, else the model's dtype). A ring all-reduce sends and
receives ``2 (P - 1) / P x G`` bytes per worker (Patarasuk and Yuan, 2009) in 2 (P - 1) steps,
each paying the link's per-step latency a (``links.yaml``'s ``latency_us``, NCCL's; 0 for a
link given as GB/s), so ``allreduce_s = 2 (P - 1) / P x G / bandwidth + 2 (P - 1) a``: the
ring time ``plan`` uses too (``collectives.ring_time_s``). Without overlap a step takes
``compute + allreduce``; with the all-reduce overlapped with the backward pass (as DDP issues
its buckets while the gradients are made), ``compute - backward + max(backward, allreduce)``:
the forward pass and the optimizer's update hide nothing. Scaling efficiency = compute / step
(weak scaling: throughput over P x one worker's). The network is the roof from the smallest P
whose all-reduce outlasts the backward pass it hides behind; never when the latency is 0 and
2 G / bandwidth <= backward (the all-reduce tends to that as P grows), else the smallest P found
by bisection (the time grows with P), up to ``MAX_WORKERS``.

An inference step has no gradients: its data-parallel replicas share nothing, so P of them
serve P times one's throughput, whatever the interconnect. There is nothing to model, and the
all-reduce table would be false (a ring of gradients an inference step never makes, and a 0 s
backward pass to hide it behind), so ``scale`` refuses workers for an inference step and says
so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError, RooflineError, option
from ..files.numbers import parse_int, quoted
from ..hardware.links import resolve_link
from ..hardware.spec import HostLink
from ..model.dtypes import itemsize
from ..model.repeats import float_total
from .collectives import ring_time_s
from .report import Report


def parse_workers(value: str) -> tuple[int, ...]:
    """``--data-parallel``: one worker count or a comma list (``1,2,4,8,16,32``)."""
    counts = []
    for piece in value.split(","):
        try:
            counts.append(parse_int(piece))
        except ValueError as exc:
            raise InputError("workers", "", f"expected worker counts >= 1 (one, or a comma "
                                            f"list such as 1,2,4,8), got {quoted(value)} "
                                            f"({exc})") from None
    return tuple(counts)


@dataclass(frozen=True)
class HostLinkStream:
    """One step's input over the host link."""

    link: str
    bandwidth_gbs: float
    bytes: int
    time_s: float
    compute_s: float

    @property
    def bound(self) -> str:
        return "host-link" if self.time_s > self.compute_s else "device"

    def to_dict(self) -> dict[str, Any]:
        return {"link": self.link, "bandwidth_gbs": self.bandwidth_gbs, "bytes": self.bytes,
                "time_s": self.time_s, "bound": self.bound}



@dataclass(frozen=True)
class DataParallel:
    """One worker count of data-parallel training with a ring all-reduce."""

    workers: int
    gradient_bytes: int
    interconnect: str
    interconnect_gbs: float
    compute_s: float
    backward_s: float = 0.0  # the backward pass's share of compute_s: the overlap window
    latency_us: float = 0.0  # per ring step

    @property
    def allreduce_s(self) -> float:
        """2 (P - 1) / P x gradient bytes / bandwidth + 2 (P - 1) x the per-step latency."""
        return ring_time_s("all-reduce", self.gradient_bytes, self.workers,
                           self.interconnect_gbs, self.latency_us)

    @property
    def step_s(self) -> float:
        """Compute, then the all-reduce (no overlap)."""
        return self.compute_s + self.allreduce_s

    @property
    def step_overlap_s(self) -> float:
        """The all-reduce hidden behind the backward pass where it can be (module docstring)."""
        return self.compute_s - self.backward_s + max(self.backward_s, self.allreduce_s)

    def to_dict(self) -> dict[str, Any]:
        return {"workers": self.workers, "gradient_bytes": self.gradient_bytes,
                "interconnect": self.interconnect, "interconnect_gbs": self.interconnect_gbs,
                "latency_us": self.latency_us, "backward_s": self.backward_s,
                "compute_s": self.compute_s, "allreduce_s": self.allreduce_s,
                "step_s": self.step_s, "scaling_efficiency": self.compute_s / self.step_s,
                "step_overlap_s": self.step_overlap_s,
                "scaling_efficiency_overlap": self.compute_s / self.step_overlap_s}


#: The most workers the network-roof search looks at (the bound of every integer, 2**40).
MAX_WORKERS = 2**40


def network_roof_workers(gradient_bytes: int, gbs: float, window_s: float,
                         latency_us: float = 0.0) -> int | None:
    """The fewest workers whose ring all-reduce outlasts ``window_s`` (the backward pass it
    hides behind); None if no count up to ``MAX_WORKERS`` does (without latency: 2 T1 <=
    window, the all-reduce tending to 2 T1 as P grows). The time grows with P: bisection."""
    def outlasts(p: int) -> bool:
        return ring_time_s("all-reduce", gradient_bytes, p, gbs, latency_us) > window_s

    if not outlasts(MAX_WORKERS):
        return None
    low, high = 1, MAX_WORKERS  # outlasts(high), not outlasts(1): one worker sends nothing
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if outlasts(middle) else (middle, high)
    return high


@dataclass(frozen=True)
class Scaling:
    """What ``--stream-input`` and ``--data-parallel`` add to a report."""

    host_link: HostLinkStream | None = None
    data_parallel: tuple[DataParallel, ...] = ()
    network_roof_workers: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON: ``host_link`` and ``data_parallel`` (the last worker count given), and with
        several counts ``data_parallel_sweep`` (all of them); only what was asked for."""
        out: dict[str, Any] = {}
        if self.host_link:
            out["host_link"] = self.host_link.to_dict()
        if self.data_parallel:
            out["data_parallel"] = self.data_parallel[-1].to_dict() | {
                "network_roof_workers": self.network_roof_workers}
            if len(self.data_parallel) > 1:
                out["data_parallel_sweep"] = [d.to_dict() for d in self.data_parallel]
        return out



def scale(report: Report, stream_input: bool = False, host_link: str | None = None,
          workers: str | tuple[int, ...] | None = None,
          interconnect: str | None = None) -> Report:
    """``report`` with what was asked for: the streamed input over the entry's host link (or
    ``host_link``, a links.yaml name or GB/s, which also replaces the entry's link on the plot)
    and a data-parallel table over ``interconnect`` for each worker count."""
    if workers is None and interconnect is not None:
        raise InputError("interconnect", "", f"no worker counts to all-reduce among: give "
                                             f"{option('workers', '8')} (or a list, 1,8,32) too")
    result = Scaling()
    if host_link is not None or stream_input:
        report = _stream(report, host_link)
        result = report.scaling or result
    if workers is not None:
        counts = parse_workers(workers) if isinstance(workers, str) else tuple(workers)
        if not counts or min(counts) < 1:
            raise InputError("workers", "", f"expected worker counts >= 1, got {workers}")
        if report.network.mode != "train":
            raise InputError("workers", "", f"an inference step has no gradients to "
                             f"all-reduce: its replicas run apart, so {max(counts)} of them "
                             f"serve {max(counts)}x one's throughput (100% scaling); this "
                             f"models training's gradient all-reduce "
                             f"({option('mode', 'train')})")
        if interconnect is None:
            raise InputError("workers", "", f"no interconnect to all-reduce over: give "
                             f"{option('interconnect', 'ib-ndr')} too (a links.yaml name such "
                             f"as ib-ndr or nvlink4, or GB/s per direction)")
        link = resolve_link(interconnect, "interconnect")
        net = report.network
        grad = itemsize(net.grad_accumulation or net.operand_dtype) * net.parameters
        compute, backward = report.totals["time_s"], backward_s(report)
        result = replace(result, data_parallel=tuple(
            DataParallel(p, grad, link.label, link.bandwidth_gbs, compute, backward,
                         link.latency_us) for p in counts),
            network_roof_workers=network_roof_workers(grad, link.bandwidth_gbs, backward,
                                                      link.latency_us))
    return replace(report, scaling=result)


def backward_s(report: Report) -> float:
    """The roofline time of the step's backward pass (its GEMMs' and ops' whose pass is a
    backward one, every copy counted, and the forward work recomputation runs again in it,
    ``totals['recompute_time_s']``): the window a data-parallel all-reduce hides behind."""
    def backward(item: Any) -> bool:
        return item.pass_.startswith("backward")

    return (float_total(report.results, lambda r: r.time_s, lambda r: backward(r.gemm))
            + float_total(report.ops, lambda r: r.time_s, lambda r: backward(r.op))
            + report.totals["recompute_time_s"])


def _stream(report: Report, host_link: str | None) -> Report:
    spec = report.hardware
    if host_link is not None:
        link = resolve_link(host_link, "host_link")
        spec = replace(spec, host_link=HostLink(link.type, link.bandwidth_gbs, link.generation))
        label = link.label
    elif spec.host_link is None:
        raise InputError(spec.name, "host_link", "the entry has no host link; give one (a "
                                                 "links.yaml name or GB/s)")
    else:
        label = spec.host_link.label
    assert spec.host_link is not None  # set above, or the entry's own
    gbs = spec.host_link.bandwidth_gbs
    nbytes = report.network.input_bytes()
    if nbytes is None:
        first = report.network.layers[0].name
        raise RooflineError(f"{option('stream_input')}: the first layer, {first!r}, does not "
                            f"say what a step reads as its input (a module captured from torch "
                            f"records the ops it ran, not its inputs' bytes): no streamed input "
                            f"to time")
    stream = HostLinkStream(label, gbs, nbytes, nbytes / (gbs * 1e9), report.totals["time_s"])
    return replace(report, hardware=spec, scaling=Scaling(host_link=stream))
