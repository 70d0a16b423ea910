"""NCCL's own cost model of a ring collective, every constant read from NCCL's source: the
alternative ``bench_collectives.py`` holds against XLA's H100 table beside roofline's ring
model (README "Collectives"). ``plan`` and ``analyze --tp`` do not use it: on that table it
did worse overall than the ring model they keep (``analysis.collectives``; README).

Source: NVIDIA/nccl ``src/graph/tuning.cc`` at v2.30.7 (master, commit 5067397c, 2026-06-11;
line numbers below are that file's). The ring's base and per-step latencies are the same in
every release from 2.18.1 (2023) on. NCCL predicts each (algorithm, protocol) pair's time as
``latency + nBytes / (1000 x bw)`` microseconds, bw in GB/s (``ncclTopoGetAlgoTime``, l. 653)
and runs the pair of least predicted time (``topoGetAlgoInfo``, ``src/enqueue.cc``). For the
ring algorithm (l. 288-413):

- steps: all-reduce ``nsteps = 2 (nRanks - 1)``, reduce-scatter and all-gather
  ``nRanks - 1`` (l. 289-291); nBytes is the whole buffer (the all-gather's output, the
  reduce-scatter's input: ``ncclFuncMaxSendRecvCount``, ``src/enqueue.cc`` l. 2127), and the
  algorithm bandwidth is the bus bandwidth x nRanks / nsteps (l. 379), so the bytes term is
  nsteps / nRanks x nBytes / busBw: the ring formula's 2 (p - 1) / p x S / B.
- latency: ``baseLat[ring][protocol]`` (l. 151) + nsteps x ``hwLat[link][ring][protocol]``
  (l. 159, 165, 171; the link row NVLink or PCI inside a node, NET between nodes).
- bandwidth by protocol: LL sends 8-byte lines of 4 data bytes and a 4-byte flag, x 0.5,
  capped at ``llMaxBw`` (l. 327); LL128 128-byte lines of 120 data bytes, x 0.92 (l. 329: the
  code's factor, its comment says 120/128), capped at nChannels x ``perChMaxRingLL128Bw`` (not
  applied here: the channel count is NCCL's topology search's, not a link figure); Simple the
  whole bus bandwidth. The bus bandwidth here is the link's own (``links.yaml``, per direction
  per GPU), where NCCL's is its topology search's nChannels x per-channel estimate.
- LL's cap (``llMaxBws``, l. 179-182, indexed l. 267-272): on one node by the GPU
  architecture, read from an NVLink link's generation (2 Volta 39.0, 3 Ampere 87.7, 4 Hopper
  141.0, 5 Blackwell 282.0 GB/s); a PCIe link's half bandwidth (31.5 GB/s at Gen5) is below
  every architecture's cap, so none is needed there. Across nodes by the host CPU and the node
  count: taken as NCCL's row 0 (Intel, and any CPU not AMD), 39.0 GB/s for 2 nodes, 20.4 for
  more (an AMD host's are 22.5 and 19.0).
- LL128 only where NCCL enables it by default (l. 518-535): not over PCIe between the GPUs
  of a node (``typeIntra <= PATH_NVB``: NVLink only).
- across nodes (l. 386-412): a step between nodes costs ``hwLat[NET]`` plus the NIC's
  ``latencyInter`` (0: NCCL's InfiniBand and socket transports leave it unset,
  ``src/transport/net_ib/init.cc`` l. 558, ``net_socket.cc`` l. 174), with one GPU a node
  NET's tree figures (5.0 / 8.5 / 14 us, "latencies are fully exposed"); a step inside a node
  at least the network post overhead, 1 us (Intel or other CPUs; AMD 2, l. 228-233), x 3 for
  Simple (l. 408); and a Simple all-reduce's latency x 1.4 (Ampere on; 1.9 before: the
  "plateau effect of ring", l. 647-650, once a channel's share of a rank's chunk reaches 64
  bytes, which holds wherever Simple is the cheapest protocol).

Not modelled: NCCL's other algorithms (tree, whose latency grows with log2 of the nodes;
NVLS, NVSwitch multicast on Hopper and later; CollNet; PAT), so this is NCCL's ring estimate,
not always NCCL's choice; the chunk-level pipelining its model leaves out too. A link given as
a bare bandwidth (no NCCL link row) has no latency term.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roofline.analysis.collectives import Fabric
from roofline.hardware.links import Link

PROTOCOLS = ("LL", "LL128", "Simple")

#: tuning.cc l. 151: baseLatencies, Ring row (LL / LL128 / Simple), us
BASE_US = {"LL": 6.6, "LL128": 14.0, "Simple": 8.4}

#: tuning.cc l. 159 (NVLINK), 165 (PCI), 171 (NET): hwLatencies[link][Ring][protocol], us a step
RING_STEP_US = {"nvlink": {"LL": 0.6, "LL128": 1.9, "Simple": 3.4},
                "pci": {"LL": 1.0, "LL128": 2.5, "Simple": 5.7},
                "net": {"LL": 2.7, "LL128": 4.0, "Simple": 14.0}}

#: tuning.cc l. 171: hwLatencies[NET][Tree][protocol], which a ring's steps between nodes
#: cost with one GPU a node (l. 386-388)
NET_TREE_STEP_US = {"LL": 5.0, "LL128": 8.5, "Simple": 14.0}

#: tuning.cc l. 327 (LL, 4 data bytes of every 8) and l. 329 (LL128, 0.92; 120 of 128)
BANDWIDTH_SHARE = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}

#: tuning.cc l. 179-182, llMaxBws first column (one node) by GPU architecture, here by the
#: NVLink generation each architecture carries (2 Volta, 3 Ampere, 4 Hopper, 5 Blackwell), GB/s
LL_CAP_ONE_NODE_GBS = {2: 39.0, 3: 87.7, 4: 141.0, 5: 2 * 141.0}

#: tuning.cc l. 179, llMaxBws row 0 (Intel and other non-AMD hosts): 2 nodes, 3 or more, GB/s
LL_CAP_TWO_NODES_GBS, LL_CAP_MORE_NODES_GBS = 39.0, 20.4

#: tuning.cc l. 228-233 (getNetOverhead: 1 us, Intel or unknown) and l. 408 (x 3 for Simple)
NET_OVERHEAD_US = {"LL": 1.0, "LL128": 1.0, "Simple": 3.0}

#: tuning.cc l. 647-650: a Simple ring all-reduce across nodes, compute capability 8.0 on
RING_PLATEAU = 1.4

#: links.yaml's type -> NCCL's link row (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET)
HW_ROW = {"nvlink": "nvlink", "pcie": "pci", "ethernet": "net", "infiniband": "net"}


@dataclass(frozen=True)
class Leg:
    """A ring collective's part on one link: its steps and the bytes each GPU sends there."""

    link: Link
    steps: int
    nbytes: float


