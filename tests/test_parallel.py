"""Tensor, sequence, pipeline, data (ZeRO) and expert parallelism, and the collectives, against
published figures and arithmetic done by hand (each in a comment)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analysis.collectives import Fabric, p2p_time_s, ring_time_s
from roofline.analysis.memory import memory_of
from roofline.analysis.parallel import (
    Layout,
    activation_bytes_per_block,
    blocks_of,
    crosses_nodes,
    evaluate,
    padded_vocab,
    pipeline_bubble,
    shard_network,
    shard_report,
    split_stages,
    stage_blocks,
)
from roofline.analysis.parallel_times import layer_times
from roofline.analysis.plan import ASSUMPTIONS, make_fabric, parse_counts, plan_layouts
from roofline.cli import cli
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.hardware.links import links, resolve_link
from roofline.model.layers import Transformer, saved_bytes
from roofline.model.network import load_network, network_from_yaml

EXAMPLES = Path(__file__).parent.parent / "examples"
LLAMA = EXAMPLES / "hf" / "llama-2-7b.json"


def llama(batch: int = 1, seq: int = 4096):
    return load_network(LLAMA).with_overrides(batch=batch, seq=seq, optimizer="adam")


def h100_fabric() -> Fabric:
    return Fabric(links()["nvswitch-h100"], links()["ib-ndr"], 8)


def no_latency_fabric(intra: float = 100.0, inter: float = 10.0) -> Fabric:
    return Fabric(resolve_link(str(intra), "intra"), resolve_link(str(inter), "inter"), 8)


# -- links and collectives ------------------------------------------------------------------


def test_links_state_one_convention_and_sources():
    table = links()
    # A100: 12 NVLink 3 links, 600 GB/s both ways (NVIDIA's NVLink page) = 300 per direction
    assert table["nvlink3"].bandwidth_gbs == 300.0
    assert table["nvlink4"].bandwidth_gbs == 450.0  # H100 SXM: 900 GB/s both ways
    assert table["nvswitch-h100"].bandwidth_gbs == 450.0
    assert table["nvswitch-a100"].bandwidth_gbs == 300.0
    assert table["pcie4-x16"].bandwidth_gbs == 31.5  # 16 GT/s x 16 x 128/130 / 8
    assert table["pcie5-x16"].bandwidth_gbs == 63.0
    assert table["ib-hdr"].bandwidth_gbs == 25.0  # 200 Gb/s / 8
    assert table["ib-ndr"].bandwidth_gbs == 50.0  # 400 Gb/s / 8
    assert table["100gbe"].bandwidth_gbs == 12.5
    assert table["400gbe"].bandwidth_gbs == 50.0
    assert {table[n].tier for n in ("nvlink3", "nvswitch-h100", "pcie5-x16")} == {"intra"}
    assert {table[n].tier for n in ("ib-ndr", "400gbe", "100gbe")} == {"inter"}
    # NCCL tuning.cc hwLat, ring / Simple: NVLink 3.4 us, PCI 5.7 us, network 14.0 us a step
    assert (table["nvlink4"].latency_us, table["pcie4-x16"].latency_us,
            table["ib-ndr"].latency_us) == (3.4, 5.7, 14.0)
    assert resolve_link("80", "intra").latency_us == 0.0


def test_ring_collectives_by_hand():
    # 8 GPUs, 100 MB, 450 GB/s, 3.4 us a step
    # all-reduce: 2 x 7/8 x 1e8 / 4.5e11 = 3.8889e-4 s, + 14 steps x 3.4 us = 4.76e-5
    assert ring_time_s("all-reduce", 1e8, 8, 450, 3.4) == pytest.approx(3.8889e-4 + 4.76e-5,
                                                                       rel=1e-4)
    # reduce-scatter and all-gather: 7/8 x 1e8 / 4.5e11 = 1.9444e-4, + 7 x 3.4 us = 2.38e-5
    for kind in ("reduce-scatter", "all-gather", "all-to-all"):
        assert ring_time_s(kind, 1e8, 8, 450, 3.4) == pytest.approx(1.9444e-4 + 2.38e-5,
                                                                    rel=1e-4)
    assert ring_time_s("all-reduce", 1e8, 1, 450, 3.4) == 0.0
    assert p2p_time_s(1e8, 50, 14) == pytest.approx(2e-3 + 14e-6)  # 1e8 / 5e10 + 14 us


def test_hierarchical_allreduce_by_hand():
    fabric = h100_fabric()
    # 16 GPUs one rank apart, 8 a node: reduce-scatter in the node (7/8 x 1e8 / 4.5e11 +
    # 7 x 3.4 us = 2.1824e-4), all-reduce of 1e8 / 8 between 2 nodes (2 x 1/2 x 1.25e7 / 5e10
    # + 2 x 14 us = 2.78e-4), all-gather in the node (2.1824e-4): 7.1449e-4 s
    assert fabric.time_s("all-reduce", 1e8, 16, 1) == pytest.approx(7.1449e-4, rel=1e-4)
    # one GPU per node (stride 8): a plain ring on InfiniBand: 2 x 3/4 x 1e8 / 5e10 + 6 x 14 us
    assert fabric.time_s("all-reduce", 1e8, 4, 8) == pytest.approx(3e-3 + 84e-6)
    # inside a node: the NVSwitch ring
    assert fabric.time_s("all-reduce", 1e8, 8, 1) == pytest.approx(4.3649e-4, rel=1e-4)


# -- tensor parallelism: Llama-2-7B, TP = 8 -------------------------------------------------


def test_llama_tp8_shard_shapes_and_alignment():
    report = shard_report(llama(), load_hardware("h100"), Layout(tp=8))
    forward = {r.gemm.layer: r for r in report.results
               if r.gemm.pass_ == "forward" and r.gemm.layer.startswith(("blk.1.", "lm_head"))}
    shapes = {layer: (r.gemm.m, r.gemm.n, r.gemm.k) for layer, r in forward.items()}
    # T = 1 x 4096 tokens; qkv: 3 x 4096 / 8 = 1536 columns; proj: K = 4096 / 8 = 512;
    # gated FFN: up and gate fused, 2 x 11008 / 8 = 2752 columns; down: K = 11008 / 8 = 1376;
    # logits: 32000 padded to a multiple of 128 x 8 = 1024 -> 32768, / 8 = 4096 columns
    assert shapes == {"blk.1.qkv": (4096, 1536, 4096), "blk.1.proj": (4096, 4096, 512),
                      "blk.1.ffn_up": (4096, 2752, 4096), "blk.1.ffn_down": (4096, 4096, 1376),
                      "lm_head": (4096, 4096, 4096)}
    # 1376 fp16 values = 2752 bytes: a multiple of 16 bytes (the rule), not of 128 (1376 % 64
    # = 32): only the advice tier, pad to 1408
    notes = forward["blk.1.ffn_down"].alignment
    assert [(n.dim, n.value, n.tier, n.pad_to) for n in notes] == [("K", 1376, "advice", 1408)]
    assert forward["blk.1.ffn_down"].aligned
    assert not forward["blk.1.ffn_up"].alignment  # 2752 = 43 x 64


def test_vocabulary_padding_as_megatron():
    assert padded_vocab(32000, 1) == 32000
    assert padded_vocab(32000, 8) == 32768  # next multiple of 1024
    assert padded_vocab(50257, 2) == 50432  # next multiple of 256 (GPT-2)


def test_tp_allreduce_bytes_and_time_per_block():
    result = evaluate(llama(batch=8), load_hardware("h100"), Layout(tp=8, micro_batch=1), 8,
                      h100_fabric())
    # one all-reduce: b x s x h x 2 bytes = 1 x 4096 x 4096 x 2 = 33,554,432
    assert result.allreduce_bytes == 1 * 4096 * 4096 * 2
    # per micro-batch: 32 blocks x 4 all-reduces (Narayanan et al.: 2 forward, 2 backward),
    # + the embedding's (forward) and the logits' input gradient (backward), each T h, + the
    # cross entropy's 3 all-reduces of T fp32; each on 8 GPUs over the NVSwitch:
    # AR(33,554,432) = 2 x 7/8 x 33554432 / 4.5e11 + 14 x 3.4e-6 = 1.30489e-4 + 4.76e-5
    big = 1.75 * 33554432 / 4.5e11 + 14 * 3.4e-6
    small = 1.75 * 4096 * 4 / 4.5e11 + 14 * 3.4e-6
    stage = result.stages[0]
    assert stage.tp_comm_s == pytest.approx(130 * big + 3 * small)
    assert result.parts["tp_comm_s"] == pytest.approx(8 * (130 * big + 3 * small))


def test_tp_must_divide_heads_and_ffn():
    with pytest.raises(InputError, match=r"tensor parallelism 3 does not divide heads \(32\)"):
        shard_report(llama(), load_hardware("h100"), Layout(tp=3))
    net = network_from_yaml("batch: 1\nseq: 8\ndtype: fp16\nlayers:\n- {type: transformer, "
                            "hidden: 64, heads: 8, kv_heads: 2, ffn: 96}\n")
    with pytest.raises(InputError, match=r"does not divide kv_heads \(2\)"):
        shard_report(net, load_hardware("h100"), Layout(tp=4))
    ffn = network_from_yaml("batch: 1\nseq: 8\ndtype: fp16\nlayers:\n- {type: transformer, "
                            "hidden: 64, heads: 8, ffn: 100}\n")
    with pytest.raises(InputError, match=r"does not divide ffn \(100\)"):
        shard_report(ffn, load_hardware("h100"), Layout(tp=8))


# -- activation memory: Korthikanti et al. 2022 ---------------------------------------------

KORTHIKANTI = """
batch: 1
seq: 2048
dtype: fp16
layers:
- {type: transformer, hidden: 1024, heads: 16, attention: naive, dropout: 0.1}
"""


@pytest.mark.parametrize("tp, sp, per_sbh", [
    # s b h = 2048 x 1 x 1024 = 2,097,152; 5 a s / h = 5 x 16 x 2048 / 1024 = 160
    (1, False, 34 + 160),              # sbh (34 + 5as/h)
    (4, False, 10 + 24 / 4 + 160 / 4),  # sbh (10 + 24/t + 5as/(ht))
    (4, True, (34 + 160) / 4),         # sbh/t (34 + 5as/h)
    (8, False, 10 + 24 / 8 + 160 / 8),
    (8, True, (34 + 160) / 8),
])
def test_activation_memory_per_block_is_korthikanti(tp, sp, per_sbh):
    net = shard_network(network_from_yaml(KORTHIKANTI), tp)
    block = net.layers[0]
    assert isinstance(block, Transformer)
    kept = activation_bytes_per_block(block, net.step(), "none", tp, sp)
    assert kept == 2048 * 1024 * per_sbh



def test_sequence_parallelism_divides_the_blocks_norms_dropouts_and_residuals_not_its_attention():
    """Sequence parallelism (Korthikanti et al., sec. 4.2.2) splits along the sequence the
    layer norms, the residual adds and the dropouts after the attention and the FFN, which
    tensor parallelism leaves replicated; the attention core runs inside the tensor-parallel
    region, already split by heads, and its dropout over the scores stays whole. Until 0.9.0
    ``layer_times`` divided every op of kind dropout by tp, that one too (found holding plan
    against Korthikanti et al.'s Table 4, benchmarks/bench_plan_published.py: sequence
    parallelism took 2.24 ms off a 22B layer at tp 8, 0.66 of it the attention dropout's; 1.58
    now, where the paper measured 0.6)."""
    report = shard_report(network_from_yaml(KORTHIKANTI), load_hardware("h100"), Layout(tp=2))
    (whole, _), (split, _) = (layer_times(report, sp)[False] for sp in (1, 2))
    # tp 2: T h = 2048 x 1024 = 2,097,152 values each, at the roof, bytes over 3.35 TB/s;
    # forward: layernorm 4 B a value (read 2, write 2) = 8,388,608 B, dropout 5 B (and its
    # 1-byte mask) = 10,485,760, residual add 6 B = 12,582,912, two of each, halved:
    # (8,388,608 + 10,485,760 + 12,582,912) / 3.35e12 = 9.39 us
    assert whole[0][0] - split[0][0] == pytest.approx(31_457_280 / 3.35e12)
    # backward: layernorm 6 B a value = 12,582,912, dropout 10,485,760, residual 12,582,912
    assert whole[0][1] - split[0][1] == pytest.approx(35_651_584 / 3.35e12)
    # the attention core's dropout: 8 heads x 2048 x 2048 = 33,554,432 values, 5 B each, whole
    core = [r for r in report.ops if r.op.layer.endswith(".attn") and r.op.kind == "dropout"]
    assert [r.op.bytes for r in core] == [167_772_160]


# -- pipeline parallelism -------------------------------------------------------------------


def test_pipeline_bubble_is_narayanans():
    # (p - 1) / (m + p - 1): p = 4, m = 32 -> 3 / 35; as a share of the ideal time, (p - 1) / m
    assert pipeline_bubble(4, 32) == pytest.approx(3 / 35)
    assert pipeline_bubble(1, 8) == 0.0
    result = evaluate(llama(batch=64), load_hardware("h100"),
                      Layout(tp=8, pp=4, dp=2, zero=1, micro_batch=1), 64, h100_fabric())
    assert result.micro_batches == 32  # 64 sequences / (dp 2 x micro-batch 1)
    assert result.bubble_fraction == pytest.approx(3 / 35)
    c = result.critical
    assert result.parts["bubble_s"] / (32 * c.microbatch_s) == pytest.approx(3 / 32)
    assert result.pipeline_s == pytest.approx(35 * c.microbatch_s)


def test_pipeline_stages_and_their_memory():
    net = llama()
    stages = split_stages(net, 4)
    names = [[net.layers[i].name for i in stage] for stage in stages]
    assert names[0][:2] == ["embed_tokens", "blk.1"] and names[0][-1] == "blk.8"
    assert names[3][-3:] == ["blk.32", "norm", "lm_head"]
    assert [len(s) for s in stages] == [9, 8, 8, 10]
    result = evaluate(llama(batch=64), load_hardware("h100"),
                      Layout(tp=1, pp=4, dp=1, zero=0, micro_batch=1), 64, h100_fabric())
    # 1F1B: the first stage keeps 4 micro-batches of its 8 blocks, the last 1 of its 8
    block = shard_network(net, 1).layers[1]
    per_block = activation_bytes_per_block(block, net.step(), "none", 1, False)
    first, last = result.stages[0].memory, result.stages[3].memory
    # (the embedding keeps nothing: its input is token ids, its gradient a scatter-add)
    assert first["activations"] == 4 * 8 * per_block
    # the last stage: 1 micro-batch of 8 blocks, the norm's and lm_head's inputs, the logits
    assert last["activations"] == 8 * per_block + 2 * 4096 * 4096 * 2 + 4096 * 32000 * 2
    # p2p: each boundary sends T h e = 4096 x 4096 x 2 bytes forward and backward; the first
    # stage only forward, the last only its input's gradient back (T h, not its output layer's
    # T x vocab logits, which it charged until 0.9.0: 7.5x the time, and the last stage sets
    # the step)
    send = 33554432 / 4.5e11 + 3.4e-6
    assert [stage.p2p_s for stage in result.stages] == pytest.approx(
        [send, 2 * send, 2 * send, send])


def _blocks_model(repeat: bool) -> str:
    """Two linear layers, four blocks and a head (no embedding: every linear layer is
    replicated under tensor parallelism), as a ``repeat`` or written out one by one."""
    head = ("batch: 8\nseq: 16\ndtype: fp16\nmode: train\noptimizer: adam\nlayers:\n")
    if repeat:
        return (head + "  - {type: linear, in: 64, out: 64, name: fc, repeat: 2}\n"
                "  - {type: transformer, hidden: 64, heads: 4, ffn: 256, name: blk, "
                "repeat: 4}\n  - {type: linear, in: 64, out: 10, name: out}\n")
    return (head + "".join(f"  - {{type: linear, in: 64, out: 64, name: fc.{c}}}\n"
                           for c in (1, 2))
            + "".join(f"  - {{type: transformer, hidden: 64, heads: 4, ffn: 256, "
                      f"name: blk.{c}}}\n" for c in (1, 2, 3, 4))
            + "  - {type: linear, in: 64, out: 10, name: out}\n")


@pytest.mark.parametrize("layout", [Layout(tp=2, pp=2, dp=2, zero=1, micro_batch=2),
                                    Layout(tp=4, pp=1, dp=2, zero=3, micro_batch=1)])
def test_a_layout_of_a_repeat_is_that_of_its_copies_written_out(layout):
    """The layout rules walk a repeat's copies without naming each one (a 126-block model's
    plan took 10 s building them): every stage's times, communication and memory, the
    replicated layers' names and the step equal those of the copies written out. Per GPU at
    tp 2, pp 2, dp 2, zero 1: stage 0 holds fc.1, fc.2 (64 x 64 each, no bias: 4,096
    parameters each) and blocks 1-2; each block, heads and ffn halved, 64 x (32 + 2 x 32) qkv
    + 32 x 64 proj + 64 x 128 up + 128 x 64 down = 6,144 + 2,048 + 16,384 = 24,576 weights
    and two layernorms' 64 weights and 64 biases, unsplit: 256; 24,832 a block; so 2 x 4,096
    + 2 x 24,832 = 57,856."""
    a100, fabric = load_hardware("a100"), no_latency_fabric()
    run = evaluate(network_from_yaml(_blocks_model(True)), a100, layout, 8, fabric)
    out = evaluate(network_from_yaml(_blocks_model(False)), a100, layout, 8, fabric)
    assert run.stages == out.stages and run.predicted_stages == out.predicted_stages
    assert run.step_s == out.step_s and run.memory == out.memory
    assert run.replicated == out.replicated == ("fc.1", "fc.2", "out")  # no vocabulary
    if layout.pp == 2:
        assert run.stages[0].parameters == 2 * 4096 + 2 * 24832


def test_a_pipeline_boundary_crosses_nodes_only_where_its_ranks_do():
    # ranks tensor, data, pipeline; 8 GPUs a node. tp 2, pp 8: stage i holds ranks 2i, 2i + 1,
    # so stages 0-3 sit in node 0 and 4-7 in node 1: only the boundary after stage 3 (ranks 6,
    # 7 -> 8, 9) crosses; until 0.9.0 every boundary of a pipeline over two nodes was charged
    # at the inter-node link
    assert [crosses_nodes(b, 2, 8) for b in range(7)] == [False] * 3 + [True] + [False] * 3
    assert [crosses_nodes(b, 8, 8) for b in range(3)] == [True] * 3  # a stage a node
    assert [crosses_nodes(b, 3, 8) for b in range(4)] == [False, True, True, False]  # 0-2 | 3-5, 6-8
    assert not crosses_nodes(0, 4, 8)
    result = evaluate(llama(batch=16), load_hardware("h100"),
                      Layout(tp=2, pp=8, dp=1, zero=1, micro_batch=1), 16,
                      h100_fabric())
    # each boundary sends T h e = 4096 x 4096 x 2 bytes each way: NVLink 4 at 450 GB/s + 3.4
    # us in a node, InfiniBand NDR at 50 GB/s + 14 us across
    nvlink, ndr = 33554432 / 4.5e11 + 3.4e-6, 33554432 / 5e10 + 14e-6
    assert [stage.p2p_s for stage in result.stages] == pytest.approx(
        [nvlink, 2 * nvlink, 2 * nvlink, nvlink + ndr, ndr + nvlink, 2 * nvlink, 2 * nvlink,
         nvlink])


def test_a_sequence_parallel_boundary_sends_each_gpus_share_of_the_tokens():
    """With sequence parallelism the activations at a pipeline boundary are divided along the
    sequence: each of the tp GPUs holds, and sends to its peer of the next stage, T / tp
    tokens (Megatron-LM, ``core/pipeline_parallel/schedules.py``, ``get_tensor_shapes``:
    ``if config.sequence_parallel: seq_length = seq_length // tensor_model_parallel_world_size``).
    Until 0.9.0 each GPU was charged all T h: Llama-2-7B, tp 2, pp 2, dp 16, mb 1 at seq 4096
    over 64 H100s read p2p 43.8 ms a step where it is 22.4 ms."""
    # tp 2, pp 2, dp 1: stage 0 holds ranks 0-1 and stage 1 ranks 2-3, one node: NVLink 4
    # T h e / tp = 4096 x 4096 x 2 / 2 = 16,777,216 bytes each way, at 450 GB/s + 3.4 us
    sp = evaluate(llama(batch=8), load_hardware("h100"),
                  Layout(tp=2, pp=2, dp=1, zero=1, micro_batch=1, sequence_parallel=True), 8,
                  h100_fabric())
    send = 16777216 / 4.5e11 + 3.4e-6
    assert [stage.p2p_s for stage in sp.stages] == pytest.approx([send, send])
    assert sp.parts["p2p_s"] == pytest.approx(8 * send)  # m = 8 micro-batches
    # without sequence parallelism every GPU holds the whole T h: 33,554,432 bytes
    plain = evaluate(llama(batch=8), load_hardware("h100"),
                     Layout(tp=2, pp=2, dp=1, zero=1, micro_batch=1), 8, h100_fabric())
    send = 33554432 / 4.5e11 + 3.4e-6
    assert [stage.p2p_s for stage in plain.stages] == pytest.approx([send, send])
    # across nodes, the README's 64-GPU layout: tp 2 x dp 16 = 32 ranks a stage, so each
    # boundary pair sits in two nodes: InfiniBand NDR, 16,777,216 / 50 GB/s + 14 us =
    # 349.5 us, 64 micro-batches (1024 / 16): 22.4 ms
    wide = evaluate(llama(batch=1024), load_hardware("h100"),
                    Layout(tp=2, pp=2, dp=16, zero=1, micro_batch=1, sequence_parallel=True),
                    1024, h100_fabric())
    assert wide.parts["p2p_s"] == pytest.approx(64 * (16777216 / 5e10 + 14e-6))


def test_pipeline_deeper_than_blocks_is_refused():
    with pytest.raises(InputError, match="a pipeline of 64 stages is deeper than the model's 32"):
        evaluate(llama(batch=64), load_hardware("h100"), Layout(pp=64), 64, h100_fabric())


# -- data parallelism with ZeRO: Rajbhandari et al. 2020 ------------------------------------

ZERO_MODEL = "batch: 64\ndtype: fp16\noptimizer: adam\nmlp: [75000, 100000]\n"


@pytest.mark.parametrize("zero, gb", [(0, 120.0), (1, 31.40625), (2, 16.640625),
                                      (3, 1.875)])
def test_zero_memory_is_the_papers_figure_1(zero, gb):
    # Psi = 75,000 x 100,000 = 7.5e9 parameters, Nd = 64, mixed-precision Adam (K = 12):
    # baseline (2 + 2 + 12) Psi = 120 GB; P_os 2 Psi + 2 Psi + 12 Psi / 64 = 31.4 GB;
    # P_os+g 2 Psi + 14 Psi / 64 = 16.6 GB; P_os+g+p 16 Psi / 64 = 1.9 GB (the paper's figure 1)
    result = evaluate(network_from_yaml(ZERO_MODEL), load_hardware("h100"),
                      Layout(dp=64, zero=zero), 64, h100_fabric())
    memory = result.memory
    assert (memory["weights"] + memory["gradients"] + memory["optimizer"]) / 1e9 == \
        pytest.approx(gb)


def test_zero3_moves_one_and_a_half_times_the_allreduce():
    fabric = no_latency_fabric()  # bare bandwidths: no latency term
    net = network_from_yaml(ZERO_MODEL)
    times = {z: evaluate(net, load_hardware("h100"), Layout(dp=64, zero=z), 64,
                         fabric).stages[0].dp_comm_s for z in (0, 1, 3)}
    # ZeRO sec. 7.2.2: stage 3 moves 3 Psi against the all-reduce's 2 Psi (one micro-batch)
    assert times[3] / times[0] == pytest.approx(1.5)
    assert times[1] == times[0]  # stage 1: reduce-scatter + all-gather, the same volume
    # dp = 64 GPUs 1 apart, 8 a node: hierarchical. The all-reduce of 1.5e10 bytes:
    # 2 x (7/8 x 1.5e10 / 1e11) + 2 x 7/8 x (1.5e10 / 8) / 1e10 = 0.2625 + 0.328125 s
    assert times[0] == pytest.approx(0.2625 + 0.328125)


def test_one_gpu_memory_is_analyzes():
    net = llama()
    result = evaluate(net, load_hardware("h100"), Layout(), 1, h100_fabric())
    parts = memory_of(net, load_hardware("h100")).parts
    assert result.memory == {key: parts[key] for key in result.memory}


# -- expert parallelism ---------------------------------------------------------------------


def test_moe_all_to_all_by_hand():
    net = load_network(EXAMPLES / "hf" / "mixtral-8x7b.json").with_overrides(
        batch=8, seq=4096, optimizer="adam")
    result = evaluate(net, load_hardware("h100"), Layout(dp=8, ep=8, zero=1), 8,
                      h100_fabric())
    # per MoE block and micro-batch: 4 all-to-alls (dispatch, combine; forward, backward) of
    # T k h e = 4096 x 2 x 4096 x 2 = 67,108,864 bytes over 8 GPUs of a node:
    # 7/8 x 67108864 / 4.5e11 + 7 x 3.4 us
    one = 7 / 8 * 67108864 / 4.5e11 + 7 * 3.4e-6
    assert result.stages[0].ep_comm_s == pytest.approx(32 * 4 * one)
    # each GPU holds 8 / 8 = 1 expert of each block; its router still scores all 8
    blocks = [layer for layer in result.report.network.layers if isinstance(layer, Transformer)]
    assert {(block.local_experts, block.experts) for block in blocks} == {(1, 8)}
    with pytest.raises(InputError, match="expert parallelism 16 needs a number of experts"):
        evaluate(net, load_hardware("h100"), Layout(dp=16, ep=16), 16, h100_fabric())


def test_moe_with_tensor_parallelism_moves_what_megatron_core_moves():
    """Megatron-Core's all-to-all token dispatcher with tp > 1 (``MoEAlltoAllTokenDispatcher``:
    A2A over EP, AG over TP; RS over TP, A2A over EP; sequence parallel, which ``MoELayer``
    requires): each GPU all-to-alls its own T / tp tokens' routed rows, and the expert-tensor-
    parallel group (tp GPUs) all-gathers the T k rows. Until 0.9.0 each GPU all-to-alled all
    T tokens' rows (twice these bytes at tp 2) and the FFN all-reduced T h."""
    net = load_network(EXAMPLES / "hf" / "mixtral-8x7b.json").with_overrides(
        batch=8, seq=4096, optimizer="adam")
    result = evaluate(net, load_hardware("h100"), Layout(tp=2, dp=4, ep=4, zero=1,
                                                         sequence_parallel=True), 8,
                      h100_fabric())
    link, step = 4.5e11, 3.4e-6  # NVSwitch inside the node
    # all-to-all over 4 GPUs 2 ranks apart, one node: T / tp x k x h x e =
    # 2048 x 2 x 4096 x 2 = 33,554,432 bytes, 3/4 of them sent, 3 steps
    a2a = 3 / 4 * 33_554_432 / link + 3 * step
    assert result.stages[0].ep_comm_s == pytest.approx(32 * 4 * a2a)
    # per block: the attention's 2 all-reduces of T h e = 4096 x 4096 x 2 = 33,554,432 bytes
    # over 2 GPUs (2 x 1/2 of it sent, 2 steps) and 4 all-gathers of T k h e = 67,108,864
    # (1/2 sent, 1 step); the embedding's and the output layer's all-reduces of T h e, and
    # the cross entropy's 3 of T fp32 values (16,384 bytes)
    all_reduce = 33_554_432 / link + 2 * step
    gather = 67_108_864 / 2 / link + step
    cross_entropy = 3 * (16_384 / link + 2 * step)
    assert result.stages[0].tp_comm_s == pytest.approx(
        32 * (2 * all_reduce + 4 * gather) + 2 * all_reduce + cross_entropy)
    # without sequence parallelism plan leaves MoE at tp > 1 out, naming the rule
    with pytest.raises(InputError, match="experts with tensor parallelism need sequence "
                                         "parallelism"):
        plan_layouts(net, load_hardware("h100"), [8], 8, h100_fabric(), tp=[2],
                     sequence_parallel=False)
    # in a list with a value that runs, said on plan's left-out line, not dropped unsaid
    kept = plan_layouts(net, load_hardware("h100"), [8], 8, h100_fabric(), tp=[1, 2], ep=[8],
                        sequence_parallel=False)
    assert any(line.startswith("tp 2: experts with tensor parallelism need sequence "
                               "parallelism") for line in kept.left_out)
    # the default candidates (no --tp) leave them out of the search
    searched = plan_layouts(net, load_hardware("h100"), [8], 8, h100_fabric(), ep=[8],
                            sequence_parallel=False)
    assert {result.layout.tp for result in searched.results} == {1}
    # with sequence parallelism (the default) tp 2 is planned, searched or given (a check of
    # tp that built its layout without sequence parallelism once dropped every tp > 1 here)
    for given in (None, [2]):
        planned = plan_layouts(net, load_hardware("h100"), [8], 8, h100_fabric(), tp=given,
                               ep=[2])
        assert 2 in {result.layout.tp for result in planned.results}


