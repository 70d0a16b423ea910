"""Collective communication times, by a stated algorithm, on the links of ``links.yaml``.

Conventions: ``nbytes`` is the size of the whole buffer one GPU holds (the full gradient, the
full activation), ``p`` the GPUs of the group, ``B`` a link's bandwidth per direction per GPU
(links.yaml's convention) and ``a`` its latency per step (``Link.latency_us``, NCCL's model:
``src/graph/tuning.cc``, ``hwLat``, ring algorithm, Simple protocol). Every GPU sends and
receives at once, so a step moves its chunk in each direction at ``B``.

- Ring all-reduce: a reduce-scatter then an all-gather, 2 (p - 1) steps of nbytes / p each:
  ``2 (p - 1) / p x nbytes / B + 2 (p - 1) a`` (Patarasuk and Yuan, "Bandwidth optimal
  all-reduce algorithms for clusters of workstations", JPDC 2009; NCCL counts the same
  ``nsteps = 2 (nRanks - 1)``).
- Ring reduce-scatter, ring all-gather: ``(p - 1) / p x nbytes / B + (p - 1) a``.
- All-to-all (pairwise exchange): each GPU keeps 1 / p of its buffer and sends the rest, one
  peer per step: ``(p - 1) / p x nbytes / B + (p - 1) a``.
- Point-to-point (a pipeline boundary): ``nbytes / B + a``.
- Hierarchical, for a group spread over nodes (``g`` GPUs in each of ``k`` nodes): all-reduce
  = reduce-scatter inside the node (nbytes over the intra-node link), all-reduce of the
  node's 1 / g shard between nodes (nbytes / g over the inter-node link, one NIC per GPU so
  the g shards go in parallel), all-gather inside the node; reduce-scatter and all-gather take
  their intra- and inter-node halves the same way; an all-to-all sends (g - 1) / p of its
  buffer inside the node and (p - g) / p between nodes, one after the other. A group with one
  GPU per node is a plain ring over the inter-node link. (The two-level scheme is NCCL's
  and Horovod's hierarchical all-reduce; the times are the ring formulas above per level.)

Where a group's GPUs sit: ranks are numbered tensor-parallel fastest, then data-parallel,
then pipeline stages (Megatron-LM's order), ``gpus_per_node`` consecutive ranks a node. A
group of ``p`` GPUs ``stride`` ranks apart has ``min(p, gpus_per_node // stride)`` of them in
one node (1 when the stride is a node or more).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..hardware.links import Link

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")


def ring_time_s(kind: str, nbytes: float, p: int, gbs: float, latency_us: float = 0.0) -> float:
    """One collective of ``kind`` over a ring of ``p`` GPUs on one link (module docstring)."""
    if p <= 1 or nbytes <= 0:
        return 0.0
    steps = 2 * (p - 1) if kind == "all-reduce" else p - 1
    fraction = steps / p  # of nbytes each GPU sends: 2 (p - 1) / p or (p - 1) / p
    return fraction * nbytes / (gbs * 1e9) + steps * latency_us * 1e-6


def p2p_time_s(nbytes: float, gbs: float, latency_us: float = 0.0) -> float:
    """One point-to-point transfer: nbytes / B + a."""
    return nbytes / (gbs * 1e9) + latency_us * 1e-6 if nbytes > 0 else 0.0


#: a node's GPUs unless given (``--gpus-per-node``): an HGX / DGX board's 8 (plan's default
#: and serving's, ``plan.make_fabric``, ``serving_tp``)
DEFAULT_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Fabric:
    """The links a layout's collectives run over: inside a node and between nodes."""

    intra: Link
    inter: Link
    gpus_per_node: int
    basis: str = ""  # where the links came from (given, or the entry's defaults)

    def per_node(self, p: int, stride: int) -> int:
        """GPUs of a group of ``p`` (``stride`` ranks apart) that share a node."""
        return max(1, min(p, self.gpus_per_node // stride)) if stride else p

    def time_s(self, kind: str, nbytes: float, p: int, stride: int = 1) -> float:
        """A collective of ``kind`` over a group of ``p`` GPUs ``stride`` ranks apart: a ring on
        the intra-node link when the group fits in a node, a ring on the inter-node link when
        each GPU is in its own node, else hierarchical (module docstring)."""
        if p <= 1 or nbytes <= 0:
            return 0.0
        g = self.per_node(p, stride)
        intra, inter = self.intra, self.inter
        if g >= p:
            return ring_time_s(kind, nbytes, p, intra.bandwidth_gbs, intra.latency_us)
        if g == 1:
            return ring_time_s(kind, nbytes, p, inter.bandwidth_gbs, inter.latency_us)
        k = p // g
        if kind == "all-to-all":
            inside = (g - 1) / p * nbytes / (intra.bandwidth_gbs * 1e9)
            between = (p - g) / p * nbytes / (inter.bandwidth_gbs * 1e9)
            return (inside + between + (g - 1) * intra.latency_us * 1e-6
                    + (k - 1) * g * inter.latency_us * 1e-6)
        local = ring_time_s("reduce-scatter", nbytes, g, intra.bandwidth_gbs, intra.latency_us)
        remote = ring_time_s(kind, nbytes / g, k, inter.bandwidth_gbs, inter.latency_us)
        return local * (2 if kind == "all-reduce" else 1) + remote

    def p2p_s(self, nbytes: float, crosses_nodes: bool) -> float:
        link = self.inter if crosses_nodes else self.intra
        return p2p_time_s(nbytes, link.bandwidth_gbs, link.latency_us)

    def to_dict(self) -> dict[str, Any]:
        return {"intra": _link_dict(self.intra), "inter": _link_dict(self.inter),
                "gpus_per_node": self.gpus_per_node, "basis": self.basis}


def _link_dict(link: Link) -> dict[str, Any]:
    return {"name": link.name, "label": link.label, "bandwidth_gbs": link.bandwidth_gbs,
            "latency_us": link.latency_us}