@dataclass(frozen=True)
class Choice:
    """The protocol of least predicted time, and that time."""

    protocol: str
    time_s: float


def ring_steps(collective: str, p: int) -> int:
    """tuning.cc l. 289-291."""
    return 2 * (p - 1) if collective == "all-reduce" else p - 1


def _step_us(link: Link, protocol: str, nodes: int, per_node: int, between: bool) -> float:
    row = HW_ROW.get(link.type)
    if row is None:
        return 0.0
    if nodes == 1:
        return RING_STEP_US[row][protocol]
    if between:  # l. 387-391, latencyInter 0
        one_gpu = per_node == 1 and row == "net"
        return (NET_TREE_STEP_US if one_gpu else RING_STEP_US[row])[protocol]
    return max(RING_STEP_US[row][protocol], NET_OVERHEAD_US[protocol])  # l. 410


def _gbs(link: Link, protocol: str, nodes: int) -> float:
    gbs = link.bandwidth_gbs * BANDWIDTH_SHARE[protocol]
    if protocol != "LL":
        return gbs
    if nodes > 1:
        return min(gbs, LL_CAP_TWO_NODES_GBS if nodes == 2 else LL_CAP_MORE_NODES_GBS)
    cap = LL_CAP_ONE_NODE_GBS.get(link.generation or 0) if link.type == "nvlink" else None
    return min(gbs, cap) if cap else gbs


def choose(collective: str, intra: Leg | None, inter: Leg | None = None, nodes: int = 1,
           per_node: int = 1) -> Choice:
    """The least predicted time over the protocols NCCL enables, of a ring whose steps inside
    a node are ``intra``'s and between nodes ``inter``'s, over ``nodes`` nodes of
    ``per_node`` GPUs (module docstring)."""
    legs: Sequence[tuple[Leg, bool]] = [(leg, between) for leg, between in
                                        ((intra, False), (inter, True)) if leg is not None]
    known = any(leg.link.type in HW_ROW for leg, _ in legs)
    best: Choice | None = None
    for protocol in PROTOCOLS:
        if protocol == "LL128" and intra is not None and intra.link.type == "pcie":
            continue  # l. 531: LL128 over NVLink only
        latency_us = (BASE_US[protocol] if known else 0.0) + sum(
            leg.steps * _step_us(leg.link, protocol, nodes, per_node, between)
            for leg, between in legs)
        if protocol == "Simple" and collective == "all-reduce" and nodes > 1:
            latency_us *= RING_PLATEAU
        time_s = latency_us * 1e-6 + sum(leg.nbytes / (_gbs(leg.link, protocol, nodes) * 1e9)
                                         for leg, _ in legs)
        if best is None or time_s < best.time_s:
            best = Choice(protocol, time_s)
    assert best is not None
    return best


def ring(collective: str, nbytes: float, p: int, link: Link) -> Choice:
    """One ring of ``p`` GPUs in one node (all-reduce, reduce-scatter, all-gather)."""
    if p <= 1 or nbytes <= 0:
        return Choice("none", 0.0)
    steps = ring_steps(collective, p)
    return choose(collective, Leg(link, steps, steps / p * nbytes))


def fabric_time(fabric: Fabric, collective: str, nbytes: float, p: int,
                stride: int = 1) -> Choice:
    """``Fabric.time_s``'s layout of a group (one node, one GPU a node, or both levels) with
    NCCL's latencies and protocols: the intra-node legs reduce-scatter and all-gather nbytes,
    the inter-node leg runs on nbytes / g (``analysis.collectives``)."""
    if p <= 1 or nbytes <= 0:
        return Choice("none", 0.0)
    g = fabric.per_node(p, stride)
    if g >= p:
        return ring(collective, nbytes, p, fabric.intra)
    k = p // g
    remote = ring_steps(collective, k)
    inter = Leg(fabric.inter, remote, remote / k * nbytes / g)
    if g == 1:
        return choose(collective, None, inter, k, 1)
    local = (g - 1) * (2 if collective == "all-reduce" else 1)
    intra = Leg(fabric.intra, local, local / g * nbytes)
    return choose(collective, intra, inter, k, g)