def test_expert_parallelism_splits_the_experts_not_the_router():
    """plan --ep 4 --gemms showed Mixtral's router as 4096 x 2 x 4096 (N = E / ep, alignment
    NO; --ep 8: N = 1): the shard divided the block's experts, the router's with them. Each
    GPU scores its own tokens against all E = 8 experts before the dispatch; only the expert
    GEMMs and weights are split. Tensor parallelism leaves the router whole too."""
    net = load_network(EXAMPLES / "hf" / "mixtral-8x7b.json").with_overrides(
        batch=8, seq=4096, optimizer="adam")
    result = evaluate(net, load_hardware("h100"), Layout(dp=8, ep=4), 8, h100_fabric())
    gemms, ops = result.report.network.expand()
    shapes = {(g.layer, g.pass_): (g.m, g.n, g.k, g.batch_count) for g in gemms
              if g.layer.startswith("blk.1.")}
    # T = 4096 tokens, h = 4096, E = 8: the router is T x E x h, its data gradient T x h x E
    assert shapes["blk.1.router", "forward"] == (4096, 8, 4096, 1)
    assert shapes["blk.1.router", "backward-data"] == (4096, 4096, 8, 1)
    assert shapes["blk.1.router", "backward-weight"] == (4096, 8, 4096, 1)
    # 8 / 4 = 2 local experts, each receiving the group's 4 x T k / E = T k / 2 = 4096 rows
    # (k = 2); gated: up is 2 x 14336 = 28672 wide
    assert shapes["blk.1.expert_up", "forward"] == (4096, 28672, 4096, 2)
    assert shapes["blk.1.expert_down", "forward"] == (4096, 4096, 14336, 2)
    softmax = next(o for o in ops if o.layer == "blk.1.router" and o.kind == "softmax")
    assert softmax.bytes == 4096 * 8 * 2 * 2  # T E values read and written, 2 bytes each
    # one shard block: qkv 4096 x (4096 + 2 x 1024) = 25,165,824; proj 4096^2 = 16,777,216;
    # 2 experts of 4096 x 28672 + 14336 x 4096 = 176,160,768 each; router 4096 x 8 = 32,768;
    # 2 RMSNorms 8,192: 394,305,536 (the router cut to 4096 x 2 made it 394,280,960)
    block = next(layer for layer in result.report.network.layers
                 if isinstance(layer, Transformer))
    assert block.parameters == 394_305_536
    assert block.expert_parameters == 2 * 176_160_768
    # the whole shard: Mixtral's 46,702,792,704 less 32 blocks x 6 experts x 176,160,768
    assert result.stages[0].parameters == 46_702_792_704 - 32 * 6 * 176_160_768
    # ep moves no activations: the T k routed rows arrive as T k rows, the logits stay T E
    whole = next(layer for layer in net.layers if isinstance(layer, Transformer))
    step = net.step()
    assert saved_bytes(block, step, "none") == saved_bytes(whole, step, "none")
    tensor = shard_network(net, 2)
    gemm = next(g for g in tensor.expand()[0] if g.layer == "blk.1.router")
    assert (gemm.n, gemm.k) == (8, 4096)  # tp 2 halves heads and ffn, not the router


