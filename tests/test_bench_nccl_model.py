"""benchmarks/_nccl_model.py: NCCL's ring cost model, times worked out by hand from NCCL's
constants (NVIDIA/nccl src/graph/tuning.cc at v2.30.7, commit 5067397c; line numbers there),
and bench_collectives' second table (the model it checks against XLA's H100 table)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import _nccl_model as nccl  # noqa: E402
import bench_collectives  # noqa: E402

from roofline.analysis.collectives import Fabric  # noqa: E402
from roofline.hardware.links import links  # noqa: E402

US = 1e-6


def test_the_constants_are_nccls():
    # tuning.cc l. 151: baseLatencies, Ring {6.6, 14.0, 8.4} (LL, LL128, Simple)
    assert nccl.BASE_US == {"LL": 6.6, "LL128": 14.0, "Simple": 8.4}
    # l. 159, 165, 171: hwLatencies Ring rows, NVLINK {0.6, 1.9, 3.4}, PCI {1.0, 2.5, 5.7},
    # NET {2.7, 4.0, 14.0}; NET's Tree row {5.0, 8.5, 14}
    assert nccl.RING_STEP_US["nvlink"] == {"LL": 0.6, "LL128": 1.9, "Simple": 3.4}
    assert nccl.RING_STEP_US["pci"] == {"LL": 1.0, "LL128": 2.5, "Simple": 5.7}
    assert nccl.RING_STEP_US["net"] == {"LL": 2.7, "LL128": 4.0, "Simple": 14.0}
    assert nccl.NET_TREE_STEP_US == {"LL": 5.0, "LL128": 8.5, "Simple": 14.0}
    # l. 327 LL busBw * .5; l. 329 LL128 busBw * 0.92
    assert nccl.BANDWIDTH_SHARE == {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}
    # l. 179-182 llMaxBws: Volta-N1 39.0, Ampere-N1 87.7, Hopper-N1 141.0, Blackwell 2 x 141.0;
    # Intel-N2 39.0, Intel-N4 20.4
    assert nccl.LL_CAP_ONE_NODE_GBS == {2: 39.0, 3: 87.7, 4: 141.0, 5: 282.0}
    assert (nccl.LL_CAP_TWO_NODES_GBS, nccl.LL_CAP_MORE_NODES_GBS) == (39.0, 20.4)


def test_eight_h100s_all_reduce_1_kib_picks_ll():
    link = links()["nvswitch-h100"]  # NVLink 4 (Hopper), 450 GB/s per direction
    # 14 steps; LL: 6.6 + 14 x 0.6 = 15.0 us, bytes 2 x 7/8 x 1024 = 1792 at min(450 / 2, 141)
    # GB/s = 12.7 ns. (LL128: 14 + 14 x 1.9 = 40.6 us; Simple: 8.4 + 14 x 3.4 = 56 us.)
    choice = nccl.ring("all-reduce", 1024, 8, link)
    assert choice.protocol == "LL"
    assert choice.time_s == pytest.approx(15.0 * US + 1792 / 141e9)


def test_eight_h100s_all_reduce_8_mib_picks_ll128_and_1_gib_simple():
    link = links()["nvswitch-h100"]
    moved = 1.75 * 8 * 2**20  # 2 x 7/8 x 8 MiB = 14,680,064 B
    # LL128: 40.6 us + moved / (0.92 x 450 GB/s) = 35.46 us -> 76.06 us; Simple: 56 us + moved
    # / 450 GB/s = 32.62 us -> 88.62 us; LL: 15 us + moved / 141 GB/s = 104.1 us -> 119.1 us
    choice = nccl.ring("all-reduce", 8 * 2**20, 8, link)
    assert choice.protocol == "LL128"
    assert choice.time_s == pytest.approx(40.6 * US + moved / 414e9)
    assert choice.time_s == pytest.approx(76.06e-6, rel=1e-3)
    # 1 GiB: Simple, 56 us + 1.75 x 2^30 / 450e9 = 4175.7 us -> 4231.7 us (LL128: 4538.8 us)
    big = nccl.ring("all-reduce", 2**30, 8, link)
    assert big.protocol == "Simple"
    assert big.time_s == pytest.approx(56 * US + 1.75 * 2**30 / 450e9)
    assert big.time_s == pytest.approx(4231.7e-6, rel=1e-4)


def test_pcie_has_no_ll128_and_its_own_latencies():
    link = links()["pcie4-x16"]  # 31.5 GB/s
    # 4 GPUs, all-gather of 64 KiB: 3 steps, 3/4 x 65536 = 49,152 B each GPU sends.
    # LL: 6.6 + 3 x 1.0 = 9.6 us + 49152 / 15.75e9 = 3.12 us -> 12.72 us (no cap binds:
    # 15.75 GB/s is under every architecture's llMaxBw); Simple: 8.4 + 3 x 5.7 = 25.5 us + 1.56
    choice = nccl.ring("all-gather", 65536, 4, link)
    assert choice == nccl.Choice("LL", pytest.approx(9.6 * US + 49152 / 15.75e9))
    # 8 GPUs, all-reduce of 1 MiB: 14 steps, 1.75 x 2^20 = 1,835,008 B sent. LL128 (l. 531:
    # NVLink only) would be cheapest, 14 + 14 x 2.5 = 49 us + 1835008 / 28.98e9 = 63.32 us ->
    # 112.32 us, but is not offered; LL 6.6 + 14 x 1.0 = 20.6 us + 1835008 / 15.75e9 = 116.51
    # us -> 137.11 us beats Simple's 8.4 + 14 x 5.7 = 88.2 us + 58.25 us = 146.45 us
    moved = 1.75 * 2**20
    mid = nccl.ring("all-reduce", 2**20, 8, link)
    assert mid == nccl.Choice("LL", pytest.approx(20.6 * US + moved / 15.75e9))
    assert mid.time_s == pytest.approx(137.11e-6, rel=1e-4)


def test_ampere_caps_ll_at_87_7_gbs():
    link = links()["nvswitch-a100"]  # NVLink 3 (Ampere), 300 GB/s; LL at min(150, 87.7)
    # 2 GPUs, reduce-scatter of 256 KiB: 1 step, 1/2 x 262144 = 131,072 B.
    # LL: 6.6 + 0.6 = 7.2 us + 131072 / 87.7e9 = 1.495 us -> 8.69 us
    # (Simple: 8.4 + 3.4 = 11.8 us + 0.44 us)
    choice = nccl.ring("reduce-scatter", 2**18, 2, link)
    assert choice == nccl.Choice("LL", pytest.approx(7.2 * US + 131072 / 87.7e9))


def h100_fabric() -> Fabric:
    return Fabric(links()["nvswitch-h100"], links()["ib-ndr"], 8)


def test_two_nodes_of_eight_net_latencies_overhead_and_plateau():
    # 16 GPUs one rank apart, 8 a node: 2 nodes. The node legs reduce-scatter and all-gather
    # 1e8 B: 14 steps, 14/8 x 1e8 = 1.75e8 B; between nodes an all-reduce of 1e8 / 8: 2 steps,
    # 2/2 x 1.25e7 = 1.25e7 B on 50 GB/s InfiniBand.
    # LL128: 14 + 14 x max(1.9, 1.0 net overhead) + 2 x 4.0 (NET ring, 8 GPUs a node) = 48.6 us
    #   + 1.75e8 / 414e9 = 422.71 us + 1.25e7 / 46e9 = 271.74 us -> 743.04 us
    # Simple: (8.4 + 14 x max(3.4, 3 x 1.0) + 2 x 14) x 1.4 (plateau) = 117.6 us + 388.89 us
    #   + 250 us -> 756.49 us
    # LL: 6.6 + 14 x max(0.6, 1.0) + 2 x 2.7 = 26 us + 1.75e8 / 39e9 (2 nodes: llMaxBw 39.0)
    #   + 1.25e7 / 25e9 -> 5013 us
    choice = nccl.fabric_time(h100_fabric(), "all-reduce", 1e8, 16, 1)
    assert choice.protocol == "LL128"
    assert choice.time_s == pytest.approx((48.6 + 1.75e8 / 414e3 + 1.25e7 / 46e3) * US)
    assert choice.time_s == pytest.approx(743.04e-6, rel=1e-4)


def test_one_gpu_a_node_takes_the_net_tree_latencies():
    fabric = h100_fabric()
    # 4 GPUs 8 ranks apart: one a node, 4 nodes; all-reduce, 6 steps all between nodes at
    # NET's Tree figures (l. 387: ppn 1), 2 x 3/4 = 1.5 x the buffer sent.
    # 64 KiB (98,304 B sent): LL 6.6 + 6 x 5.0 = 36.6 us + 98304 / 20.4e9 (3+ nodes: 20.4)
    # = 4.82 us -> 41.42 us; LL128 14 + 6 x 8.5 = 65 us + ...
    small = nccl.fabric_time(fabric, "all-reduce", 65536, 4, 8)
    assert small == nccl.Choice("LL", pytest.approx(36.6 * US + 98304 / 20.4e9))
    # 1e6 B (1.5e6 sent): LL128 65 us + 1.5e6 / 46e9 = 32.61 us -> 97.61 us; LL 36.6 + 73.53
    # = 110.13 us; Simple (8.4 + 6 x 14) x 1.4 = 129.36 us + 30 us = 159.36 us
    mid = nccl.fabric_time(fabric, "all-reduce", 1e6, 4, 8)
    assert mid == nccl.Choice("LL128", pytest.approx(65 * US + 1.5e6 / 46e9))
    # 1e8 B: Simple 129.36 us + 1.5e8 / 50e9 = 3000 us -> 3129.36 us (LL128: 3325.9 us)
    big = nccl.fabric_time(fabric, "all-reduce", 1e8, 4, 8)
    assert big == nccl.Choice("Simple", pytest.approx(3129.36e-6))


def test_inside_one_node_it_is_the_single_ring():
    fabric = h100_fabric()
    assert nccl.fabric_time(fabric, "all-gather", 2**20, 8, 1) == nccl.ring(
        "all-gather", 2**20, 8, links()["nvswitch-h100"])
    assert nccl.fabric_time(fabric, "all-reduce", 2**20, 1, 1) == nccl.Choice("none", 0.0)


def test_a_bare_bandwidth_has_no_latency():
    from roofline.hardware.links import resolve_link

    # "80": 80 GB/s, no NCCL link row: Simple at the whole bandwidth, no base latency
    choice = nccl.ring("all-reduce", 1e6, 4, resolve_link("80", "intra"))
    assert choice == nccl.Choice("Simple", pytest.approx(1.5e6 / 80e9))


def test_bench_collectives_second_table_names_the_protocols():
    rows = bench_collectives.load_rows()
    (small,) = [r for r in rows if (r.collective, r.p, r.nbytes) == ("all-reduce", 8, 1024)]
    assert bench_collectives.predicted_s(small, "nccl") == pytest.approx(15.0 * US + 1792 / 141e9)
    # an all-to-all keeps the ring formula (NCCL's tuner has no model of send/recv)
    a2a = next(r for r in rows if r.collective == "all-to-all")
    assert bench_collectives.predicted_s(a2a, "nccl") == bench_collectives.predicted_s(a2a)
    eight = [r for r in rows if (r.collective, r.p) == ("all-reduce", 8)]
    assert bench_collectives.protocols(eight) == "LL to 2 MiB, LL128 to 32 MiB, Simple"
    lines = bench_collectives.table(rows, markdown=True, model="nccl")
    assert lines[0].endswith("| protocol (NCCL's model) |") and len(lines) == 2 + 12 + 1
