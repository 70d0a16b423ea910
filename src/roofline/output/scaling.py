"""What ``--stream-input`` and ``--data-parallel`` add to a report, as lines of text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import seconds, si

if TYPE_CHECKING:
    from ..analysis.scaling import HostLinkStream, Scaling


def link_text(label: str, gbs: float, qualifier: str = "", more: str = "") -> str:
    """A link as a sentence names it: a named link's label, then its bandwidth (and
    ``qualifier``, `` per direction``) and ``more`` in parentheses: ``NVLink 2.0 to a POWER9
    CPU (68.1 GB/s)``. A bandwidth given as a bare number is labelled by the figure itself
    (``hardware.links.resolve_link``), so there the figure is said once, ``more`` after it in
    parentheses: ``12.5 GB/s``, not ``12.5 GB/s (12.5 GB/s)``."""
    figure = f"{gbs:g} GB/s"
    if label == figure:
        return f"{figure}{qualifier}" + (f" ({more})" if more else "")
    return f"{label} ({figure}{qualifier}" + (f", {more})" if more else ")")


def step_latency(latency_us: float) -> str:
    """A link's latency a ring step as a sentence says it: ``3.4 us a step``; a link given as a
    bare bandwidth has none (``hardware.links.resolve_link``): ``no latency stated``."""
    return f"{seconds(latency_us * 1e-6)} a step" if latency_us else "no latency stated"


def host_link_lines(stream: HostLinkStream) -> list[str]:
    """The streamed input's verdict: transfer time against compute time."""
    verdict = ("host-link-bound: the transfer outlasts the compute" if stream.bound ==
               "host-link" else "device-bound: the transfer hides under the compute")
    return [f"streamed input: {si(stream.bytes, 'B')} per step over "
            f"{link_text(stream.link, stream.bandwidth_gbs)}: {seconds(stream.time_s)} against "
            f"{seconds(stream.compute_s)} of compute; {verdict}"]


def scaling_lines(scaling: Scaling) -> list[str]:
    """The streamed input's verdict, then the data-parallel table and where the network
    becomes the roof."""
    out = host_link_lines(scaling.host_link) if scaling.host_link else []
    if not scaling.data_parallel:
        return out
    first = scaling.data_parallel[0]
    latency = f"{first.latency_us:g} us a ring step" if first.latency_us else ""
    over = link_text(first.interconnect, first.interconnect_gbs, more=latency)
    out += [f"data parallel: ring all-reduce of {si(first.gradient_bytes, 'B')} of gradients"
            f" per step over {over}, "
            f"{seconds(first.compute_s)} of compute per worker, {seconds(first.backward_s)} of "
            f"it the backward pass the all-reduce can hide behind",
            f"{'workers':>8}  {'all-reduce':>10}  {'step':>9}  {'efficiency':>10}  "
            f"{'step (overlap)':>14}  {'efficiency':>10}"]
    for d in scaling.data_parallel:
        out.append(f"{d.workers:>8}  {seconds(d.allreduce_s):>10}  {seconds(d.step_s):>9}  "
                   f"{d.compute_s / d.step_s:>10.0%}  {seconds(d.step_overlap_s):>14}  "
                   f"{d.compute_s / d.step_overlap_s:>10.0%}")
    roof = scaling.network_roof_workers
    out.append("the network is never the roof: the all-reduce stays shorter than the "
               "backward pass at any worker count" if roof is None else
               f"the network is the roof from {roof:,} workers (the all-reduce outlasts the "
               f"backward pass; overlap no longer hides it)")
    return out