# -- the search -----------------------------------------------------------------------------


def test_parse_counts():
    assert parse_counts("8..64", "gpus") == (8, 16, 32, 64)
    # the ends typed are counts, as sweep reads a range: 6, the powers of two between, 48
    assert parse_counts("6..48", "gpus") == (6, 8, 16, 32, 48)
    assert parse_counts("3..3", "tp") == (3,)
    assert parse_counts("64,8", "gpus") == (8, 64)
    with pytest.raises(InputError, match="expected a count"):
        parse_counts("0..8", "gpus")


def test_default_fabric_from_the_entry():
    assert make_fabric(load_hardware("h100")).intra.name == "nvswitch-h100"
    assert make_fabric(load_hardware("a100-sxm4-80gb")).intra.name == "nvswitch-a100"
    assert make_fabric(load_hardware("h100-pcie-80gb")).intra.name == "pcie5-x16"
    assert make_fabric(load_hardware("h100")).inter.name == "ib-ndr"


def test_plan_front_is_monotonic_and_fits():
    net = llama(batch=64)
    plan = plan_layouts(net, load_hardware("h100"), (8, 16, 32), 64, h100_fabric(),
                        micro_batch=(1, 2))
    front = plan.front
    assert [r.layout.gpus for r in front] == [8, 16, 32]
    assert all(a.predicted_step_s > b.predicted_step_s for a, b in zip(front, front[1:]))
    assert all(r.fits for r in front)
    for n in (8, 16, 32):
        ranked = plan.ranked(n)
        assert [r.predicted_step_s for r in ranked] == sorted(r.predicted_step_s for r in ranked)
        assert all(r.layout.gpus == n for r in ranked)
        # the roofline is a lower bound of the prediction, layout by layout
        assert all(r.step_s <= r.predicted_step_s for r in ranked)


