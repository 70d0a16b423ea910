"""Megatron-LM's interleaved pipeline schedule (``--vp``, virtual stages) against hand-worked
figures: Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC21, sec. 2.2.2 (each GPU holds v model chunks; the bubble shrinks by v,
the point-to-point transfers grow by v) and Megatron-Core's ``schedules.py``
(``get_pp_rank_microbatches``: 2 (p - r - 1) + (v - 1) p warm-up chunk forwards on pipeline
rank r, the micro-batch group its default pp; the group must divide the micro-batches)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.analysis.collectives import Fabric
from roofline.analysis.parallel import (
    Layout,
    activation_bytes_per_block,
    evaluate,
    gpu_blocks,
    pipeline_bubble,
    shard_network,
)
from roofline.analysis.parallel_comm import wrap_crosses_nodes
from roofline.analysis.parallel_memory import chunks_in_flight, in_flight
from roofline.analysis.plan import plan_layouts
from roofline.cli import cli
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.hardware.links import links
from roofline.model.network import load_network

LLAMA = Path(__file__).parent.parent / "examples" / "hf" / "llama-2-7b.json"  # 32 blocks


def llama(batch: int):
    return load_network(LLAMA).with_overrides(batch=batch, seq=4096, optimizer="adam")


def fabric() -> Fabric:
    return Fabric(links()["nvswitch-h100"], links()["ib-ndr"], 8)


def pair(vp: int = 2):
    """Llama-2-7B at tp 8, pp 4, dp 1, micro-batch 1 over a global batch of 8: m = 8, each
    stage a node of 8 GPUs; 1F1B and interleaved over ``vp`` chunks a GPU."""
    h100 = load_hardware("h100")
    base = Layout(tp=8, pp=4, dp=1, zero=1, micro_batch=1)
    return (evaluate(llama(8), h100, base, 8, fabric()),
            evaluate(llama(8), h100, Layout(tp=8, pp=4, dp=1, zero=1, micro_batch=1, vp=vp),
                     8, fabric()))


def test_the_bubble_is_narayanans_over_v():
    # p = 4, m = 8, v = 2: the bubble is (p - 1) / v = 1.5 micro-batch times, (p - 1) / (v m)
    # = 3 / 16 of the ideal m; of the step 1.5 / 9.5 = 3 / 19 (1F1B: 3 / 11)
    assert pipeline_bubble(4, 8, 2) == pytest.approx(3 / 19)
    assert pipeline_bubble(4, 8) == pytest.approx(3 / 11)
    plain, interleaved = pair()
    assert interleaved.micro_batches == 8 and interleaved.layout.label.startswith("tp8 pp4 vp2")
    assert interleaved.bubble_fraction == pytest.approx(3 / 19)
    c = interleaved.critical
    assert interleaved.parts["bubble_s"] / (8 * c.microbatch_s) == pytest.approx(3 / 16)
    assert interleaved.pipeline_s == pytest.approx(9.5 * c.microbatch_s)
    # each GPU computes the same blocks' worth (8 of 32): its compute a micro-batch as 1F1B's
    for a, b in zip(plain.stages, interleaved.stages):
        assert b.forward_s + b.backward_s == pytest.approx(a.forward_s + a.backward_s)
    assert plain.pipeline_s == pytest.approx(11 * plain.critical.microbatch_s)


def test_every_chunk_boundary_sends_between_gpus():
    # tp 8, dp 1: a stage a node, so every boundary, and the wrap from GPU 3 back to GPU 0
    # (ranks 24-31 -> 0-7), crosses nodes: T h e = 4096 x 4096 x 2 bytes at 50 GB/s + 14 us.
    # 8 chunks of 4 blocks, chunk c on GPU c mod 4: GPU 0 sends chunks 0 and 4 forward and
    # chunk 4's input gradient back (3 sends), GPUs 1 and 2 two each way (4: twice 1F1B's 2),
    # GPU 3 chunk 3 forward (chunk 7 ends the model) and both back (3)
    send = 33554432 / 5e10 + 14e-6
    plain, interleaved = pair()
    assert [s.p2p_s for s in plain.stages] == pytest.approx([send, 2 * send, 2 * send, send])
    assert [s.p2p_s for s in interleaved.stages] == pytest.approx(
        [3 * send, 4 * send, 4 * send, 3 * send])
    # the step counts m = 8 of the critical GPU's: the last, which runs the output layer
    assert interleaved.critical is interleaved.stages[3]
    assert interleaved.parts["p2p_s"] == pytest.approx(8 * 3 * send)


def test_the_first_stage_keeps_one_and_three_eighths_of_1f1bs_activations():
    # 1F1B: the first stage keeps p = 4 micro-batches of its 8 blocks (32 blocks' worth).
    # Interleaved: Megatron warms up 2 (p - 1) + (v - 1) p = 6 + 4 = 10 chunk forwards and
    # keeps one more, 11 chunks of 4 blocks = 44 blocks' worth: p (1 + (p - 1) / (p v)) =
    # 4 x 11 / 8 = 5.5 micro-batches. The last stage: (v - 1) p + 1 = 5 chunks, 20 blocks:
    # chunk 3 of micro-batches 0-3 and chunk 7 of micro-batch 0, whose backward follows.
    net = llama(1)  # a micro-batch of 1 sequence
    block = shard_network(net, 8).layers[1]
    per_block = activation_bytes_per_block(block, net.step(), "none", 8, False)
    plain, interleaved = pair()
    assert plain.stages[0].memory["activations"] == 32 * per_block
    assert interleaved.stages[0].memory["activations"] == 44 * per_block
    # the head's inputs (the final norm's and the output layer's, T h e = 4096 x 4096 x 2
    # each) sit in chunk 7, one micro-batch deep, as 1F1B keeps them (until 0.9.0 they were
    # counted as the blocks are, 5 / 2 micro-batches' worth: the chunks spread evenly)
    assert (interleaved.stages[3].memory["activations"] - 20 * per_block
            == plain.stages[3].memory["activations"] - 8 * per_block)
    assert in_flight(8, 4, 0, 2) == 11 and in_flight(8, 4, 3, 2) == 5
    assert chunks_in_flight(8, 4, 0, 2) == (7, 4) and chunks_in_flight(8, 4, 3, 2) == (4, 1)
    assert in_flight(4, 4, 0, 2) == 8  # m = p: every chunk of every micro-batch, m v
    assert in_flight(8, 4, 0) == 4 and in_flight(8, 4, 3) == 1  # 1F1B: min(m, p - i)


def test_uneven_chunks_keep_the_chunks_megatron_warms_up():
    # Llama-2-7B's 32 blocks over pp 4 x vp 3 = 12 chunks: 8 of 3 blocks, then 4 of 2. GPU 0
    # holds chunks 0, 4, 8 (3, 3, 2 blocks), GPU 3 chunks 3, 7, 11 (3, 3, 2 and the head).
    # m = 8: GPU 0 warms up 2 (p - 1) + (v - 1) p = 14 chunk forwards and keeps one more, 15,
    # in groups of p a chunk: chunk 0 of micro-batches 0-3, 4 of 0-3, 8 of 0-3, 0 of 4-6: 7 x
    # 3 + 4 x 3 + 4 x 2 = 41 blocks' worth (spread evenly, 15 / 3 x 8 = 40). GPU 3 keeps
    # (v - 1) p + 1 = 9: chunks 3 and 7 of micro-batches 0-3 and chunk 11 of micro-batch 0:
    # 4 x 3 + 4 x 3 + 2 = 26 blocks and the head once (1F1B: 8 blocks and the head)
    assert chunks_in_flight(8, 4, 0, 3) == (7, 4, 4) and chunks_in_flight(8, 4, 3, 3) == (4, 4, 1)
    net, h100 = llama(8), load_hardware("h100")
    block = shard_network(net, 8).layers[1]
    per_block = activation_bytes_per_block(block, llama(1).step(), "none", 8, False)
    plain = evaluate(net, h100, Layout(tp=8, pp=4, dp=1, zero=1, micro_batch=1), 8, fabric())
    three = evaluate(net, h100, Layout(tp=8, pp=4, dp=1, zero=1, micro_batch=1, vp=3), 8,
                     fabric())
    assert three.stages[0].memory["activations"] == 41 * per_block
    assert (three.stages[3].memory["activations"] - 26 * per_block
            == plain.stages[3].memory["activations"] - 8 * per_block)


def test_uneven_chunks_split_as_stages_do():
    # Llama 3 405B's 126 blocks over 16 x 2 chunks: 30 of 4 and 2 of 3; chunk c on GPU c mod
    # 16, so GPUs 14 and 15 run 4 + 3 = 7 and the others 8, as 1F1B's uneven stages
    assert gpu_blocks(126, 16, 2) == (8,) * 14 + (7, 7)
    assert gpu_blocks(10, 2, 2) == (5, 5)  # chunks 3, 3, 2, 2: GPU 0 runs 3 + 2
    assert gpu_blocks(32, 4) == (8, 8, 8, 8)


def test_the_wrap_boundary_crosses_nodes_only_where_its_ranks_do():
    # 8 GPUs a node; the last stage's ranks (pp - 1) stride + j send to rank j
    assert not wrap_crosses_nodes(2, 2, 8)  # ranks 2, 3 -> 0, 1
    assert not wrap_crosses_nodes(4, 2, 8)  # ranks 6, 7 -> 0, 1: one node
    assert not wrap_crosses_nodes(2, 3, 8)  # ranks 3-5 -> 0-2
    assert wrap_crosses_nodes(2, 6, 8)  # ranks 6-11 -> 0-5: 8-11 in node 1
    assert wrap_crosses_nodes(8, 2, 8)  # ranks 14, 15 -> 0, 1


def test_interleaving_needs_a_pipeline_and_enough_blocks_and_micro_batches():
    h100, net = load_hardware("h100"), llama(8)
    with pytest.raises(InputError, match="interleaved pipeline stages"):
        evaluate(net, h100, Layout(tp=8, pp=1, dp=1, vp=2), 8, fabric())
    with pytest.raises(InputError, match="pp x vp = 4 x 16 model chunks are more than the "
                                         "model's 32"):
        evaluate(net, h100, Layout(tp=8, pp=4, dp=1, vp=16), 8, fabric())
    with pytest.raises(InputError, match="must be a multiple of it"):  # m = 6, pp 4
        evaluate(llama(6), h100, Layout(tp=8, pp=4, dp=1, vp=2), 6, fabric())


def test_a_vp_list_leaves_out_what_no_pipeline_takes():
    plan = plan_layouts(llama(8), load_hardware("h100"), (32,), 8, fabric(), tp=[8], pp=[4],
                        micro_batch=[1], zero=[1], vp=[1, 2, 16])
    assert sorted(r.layout.vp for r in plan.results) == [1, 2]
    assert any(text.startswith("vp 16: pp x vp = 4 x 16") for text in plan.left_out)
    assert any("interleaved where vp > 1" in text for text in plan.assumptions)


def test_a_vp_no_split_of_the_batch_runs_is_left_out_not_dropped():
    # 48 sequences over dp 16 in micro-batches of 1: m = 3 a rank, not a multiple of pp 4, so
    # no vp 2 layout runs; the 1F1B ones do, and vp 2 is said, with the rule
    plan = plan_layouts(llama(48), load_hardware("h100"), (64,), 48, fabric(), tp=[1], pp=[4],
                        micro_batch=[1], zero=[1], vp=[1, 2])
    assert sorted(r.layout.vp for r in plan.results) == [1]
    assert plan.left_out == ("vp 2: interleaved stages need the micro-batches a data-parallel "
                             "rank runs to be a multiple of pp",)


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()


BASE = ["plan", str(LLAMA), "--hw", "h100", "--gpus", "32", "--batch", "8", "--seq", "4096",
        "--tp", "8", "--pp", "4", "--micro-batch", "1", "--zero", "1"]


@pytest.mark.parametrize("args, message", [
    (["--pp", "1", "--vp", "2"], "interleaved pipeline stages (--vp 2) split a pipeline"),
    (["--vp", "16"], "pp x vp = 4 x 16 model chunks are more than the model's 32 transformer"),
    (["--batch", "6", "--vp", "2"], "interleaved stages need the micro-batches a data-parallel "
                                    "rank runs to be a multiple of pp"),
    (["--vp", "0"], "Error: --vp: expected a count"),
])
def test_bad_vp_is_one_line(runner, args, message):
    result = runner.invoke(cli, BASE + args)
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1, result.output
    assert message in result.output


def test_the_cli_shows_vp_only_where_it_interleaves(runner):
    plain = runner.invoke(cli, BASE)
    same = runner.invoke(cli, [*BASE, "--vp", "1"])
    assert plain.exit_code == 0 and plain.output == same.output
    assert " vp " not in plain.output and "interleaved" not in plain.output
    both = runner.invoke(cli, [*BASE, "--vp", "1,2"])
    assert "tp8 pp4 vp2 dp1 z1 mb1" in both.output
    assert "interleaved: chunk c on GPU c mod 4; bubble 15.8% = (p - 1) / (v m + p - 1)" \
        in both.output  # 3 / 19
    data = json.loads(runner.invoke(cli, [*BASE, "--vp", "2", "--format", "json"]).stdout)
    (layout,) = data["counts"][0]["layouts"]
    assert layout["vp"] == 2 and layout["stage_blocks"] == [8, 8, 8, 8]
    assert layout["bubble_fraction"] == pytest.approx(3 / 19)
    assert json.loads(runner.invoke(cli, [*BASE, "--format", "json"]).stdout)[
        "counts"][0]["layouts"][0]["vp"] == 1
