"""plan on a block repeated 100,000 times costs what its distinct layers cost, and its figures
are the same model's with fewer copies, scaled by hand where that is an identity: every copy's
per-layer times are the same row, bit for bit; a stage's compute and tensor-parallel transfers
are one copy's added once per copy, one after another (here written out as that loop), its
parameters and activations the copies' count times one copy's (integers, exactly). Not a
timing test: what makes it fast is that these hold without walking every copy
(``parallel_times.LayerRows``, ``stage_spans``, ``repeated_sum``)."""

from __future__ import annotations

import pytest

from roofline.analysis.collectives import Fabric
from roofline.analysis.parallel import Layout, evaluate, shard_report, stage_blocks
from roofline.analysis.parallel_shard import split_stages, stage_spans
from roofline.analysis.parallel_times import layer_times, stage_times
from roofline.errors import RooflineError
from roofline.hardware.catalog import load_hardware
from roofline.hardware.links import links
from roofline.model.network import network_from_yaml

BIG, SMALL = 100_000, 8


def model(blocks: int, extra: str = ""):
    return network_from_yaml(f"""
name: repeat-{blocks}
batch: 8
seq: 512
dtype: bf16
mode: train
optimizer: adam
layers:
  - {{type: embedding, vocab: 32000, dim: 256, name: emb}}
  - {{type: transformer, hidden: 256, heads: 4, ffn: 1024, gated: true, norm: rmsnorm,
      causal: true, repeat: {blocks}, name: blk{extra}}}
  - {{type: norm, norm: rmsnorm, dim: 256, name: final_norm}}
  - {{type: linear, in: 256, out: 32000, name: lm_head}}
""")


def loop(value: float, times: int) -> float:
    """``value`` added ``times`` times, one after another from 0, as a list of every copy's
    row is summed."""
    total = 0
    for _ in range(times):
        total = total + value
    return total


LAYOUT = Layout(tp=2, pp=4, dp=1, zero=1, micro_batch=1, sequence_parallel=True)


def test_stages_split_a_huge_repeat_by_hand():
    # emb (0), blk.1 .. blk.100000 (1 .. 100000), final_norm (100001), lm_head (100002); 100,000
    # blocks over 3 stages: 33,334, 33,333, 33,333; the first stage opens with the embedding,
    # the last closes with the norm and the output layer
    assert stage_blocks(BIG, 3) == (33_334, 33_333, 33_333)
    assert stage_spans(model(BIG), 3) == (range(0, 33_335), range(33_335, 66_668),
                                          range(66_668, 100_003))
    small = model(SMALL)  # the same rule, written out index by index: 8 blocks over 3 stages
    assert split_stages(small, 3) == ((0, 1, 2, 3), (4, 5, 6), (7, 8, 9, 10))


def test_every_copy_has_the_same_row_as_a_copy_of_the_small_model():
    big = shard_report(model(BIG), load_hardware("h100"), LAYOUT)
    small = shard_report(model(SMALL), load_hardware("h100"), LAYOUT)
    for sp in (1, 2):
        for key in (False, True):
            rows, update = layer_times(big, sp)[key]
            few, _ = layer_times(small, sp)[key]
            assert len(rows) == BIG + 3 and len(few) == SMALL + 3
            # blk.1, blk.2, blk.50000, blk.100000: the one row of a block, bit for bit
            assert rows[1] == rows[2] == rows[50_000] == rows[BIG] == few[1] == few[SMALL]
            assert rows[0] == few[0] and rows[-1] == few[-1] and rows[-2] == few[-2]
            assert update > 0
            # a stage of 25,000 blocks: one block's figures added 25,000 times in a row
            middle = stage_times(layer_times(big, sp), [range(25_001, 50_001)])[key]
            assert middle[:4] == tuple(loop(value, 25_000) for value in few[1])
            assert middle[0] == pytest.approx(25_000 * few[1][0], rel=1e-12)


def test_a_layout_of_100000_blocks_is_the_8_block_ones_scaled_by_hand():
    h100 = load_hardware("h100")
    fabric = Fabric(links()["nvswitch-h100"], links()["ib-ndr"], 8)
    big = evaluate(model(BIG), h100, LAYOUT, 8, fabric)
    small = evaluate(model(SMALL), h100, LAYOUT, 8, fabric)
    assert big.micro_batches == small.micro_batches == 8
    k, per = BIG // 4, SMALL // 4  # blocks a stage: 25,000 and 2
    for mine, few in ((big.stages, small.stages), (big.predicted_stages,
                                                   small.predicted_stages)):
        b, s = mine[1], few[1]  # a middle stage: blocks only
        # one block's forward, backward and transfers: the small stage's halved (x + x = 2x,
        # exactly), then added once per block of the big one's stage
        for field in ("forward_s", "backward_s", "memory_bound_s", "tp_comm_s"):
            one = getattr(s, field) / per
            assert getattr(b, field) == loop(one, k), field
            assert getattr(b, field) == pytest.approx(k * one, rel=1e-12)
        assert b.p2p_s == s.p2p_s  # a stage's boundaries: one activation each way
        assert b.parameters == k // per * s.parameters
        # 1F1B: stage 1 of 4 keeps min(8, 3) micro-batches of its blocks' activations
        assert b.memory["activations"] == k // per * s.memory["activations"]
        assert b.memory["weights"] == k // per * s.memory["weights"]
    assert big.stages[0].parameters - small.stages[0].parameters == (
        (k - per) * small.stages[1].parameters // per)


def test_a_name_inside_a_copys_parts_is_refused():
    """A plain layer named ``blk.3.attn`` beside a repeat ``blk`` would take copy 3's attention
    core as its own (an item's owner is the longest layer name it begins with: plan gave it to
    the linear layer's row). model.yaml refuses the name, in either order, in one line."""
    layers = ["  - {type: transformer, hidden: 256, heads: 4, ffn: 1024, repeat: 6, name: blk}",
              "  - {type: linear, in: 256, out: 256, name: blk.3.attn}"]
    for order in (layers, layers[::-1]):
        with pytest.raises(RooflineError, match=r"lies inside copy 3") as caught:
            network_from_yaml("name: clash\nbatch: 8\nseq: 512\ndtype: bf16\nlayers:\n"
                              + "\n".join(order) + "\n")
        assert "\n" not in str(caught.value)