def test_one_gpu_step_is_analyzes_totals():
    """On one GPU with one micro-batch there is no communication and no bubble: the layout's
    roofline step is analyze's total roofline time and its predicted step analyze's total
    predicted time (every GEMM and op, the optimizer update among them)."""
    net = llama(batch=2, seq=1024)
    hw = load_hardware("h100")
    result = evaluate(net, hw, Layout(micro_batch=2), 2, h100_fabric())
    totals = shard_report(net, hw, Layout(micro_batch=2)).totals
    assert result.step_s == pytest.approx(totals["time_s"], rel=1e-9)
    assert result.predicted_step_s == pytest.approx(totals["predicted_time_s"], rel=1e-9)
    assert result.predicted_step_s > result.step_s
    data = result.to_dict()
    assert data["predicted_step_s"] == pytest.approx(totals["predicted_time_s"], rel=1e-9)
    assert data["predicted_tokens_per_s"] == pytest.approx(2 * 1024 / data["predicted_step_s"])
    assert sum(data["predicted_parts"].values()) - data["predicted_parts"][
        "dp_comm_overlapped_s"] == pytest.approx(data["predicted_step_s"], rel=1e-9)


def test_prediction_breaks_the_roofline_tie_between_micro_batches():
    """Eight micro-batches of 1 and two of 4 do the same compute-bound work, so the roofline
    ties them; the prediction charges each of the 8 x more kernels its fixed time and the
    narrow GEMMs their tile waste, and ranks the micro-batch of 4 first."""
    plan = plan_layouts(llama(batch=64, seq=2048), load_hardware("h100"), (8,), 64,
                        h100_fabric(), zero=(1,), micro_batch=(1, 4), tp=(1,), pp=(1,))
    by_mb = {r.layout.micro_batch: r for r in plan.ranked(8)}
    assert by_mb[1].step_s == pytest.approx(by_mb[4].step_s, rel=1e-3)
    assert by_mb[1].predicted_step_s > by_mb[4].predicted_step_s * 1.01
    assert plan.ranked(8)[0].layout.micro_batch == 4


