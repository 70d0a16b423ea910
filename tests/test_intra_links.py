"""The link inside a node that tensor parallelism and plan default to, by the entry's NVLink
generation, and a node said to hold more GPUs than that board's switch joins (refused: its
bandwidth and latency are the 8-GPU board's, nothing a larger node is known to have)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.analysis.plan import make_fabric
from roofline.api import analyze_model
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.hardware.links import links

LLAMA = Path(__file__).resolve().parents[1] / "examples" / "hf" / "llama-2-7b.json"


def test_a_b200_node_talks_over_its_nvlink_switch_not_pcie():
    # HGX B200: 18 NVLink 5 links a GPU at 50 GB/s each way = 900 GB/s per direction
    # (1.8 TB/s both ways, NVIDIA's Blackwell datasheet; 14.4 TB/s over 8 GPUs); it fell to
    # the entry's PCIe Gen5 (63 GB/s) before, 14x too slow
    link = make_fabric(load_hardware("b200-sxm-180gb")).intra
    assert (link.name, link.bandwidth_gbs, link.node_gpus) == ("nvswitch-b200", 900.0, 8)
    assert links()["nvlink5"].bandwidth_gbs == 18 * 50.0


def test_a_b200_decode_all_reduce_by_hand():
    # Llama-2-7B decode at batch 8, tp 8: each all-reduce S = 8 x 4096 x 2 B = 65,536 B, under
    # vLLM's one-shot limit at 8 GPUs (256 KiB): 2 syncs x 3.4 us + 7 x 65536 / 900e9 s
    # = 6.8 us + 0.509724 us = 7.309724 us
    report = analyze_model(LLAMA, "b200-sxm-180gb", batch=8, seq=512, mode="inference",
                           phase="decode", tp=8)
    tp = report.tensor_parallel
    assert tp is not None
    reduce = next(t for t in tp.step.transfers if t.what == "all-reduce"
                  and t.nbytes == 65536)
    assert reduce.algorithm == "one-shot"
    assert reduce.predicted_s == pytest.approx(7.309724e-6)


def test_a_larger_node_must_name_its_link():
    # (the library names its keywords where the CLI names options: errors.render_options)
    with pytest.raises(InputError, match=r"gpus_per_node=\.\.\. 16: the default link inside a "
                                         r"node, NVSwitch \(DGX H100 / HGX H100, 8 GPUs\), joins "
                                         r"8; name the link of a 16-GPU node \(intra=\.\.\."):
        make_fabric(load_hardware("h100-sxm5-80gb"), gpus_per_node=16)
    # named, it is the user's: a PCIe node has no board size
    assert make_fabric(load_hardware("h100-sxm5-80gb"), "nvswitch-h100",
                       gpus_per_node=16).intra.name == "nvswitch-h100"
    assert make_fabric(load_hardware("h100-pcie-80gb"), gpus_per_node=16).intra.name == \
        "pcie5-x16"
    assert make_fabric(load_hardware("h100-sxm5-80gb"), gpus_per_node=8).intra.node_gpus == 8


@pytest.mark.parametrize("command", [
    ("analyze", str(LLAMA), "--hw", "h100-sxm5-80gb", "--mode", "inference", "--phase",
     "decode", "--batch", "1", "--seq", "128", "--tp", "16", "--gpus-per-node", "16"),
    ("plan", str(LLAMA), "--hw", "h100-sxm5-80gb", "--batch", "64", "--seq", "1024",
     "--gpus", "16", "--gpus-per-node", "16"),
])
def test_the_cli_says_so_in_one_line(invoke, command):
    result = invoke(*command)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "Error: h100-sxm5-80gb: --gpus-per-node 16: the default link inside a node, NVSwitch "
        "(DGX H100 / HGX H100, 8 GPUs), joins 8; name the link of a 16-GPU node (--intra "
        "NAME|GBPS)"]


def test_geforce_boards_talk_over_pcie_without_peer_to_peer_access():
    # two RTX 4090s (or 3090s) cannot read each other's memory over PCIe (deviceQuery: "Peer
    # access ... : No", the entries' gpu.pcie_p2p); the link stays PCIe Gen4 at its line rate
    # (16 GT/s x 16 x 128/130 / 8 = 31.5 GB/s a direction) and NCCL's PCI latency, which NCCL's
    # own model gives any intra-node path but NVLink, through host memory included
    for name in ("rtx-4090", "rtx-3090"):
        fabric = make_fabric(load_hardware(name))
        link = fabric.intra
        assert (link.name, link.bandwidth_gbs, link.latency_us, link.p2p) == (
            "pcie4-x16", 31.5, 5.7, False)
        assert link.label == "PCIe Gen4 x16, no peer-to-peer access (through host memory)"
        assert f"{name}: no peer-to-peer access (through host memory)" in fabric.basis
        # a PCIe link given by name is the same PCIe between the same boards
        assert make_fabric(load_hardware(name), "pcie4-x16").intra.p2p is False
    # the professional boards read each other's memory (deviceQuery: "Peer access ... : Yes")
    for name in ("rtx-a6000", "rtx-6000-ada", "l40s"):
        assert make_fabric(load_hardware(name)).intra.p2p is True


def test_a_bridged_ga102_pair_names_its_nvlink_bridge():
    # GA102 whitepaper: four x4 NVLink 3 links of 14.0625 GB/s each direction = 56.25 GB/s a
    # direction (112.5 GB/s both ways, the entries' nvlink figure) between the two boards
    bridge = links()["nvlink3-bridge"]
    assert bridge.bandwidth_gbs == 4 * 14.0625 == 56.25
    assert (bridge.type, bridge.node_gpus, bridge.latency_us) == ("nvlink", 2, 3.4)
    for name in ("rtx-3090", "rtx-a6000"):
        hw = load_hardware(name)
        assert hw.stored["nvlink"]["bandwidth_gbs"] == 2 * bridge.bandwidth_gbs
        # optional: the default stays PCIe; named, the bridge keeps peer access (P2P over NVLink)
        assert make_fabric(hw).intra.name == "pcie4-x16"
        assert make_fabric(hw, "nvlink3-bridge").intra.p2p is True


def test_a_4090_pair_all_reduces_on_nccls_ring_not_vllms_kernel():
    # Llama-2-7B decode at batch 8 over tp 2: each all-reduce S = 8 x 4096 x 2 B = 65,536 B.
    # Two 4090s: vLLM's custom all-reduce is off (no P2P), NCCL's ring: 2 (p - 1) a +
    # 2 (p - 1) / p x S / B = 2 x 5.7 us + 65536 / 31.5e9 s = 11.4 + 2.080508 = 13.480508 us.
    # Two A6000s run vLLM's one-shot kernel: 2 a + (p - 1) S / B, the same 13.480508 us at p = 2
    # (one peer's buffer is the ring's one step of bytes): the algorithm differs, not the time
    for name, algorithm in (("rtx-4090", "ring"), ("rtx-a6000", "one-shot")):
        report = analyze_model(LLAMA, name, batch=8, seq=512, mode="inference",
                               phase="decode", tp=2)
        tp = report.tensor_parallel
        assert tp is not None
        reduce = next(t for t in tp.step.transfers if t.what == "all-reduce"
                      and t.nbytes == 65536)
        assert reduce.algorithm == algorithm, name
        assert reduce.predicted_s == pytest.approx(13.480508e-6)