def test_each_ranks_whole_share_is_a_micro_batch_tried_by_default():
    """Beside an LLM's micro-batches of 1-8 sequences, plan tries each data-parallel rank's
    whole share of the batch (no accumulation): an MLP's 4096 rows on 2 H100s ran best in 256
    micro-batches of 8 rows a rank, thin and memory-bound, where one of 2048 rows a rank is
    compute-bound. Given micro-batches are the only ones tried."""
    from roofline.analysis.plan import _micro_batches

    assert _micro_batches(None, 4096, 2) == [1, 2, 4, 8, 2048]
    assert _micro_batches(None, 16, 2) == [1, 2, 4, 8]  # the share, 8, is among them
    assert _micro_batches(None, 4096, 3) == [1, 2, 4, 8]  # no whole share: 4096 / 3
    assert _micro_batches((4,), 4096, 2) == [4]
    mlp = network_from_yaml("batch: 4096\ndtype: fp16\nmlp: [1024, 4096, 1000]\n")
    plan = plan_layouts(mlp, load_hardware("h100"), (2,), 4096, h100_fabric())
    best = plan.ranked(2)[0]
    assert best.layout.micro_batch == 2048 and best.layout.dp == 2
    # its memory line gives each part in its own unit: 8.3 M fp16 weights, not "0.0 GB"
    from roofline.output.plan import plan_table

    line = next(x for x in plan_table(plan).splitlines() if "memory per GPU:" in x)
    assert " MB, " in line and "0.0 GB" not in line


def test_zero_is_not_tried_where_one_data_parallel_rank_leaves_it_nothing_to_shard():
    """ZeRO shards weights, gradients and optimizer states over the dp ranks; at dp = 1 every
    stage is stage 0 (the same bytes, no collective), and a new user's Llama-2-7B on 8 H100s at
    batch 1 got three rows differing in the zero column only. At batch 1, dp x micro-batch
    divides 1, so dp = 1 and micro-batch 1: tp x pp = 8 with tp in 1, 2, 4, 8 (each divides 32
    heads and 11008) and pp dividing 32 blocks: (1, 8), (2, 4), (4, 2), (8, 1), 4 layouts. Before,
    each took ZeRO 0-3, 2 and 3 not with a pipeline: 4 + 3 x 2 = 10 candidates."""
    net, h100, fabric = llama(), load_hardware("h100"), h100_fabric()
    plan = plan_layouts(net, h100, (8,), 1, fabric)
    assert sorted((r.layout.tp, r.layout.pp, r.layout.dp, r.layout.zero)
                  for r in plan.results) == [(1, 8, 1, 0), (2, 4, 1, 0), (4, 2, 1, 0),
                                             (8, 1, 1, 0)]
    top = plan.to_dict(top=3)["counts"][0]
    assert top["candidates"] == 4
    assert len({(x["tp"], x["pp"]) for x in top["layouts"]}) == len(top["layouts"]) == 3
    # stages the user gives are tried as given: (8, 1) with 1 and 3, the pipelines with 1 only
    pinned = plan_layouts(net, h100, (8,), 1, fabric, zero=(1, 3))
    assert sorted((r.layout.tp, r.layout.pp, r.layout.zero) for r in pinned.results) == [
        (1, 8, 1), (2, 4, 1), (4, 2, 1), (8, 1, 1), (8, 1, 3)]
    by_zero = {r.layout.zero: r for r in pinned.results if r.layout.tp == 8}
    assert by_zero[1].predicted_step_s == by_zero[3].predicted_step_s  # nothing to shard
    assert by_zero[1].memory_bytes == by_zero[3].memory_bytes


def test_an_mlp_plan_tries_zero_only_where_dp_is_two_or_more():
    """The 1024-4096-1000 MLP at batch 512 (no blocks: tp 1, pp 1): on 1 GPU dp = 1, so only
    ZeRO 0, with micro-batches 1, 2, 4, 8 and the whole 512: 5 candidates (20 before); on 2,
    dp = 2 and every stage is tried: 5 micro-batches (1, 2, 4, 8, 256) x 4 stages = 20."""
    mlp = load_network(EXAMPLES / "mlp-1024-4096-1000.yaml").with_overrides(optimizer="adam")
    plan = plan_layouts(mlp, load_hardware("h100"), (1, 2), 512, h100_fabric())
    one = [r.layout for r in plan.results if r.layout.gpus == 1]
    two = [r.layout for r in plan.results if r.layout.gpus == 2]
    assert {x.zero for x in one} == {0} and sorted(x.micro_batch for x in one) == [
        1, 2, 4, 8, 512]
    assert len(two) == 20 and {x.zero for x in two} == {0, 1, 2, 3}
    assert {x.dp for x in two} == {2}
    # its chart's title: the table header's step (it read "global batch 512 x seq None, fp16")
    import matplotlib

    matplotlib.use("Agg")
    from roofline.plot import plot_plan

    assert plot_plan(plan).get_title() == (
        "mlp-1024-4096-1000 on h100-sxm5-80gb: training step\nglobal batch 512, fp16, "
        "optimizer adam, recompute none")


def test_plan_cli_table_json_and_chart(runner, tmp_path):
    chart = tmp_path / "plan.png"
    args = ["plan", str(LLAMA), "--hw", "h100", "--gpus", "8,16", "--batch", "32", "--seq",
            "2048", "--micro-batch", "1", "--zero", "1"]
    result = runner.invoke(cli, [*args, "--plot", str(chart)])
    assert result.exit_code == 0, result.output
    assert "Pareto front" in result.output and "assumes:" in result.output
    assert chart.stat().st_size > 10_000
    data = json.loads(runner.invoke(cli, [*args, "--format", "json"]).stdout)
    assert [c["gpus"] for c in data["counts"]] == [8, 16]
    assert data["fabric"]["intra"]["name"] == "nvswitch-h100"
    layout = data["front"][0]
    for key in ("tp", "pp", "dp", "zero", "micro_batch", "step_s", "step_no_overlap_s",
                "parts", "memory", "bound", "bubble_fraction", "predicted_step_s",
                "predicted_tokens_per_s", "predicted_parts", "predicted_bound"):
        assert key in layout
    assert data["prediction_basis"] == "fitted"
    assert data["prediction_fit"]["architecture_in_data"] is True  # H100: Hopper was fitted
    assert "predicted: fitted" in result.output
    assert layout["memory"]["fits"] is True


@pytest.mark.parametrize("args, message", [
    (["--tp", "3"], "tensor parallelism 3 does not divide heads (32) of block 'blk.1'"),
    (["--pp", "64"], "a pipeline of 64 stages is deeper than the model's 32 transformer"),
    (["--micro-batch", "64"], "no layout of the global batch 32 runs on 16 GPUs with the "
                              "choices given: dp x micro-batch must divide the global batch "
                              "(--batch)"),
    (["--tp", "8", "--pp", "4"], "needs more GPUs than the 16 given (--gpus)"),
    (["--zero", "3", "--pp", "2"], "ZeRO stage 3 does not combine with pipeline"),
    (["--zero", "5"], "Error: --zero: expected ZeRO stages 0, 1, 2 or 3"),
    (["--inter", "11gbe"], "Error: --inter: unknown link '11gbe'"),
    (["--gpus", "0"], None),
])
def test_plan_bad_input_is_one_line(runner, args, message):
    base = ["plan", str(LLAMA), "--hw", "h100", "--gpus", "16", "--batch", "32", "--seq",
            "2048"]
    result = runner.invoke(cli, base + args)
    assert result.exit_code == 2
    assert result.output.count("\n") == 1, result.output
    assert "Error:" in result.output
    if message:
        assert message in result.output


def test_zero_stages_given_with_depths_are_tried_where_they_combine():
    """--pp 1,2 --zero 0,1,2,3 stopped the run on ZeRO 2 with pp 2, though ZeRO 2 and 3 run at
    pp 1: each given stage is now tried at the depths it combines with (the plan's assumptions
    say so), and refused only where no given depth takes it (--pp 2 --zero 3 above)."""
    net, h100, fabric = llama(), load_hardware("h100"), h100_fabric()
    plan = plan_layouts(net, h100, (16,), 32, fabric, pp=[1, 2], zero=[0, 1, 2, 3])
    pairs = {(r.layout.pp, r.layout.zero) for r in plan.results}
    assert {(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)} <= pairs
    assert not {(2, 2), (2, 3)} & pairs
    assert any("ZeRO 2 and 3 without a pipeline only" in text for text in ASSUMPTIONS)


def test_a_zero_stage_no_given_depth_takes_is_left_out_as_a_tp_value_is():
    """--pp 2 --zero 1,2 stopped the whole plan on ZeRO 2 (which no pipeline takes), though
    ZeRO 1 runs at pp 2; --tp, --pp and --ep lists leave out what the model cannot take and
    say so. Now ZeRO 2 is left out on the `left out:` line, and only a list with nothing left
    (--pp 2 --zero 2,3) is refused. Llama-2-7B, 16 GPUs, pp 2: dp 8 at tp 1, so the plan's
    layouts are ZeRO 1 only."""
    net, h100, fabric = llama(), load_hardware("h100"), h100_fabric()
    plan = plan_layouts(net, h100, (16,), 32, fabric, tp=[1], pp=[2], zero=[1, 2])
    assert {r.layout.zero for r in plan.results} == {1}
    assert plan.left_out == ("zero 2: ZeRO stage 2 does not combine with pipeline parallelism "
                             "(DeepSpeed refuses it; use zero 1 or pp 1)",)
    with pytest.raises(InputError, match="ZeRO stage 2 does not combine"):
        plan_layouts(net, h100, (16,), 32, fabric, pp=[2], zero=[2, 3])


def test_stage_blocks_split_as_evenly_as_they_go():
    """By hand: 126 blocks (Llama-3.1-405B) over 16 stages, 126 = 16 x 7 + 14: 14 stages of 8
    and 2 of 7 (112 + 14 = 126; Llama 3 trained 405B at pp 16, its first and last stages a block
    short, the same slowest stage of 8); 32 over 3 = 3 x 10 + 2: 11, 11, 10; 32 over 4: 8 each."""
    assert stage_blocks(126, 16) == (8,) * 14 + (7,) * 2
    assert stage_blocks(32, 3) == (11, 11, 10)
    assert stage_blocks(32, 4) == (8, 8, 8, 8)
    assert [len([i for i in stage if i in blocks_of(llama())])
            for stage in split_stages(llama(), 3)] == [11, 11, 10]


def test_plan_tries_uneven_pipeline_stages(invoke):
    """--pp 3 of Llama-2-7B's 32 blocks was refused ("plan keeps the stages even"); it now runs
    stages of 11, 11 and 10 blocks, the step paced by an 11-block stage: a block's forward is
    2 (4 h^2 + 3 h ffn) = 2 (4 x 4096^2 + 3 x 4096 x 11008) = 404 MFLOP a token, the output
    layer's 2 h vocab = 2 x 4096 x 32000 = 262 MFLOP, so the last stage's 10 blocks and the
    output layer (10.65 blocks' work) are lighter than 11 blocks."""
    net, h100, fabric = llama(), load_hardware("h100"), h100_fabric()
    plan = plan_layouts(net, h100, (24,), 512, fabric, pp=[3])
    best = plan.ranked(24)[0]
    assert best.layout.pp == 3
    computes = [stage.forward_s + stage.backward_s for stage in best.stages]
    assert computes.index(max(computes)) in (0, 1)
    args = ("plan", str(LLAMA), "--hw", "h100", "--gpus", "24", "--batch", "512", "--seq",
            "4096", "--pp", "3")
    out = invoke(*args).stdout
    assert ("uneven stages: pp 3 split the model's 32 transformer blocks with the first "
            "stages one block more") in out
    assert "pipeline: 3 uneven stages (the first 2 of 11 blocks, the other 1 of 10)" in out
    data = json.loads(invoke(*args, "--format", "json").stdout)
    assert data["counts"][0]["layouts"][0]["stage_blocks"] == [11, 11, 10]


def test_plan_names_the_rule_that_leaves_no_layout():
    """A new user's plan of Llama-2-7B on 24 GPUs with --pp 3 (and 10 with --pp 5) was told
    "dp x micro-batch must divide --batch", which 512 sequences did: the search skipped a pp
    that leaves the 32 blocks in uneven stages. Uneven stages are now tried (see
    test_plan_tries_uneven_pipeline_stages); when the choices leave no layout, the error names
    the rule the splits that got furthest broke."""
    net, h100, fabric = llama(), load_hardware("h100"), h100_fabric()
    # tp 8 x pp (1, 2, 3, 4, 6, 12: the divisors of 12) never divides 12 GPUs
    with pytest.raises(InputError, match="runs on 12 GPUs with the choices given: tp x pp "
                                         "must divide the GPU count"):
        plan_layouts(net, h100, (12,), 512, fabric, tp=[8])
    # Mixtral on 6 GPUs, ep 4: dp = 6 / (tp pp) is 6, 3, 2 or 1, none a multiple of 4; the
    # splits keep the rules before it, so this is the one named (not the batch's)
    mixtral = load_network(EXAMPLES / "hf" / "mixtral-8x7b.json").with_overrides(
        batch=1, seq=4096, optimizer="adam")
    with pytest.raises(InputError, match="choices given: ep must divide dp, the GPUs over "
                                         "tp x pp"):
        plan_layouts(mixtral, h100, (6,), 512, fabric, ep=[4])


def test_xla_collective_rows_are_their_throughputs_as_times():
    """benchmarks/data/xla_collectives.csv: sm_90's all-reduce of 536870912 f32 (2 GiB) over
    one group of 8 reads 229968237690 B/s in XLA's table, so 2147483648 B / 2.29968e11 B/s =
    9338.18 us; its bus bandwidth, 2 x 7/8 of the buffer over that time, 402.4 GB/s. A
    reduce-scatter's buffer is its output's times p: 4 x 2 x 2^25 f32 over p = 2 is 2^28 B."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
    from bench_collectives import bus_gbs, load_rows, predicted_s

    rows = load_rows()
    assert len(rows) == 4 * 3 * 22
    (big,) = [r for r in rows if (r.collective, r.p, r.nbytes) == ("all-reduce", 8, 2**31)]
    assert big.time_s == pytest.approx(2**31 / 229968237690, rel=1e-5)
    assert bus_gbs(big) == pytest.approx(2 * 7 / 8 * 2**31 / (2**31 / 229968237690) / 1e9,
                                         rel=1e-5)
    # the ring on NVSwitch H100: 2 x 7/8 x 2^31 B / 450 GB/s + 14 steps x 3.4 us
    assert predicted_s(big) == pytest.approx(1.75 * 2**31 / 450e9 + 14 * 3.4e-6)
    assert {r.groups * r.p for r in rows} == {8}


def test_plan_names_the_attention_it_counts_activations_for(invoke):
    out = invoke("plan", LLAMA, "--hw", "h100", "--gpus", "8", "--batch", "64", "--seq", "4096",
                 "--top", "1").stdout
    assert out.splitlines()[0].endswith("recompute none, attention flash")
    data = json.loads(invoke("plan", LLAMA, "--hw", "h100", "--gpus", "8", "--batch", "64",
                             "--seq", "4096", "--top", "1", "--attention", "naive",
                             "--format", "json").stdout)
    assert data["attention"] == "naive"


LLAMA_405B = {  # Llama-3.1-405B's published config.json (the keys roofline reads)
    "model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248,
    "num_attention_heads": 128, "num_key_value_heads": 8, "num_hidden_layers": 126,
    "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16"}


def test_a_plan_where_nothing_fits_says_what_was_not_tried(invoke, tmp_path):
    """Llama-3.1-405B on 64 H100s read "none fits" and nothing more, though plan had tried
    two pipelines only: pp divides the GPU count and the 126 blocks (126 = 2 x 3^2 x 7), and of
    64's divisors only 1 and 2 divide 126; the next divisors of 126 are 3, 6, 7, 9. Nor was
    recomputation tried (none by default); with --recompute selective, full is left."""
    config = tmp_path / "llama-405b.json"
    config.write_text(json.dumps(LLAMA_405B))
    args = ("plan", config, "--hw", "h100", "--gpus", "64", "--batch", "64", "--seq", "8192")
    out = invoke(*args).stdout
    assert "none fits" in out
    # every pipeline up to 64 stages was tried, uneven over the 126 blocks but 1 and 2: 405B
    # parameters x 16 B (Adam, mixed precision) / 64 GPUs = 101 GB a GPU before activations,
    # past 85 GB at any depth, so none fits, and no recomputation can fit it: until 0.9.0 the
    # last line read "to fit: --recompute selective or full keeps fewer activations". Psi =
    # 126 x (2 x 16384^2 + 2 x 16384 x 1024 + 3 x 16384 x 53248 + 2 x 16384) + 2 x 128256 x
    # 16384 + 16384 = 405,853,388,800; ZeRO-3 over 64: 16 Psi / 64 = 101,463,347,200 B, and
    # the 1 GB workspace allowance: 102.5 GB; the H100's 85,017,493,504 B: 85.0 GB
    assert out.splitlines()[-2].endswith("; without activations, at least 102.5 GB)")
    assert out.splitlines()[-1] == (
        "no recomputation fits 64 GPUs: the weights, gradients, optimizer states and workspace "
        "alone need 102.5 GB a GPU or more, past the 85.0 GB; more GPUs divide them further")
    for recompute in ("selective", "full"):
        out = invoke(*args, "--recompute", recompute).stdout
        assert "recompute" not in out.splitlines()[-1]
    data = json.loads(invoke(*args, "--format", "json").stdout)
    assert data["counts"][0]["fitting"] == 0
    assert data["counts"][0]["least_without_activations_bytes"] == 101_463_347_200 + 10**9


def test_a_plan_where_activations_alone_do_not_fit_points_to_recomputation(invoke):
    """Llama-2-7B at seq 16384 on 8 H100s, data parallel only: ZeRO-3 keeps 16 Psi / 8 =
    16 x 6,738,415,616 / 8 = 13,476,831,232 B of weights, gradients and optimizer states, and
    the 1 GB workspace: 14,476,831,232 B, which fits 85 GB; the activations (about 32 blocks x
    37.5 s b h bytes at s b h = 16384 x 4096, 80 GB) do not, so recomputation is the way, and
    with --recompute full a layout fits (each block keeps its input, 2 s b h = 134 MB)."""
    args = ("plan", LLAMA, "--hw", "h100", "--gpus", "8", "--batch", "8", "--seq", "16384",
            "--tp", "1", "--pp", "1")
    out = invoke(*args).stdout
    assert out.splitlines()[-1] == (
        "to fit: --recompute selective or full keeps fewer activations (recompute none here)")
    assert "without activations, at least 14.5 GB" in out
    data = json.loads(invoke(*args, "--format", "json").stdout)
    assert data["counts"][0]["least_without_activations_bytes"] == 14_476_831_232
    assert data["counts"][0]["least_bytes"] > 85_017_493_504
    fitted = json.loads(invoke(*args, "--recompute", "full", "--format", "json").stdout)
    assert fitted["counts"][0]["fitting"] > 0
    assert fitted["counts"][0]["least_bytes"] is None


def test_plans_progress_is_a_line_then_one_a_quarter(invoke):
    """plan printed a stderr line for every shard it analyzed (44 for Llama-3.1-405B on
    64..2048 GPUs). Llama-2-7B on 8 GPUs at batch 64: tp 1, 2, 4, 8 x micro-batches 1, 2, 4, 8
    and each rank's whole share (64 / dp: 64, 32, 16, 8 where it is past 8) make the distinct
    shards; one line says how many, then one at each quarter of them."""
    result = invoke("plan", str(LLAMA), "--hw", "h100", "--gpus", "8", "--batch", "64", "--seq",
                    "4096")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("plan: ")]
    first, shards = lines[0], int(lines[1].split(" of ")[1].split()[0])
    assert first.endswith(f"over {shards} distinct shards (tp, ep, micro-batch), each shard "
                          f"analyzed once ...")
    assert lines[1:] == [f"plan: {shards * q // 4} of {shards} shards analyzed"
                         for q in (1, 2, 3)]


def test_values_of_a_list_the_model_cannot_take_are_left_out_and_said():
    """Llama-2-7B has 32 blocks and 32 heads: ``--pp 1..64`` on 64 GPUs plans pp 1-32 and says
    64 was left out, where it refused the whole range; ``--tp 3,4`` leaves 3 out (32 heads do
    not split in 3); a list with nothing left, or a lone value, stays one error."""
    from roofline.errors import InputError
    from roofline.output.plan import plan_table

    net, h100 = llama(batch=64, seq=2048), load_hardware("h100")
    plan = plan_layouts(net, h100, (64,), 64, h100_fabric(), tp=(1,), zero=(1,),
                        micro_batch=(1,), pp=(1, 2, 4, 8, 16, 32, 64))
    assert plan.left_out == ("pp 64: a pipeline of 64 stages is deeper than the model's 32 "
                             "transformer blocks",)
    assert {r.layout.pp for r in plan.results} == {1, 2, 4, 8, 16, 32}
    assert ("left out: pp 64: a pipeline of 64 stages is deeper than the model's 32 "
            "transformer blocks") in plan_table(plan).splitlines()
    assert plan.to_dict()["left_out"] == list(plan.left_out)
    plan = plan_layouts(net, h100, (8,), 64, h100_fabric(), tp=(3, 4), pp=(1,), zero=(1,),
                        micro_batch=(1,))
    (out,) = plan.left_out
    assert out.startswith("tp 3: tensor parallelism 3 does not divide heads (32)")
    assert {r.layout.tp for r in plan.results} == {4}
    for pp in ((64,), (48, 64)):
        with pytest.raises(InputError, match="a pipeline of 48 stages|a pipeline of 64 stages"):
            plan_layouts(net, h100, (64,), 64, h100_fabric(), pp=pp)


def test_the_library_plan_counts_adam_as_the_cli_does():
    """``roofline.plan`` is the CLI's plan as a call. Before it, a library user called
    ``analysis.plan.plan_layouts`` with the config.json's optimizer, none, where the CLI counts
    Adam: Mistral-7B on 64 H100s (global batch 1024 x 4096) read optimizer states 0 B and chose
    ZeRO 0. By hand, Psi = 32 x (4096 x (4096 + 2 x 1024) + 4096 x 4096 + 3 x 4096 x 14336 + 2 x
    4096) + 2 x 32000 x 4096 + 4096 = 7,241,732,096 (Mistral's published 7.24 B); Adam's fp32
    states 12 B a parameter, ZeRO-1 over dp 64: 12 Psi / 64 = 1,357,824,768 B."""
    import roofline

    mistral = EXAMPLES / "hf" / "mistral-7b.json"
    result = roofline.plan(mistral, "h100", 64, batch=1024, seq=4096, tp=1, pp=1, zero=1,
                           micro_batch=2)
    best = result.best
    assert best is not None and best.layout.zero == 1 and best.layout.dp == 64
    assert best.memory["optimizer"] == 1_357_824_768
    assert best.memory["weights"] == 2 * 7_241_732_096
    assert result.to_dict()["optimizer"] == "adam"
    # the CLI's text forms read alike: "64", "1", a ZeRO list as text
    same = roofline.plan(mistral, "h100", "64", batch=1024, seq=4096, tp="1", pp=[1],
                         zero="1", micro_batch=2)
    assert same.best is not None and same.best.predicted_step_s == best.predicted_step_s
    with pytest.raises(InputError, match="zero: expected ZeRO stages 0, 1, 2 or 3"):
        roofline.plan(mistral, "h100", 64, batch=1024, seq=4096, zero=[1, 4])
    with pytest.raises(InputError, match="unknown keyword 'seqs'"):
        roofline.plan(mistral, "h100", 64, batch=1024, seqs=4096)


def test_sequence_parallelism_divides_the_final_norm_too():
    """Megatron-LM runs the final layer norm in the sequence-parallel region (the last block's
    output stays split along the sequence; the output layer gathers it): under sequence
    parallelism it takes 1 / tp of its time, as a block's norms do. Until 0.9.0 only the
    blocks' were divided."""
    report = shard_report(llama(batch=8), load_hardware("h100"), Layout(tp=2))
    names = [run.name(c) for run in report.network.layer_runs for c in range(run.count)]
    final = names.index("norm")
    (whole, _), (split, _) = (layer_times(report, sp)[False] for sp in (1, 2))
    # RMSNorm over T h = 4096 x 4096 values (micro-batch 1 of seq 4096), fp16: forward reads
    # and writes 2 B each, 16,777,216 x 4 = 67,108,864 B at 3.35 TB/s, halved
    assert whole[final][0] == pytest.approx(67_108_864 / 3.35e12)
    assert split[final][0] == pytest.approx(whole[final][0] / 2)
    assert split[final][1] == pytest.approx(whole[final][1] / 2)


def test_sequence_parallelism_divides_an_moe_blocks_router():
    """Under sequence parallelism Megatron-Core's MoE layer routes the sequence-parallel hidden
    states: each GPU of the tensor-parallel group scores its own T / tp tokens (its router
    weight marked ``sequence_parallel``). Until 0.9.0 every GPU scored all T."""
    net = load_network(EXAMPLES / "hf" / "mixtral-8x7b.json").with_overrides(
        batch=8, seq=4096, optimizer="adam")
    report = shard_report(net, load_hardware("h100"),
                          Layout(tp=2, dp=4, ep=4, sequence_parallel=True))
    names = [run.name(c) for run in report.network.layer_runs for c in range(run.count)]
    block = names.index("blk.1")
    (whole, _), (split, _) = (layer_times(report, sp)[False] for sp in (1, 2))
    # the router's forward GEMM T x E x h = 4096 x 8 x 4096 in bf16 at the roof: its bytes,
    # A 4096 x 4096 x 2 + B 4096 x 8 x 2 + C 4096 x 8 x 2 = 33,685,504, over 3.35 TB/s, and
    # its softmax over T E = 32,768 values read and written, 2 bytes each: 131,072 B
    router_forward = (33_685_504 + 131_072) / 3.35e12
    # the block's norms and residual adds (SP_KINDS) halve too: T h = 16,777,216 values,
    # RMSNorm 4 B a value twice, the residual adds 6 B twice, forward (no dropout in Mixtral)
    sp_ops = (2 * 4 + 2 * 6) * 16_777_216 / 3.35e12
    assert whole[block][0] - split[block][0] == pytest.approx((router_forward + sp_ops) / 2)


def test_plans_table_says_its_columns_are_the_predicted_steps_parts(invoke):
    """The table's compute, comm and bubble columns are parts of the predicted step (a reader
    could only infer it from compute falling between the roofline and the prediction), and
    compute holds the forward recomputation runs again."""
    args = ("plan", str(EXAMPLES / "hf" / "llama-2-7b.json"), "--hw", "h100", "--gpus", "8",
            "--batch", "8", "--seq", "1024", "--top", "1")
    plain = invoke(*args).stdout
    assert ("fastest layouts that fit (up to 1 per GPU count; compute, comm and bubble: parts "
            "of the predicted step):") in plain
    again = invoke(*args, "--recompute", "full").stdout
    assert ("parts of the predicted step, the forward recomputation runs again in compute):"
            in again)


MIXED = """\
name: mixed
batch: 8
seq: 128
dtype: bf16
mode: train
optimizer: adam
layers:
  - {type: embedding, name: emb, vocab: 1000, dim: 256}
  - {type: transformer, name: dense, hidden: 256, heads: 4, ffn: 1024, gated: true,
     causal: true, norm: rmsnorm, rotary: true}
  - {type: transformer, name: moe, hidden: 256, heads: 4, ffn: 512, gated: true,
     causal: true, norm: rmsnorm, rotary: true, experts: 8, top_k: 2, repeat: 2}
  - {type: linear, name: head, in: 256, out: 1000}
"""


def test_expert_parallelism_beside_dense_blocks():
    """DeepSeek-V3 opens with 3 dense blocks (first_k_dense_replace) before its 58 of experts:
    plan --ep refused it (`block 'blk.1' has 0` experts). Megatron's expert-parallel group
    splits the experts of the blocks that have them; a dense block's FFN stays whole,
    data-parallel. A micro-batch of 1 sequence: T = 128 tokens."""
    net = network_from_yaml(MIXED)
    result = evaluate(net, load_hardware("h100"), Layout(dp=8, ep=4), 8, h100_fabric())
    gemms, _ = result.report.network.expand()
    shapes = {(g.layer, g.pass_): (g.m, g.n, g.k, g.batch_count) for g in gemms}
    # the dense block's gated FFN: T x 2 ffn x h = 128 x 2048 x 256, one GEMM, not split
    assert shapes["dense.ffn_up", "forward"] == (128, 2048, 256, 1)
    # 8 / 4 = 2 local experts, each taking the group's 4 x T k / E = 4 x 128 x 2 / 8 = 128
    # rows; gated: 2 x 512 = 1024 wide
    assert shapes["moe.1.expert_up", "forward"] == (128, 1024, 256, 2)
    # a model with no experts at all is still refused, in words that say why
    with pytest.raises(InputError, match="expert parallelism 2 splits experts; the model's "
                                         "transformer blocks have none"):
        evaluate(llama(batch=8), load_hardware("h100"), Layout(dp=8, ep=2), 8, h100_fabric())


def test_sequence_parallelism_divides_latent_attentions_down_projections():
    """Megatron-Core's MLASelfAttention builds its q and kv down projections whole on every GPU
    (``parallel_mode='duplicated'``) and runs them, and the latent norms, on the
    sequence-parallel hidden states, T / tp tokens (multi_latent_attention.py: "q_compressed:
    [s / TP, b, q_lora_rank]"); the up projections gather the sequence. A block of hidden 256,
    4 heads, q_lora_rank 64, kv_lora_rank 32, rope 8, micro-batch 1 of seq 1024 (T = 1024), bf16
    on an H100 (3.35 TB/s; ridge 989.5 / 3.35 = 295 FLOP/B): under sequence parallelism at tp 2
    its forward loses half of, at the roof, each memory-bound part:
    - qkv_a, T x (64 + 32 + 8) x 256: 2 x 1024 x 104 x 256 = 54,525,952 FLOPs over (1024 x 256
      + 256 x 104 + 1024 x 104) x 2 = 790,528 B (69 FLOP/B, memory-bound);
    - the two latent RMSNorms, T x 64 and T x 32 values, 4 B a value (read and written);
    - the block's two RMSNorms, 4 B, and two residual adds, 6 B, a value of T x 256 (as
      before)."""
    net = network_from_yaml("""
batch: 8
seq: 1024
dtype: bf16
mode: train
optimizer: adam
layers:
  - {type: transformer, name: blk, hidden: 256, heads: 4, ffn: 512, gated: true, causal: true,
     norm: rmsnorm, rotary: true, q_lora_rank: 64, kv_lora_rank: 32, qk_nope_head_dim: 16,
     qk_rope_head_dim: 8, v_head_dim: 16, repeat: 2}
""")
    report = shard_report(net, load_hardware("h100"), Layout(tp=2, dp=1, sequence_parallel=True))
    (whole, _), (split, _) = (layer_times(report, sp)[False] for sp in (1, 2))
    t = 1024
    assert 2 * t * 104 * 256 / 790_528 < 295
    latent = (790_528 + 4 * t * 64 + 4 * t * 32) / 3.35e12
    block_ops = (2 * 4 + 2 * 6) * t * 256 / 3.35e12
    assert whole[0][0] - split[0][0] == pytest.approx((latent + block_ops) / 2)
