"""A repeat kept as one run of copies (issue 25): the same GEMMs, names, numbers and totals as
the copies written out one by one, totals of a million copies worked by hand, and the models
that do not fit or ask for a decode that means nothing refused in one line."""

from __future__ import annotations

import pytest

from roofline.analysis.report import analyze
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.model.network import network_from_yaml
from roofline.model.repeats import EXACT_SUM_ITEMS, MAX_LAYERS

A100 = load_hardware("a100")  # 312 TFLOP/s fp16 dense, 2,039 GB/s: ridge 153.0 FLOP/B
HEAD = "batch: 4\nseq: 16\ndtype: fp16\n"
BLOCK = "{type: transformer, hidden: 64, heads: 4, ffn: 256, name: blk%s}"


def _written_out(copies: int, mode: str) -> str:
    blocks = "".join(f"  - {BLOCK % f'.{c}'}\n" for c in range(1, copies + 1))
    return (HEAD + f"mode: {mode}\nlayers:\n  - {{type: linear, in: 64, out: 64, name: pre}}\n"
            + blocks + "  - {type: linear, in: 64, out: 10, name: head}\n")


def _repeated(copies: int, mode: str) -> str:
    return (HEAD + f"mode: {mode}\nlayers:\n  - {{type: linear, in: 64, out: 64, name: pre}}\n"
            f"  - {BLOCK.replace('}', f', repeat: {copies}}}') % ''}\n"
            "  - {type: linear, in: 64, out: 10, name: head}\n")


@pytest.mark.parametrize("mode", ["train", "inference"])
def test_a_repeat_is_its_copies_written_out(mode):
    """Three blocks as ``repeat: 3`` and as blk.1, blk.2, blk.3: every GEMM and op (names,
    layers, shapes, times) and every total equal; only the copy numbers tell them apart."""
    run = analyze(network_from_yaml(_repeated(3, mode)), A100)
    out = analyze(network_from_yaml(_written_out(3, mode)), A100)
    assert [r.to_dict() for r in run.results] == [r.to_dict() for r in out.results]
    assert [r.to_dict() for r in run.ops] == [r.to_dict() for r in out.ops]
    assert run.totals == out.totals
    assert run.memory == out.memory
    assert run.step == out.step
    assert [r.gemm.copy for r in run.results if r.gemm.layer == "blk.2.qkv"] == [1] * (
        3 if mode == "train" else 1)
    if mode == "train":  # backward walks the copies from the last: blk.3's gradients first
        backward = [r.gemm.layer for r in run.results if r.gemm.pass_ != "forward"]
        assert backward.index("blk.3.ffn_down") < backward.index("blk.1.ffn_down")


def test_the_first_copy_of_a_leading_repeat_has_no_data_gradient():
    """An MLP of four 8 -> 8 layers as one repeat trains with 3n - 1 = 11 GEMMs: the first
    copy has nothing before it to send a gradient to."""
    net = network_from_yaml("batch: 8\ndtype: fp16\nlayers:\n"
                            "  - {type: linear, in: 8, out: 8, repeat: 4}\n")
    gemms = net.gemms()
    assert len(gemms) == 11
    assert [g.name for g in gemms] == [f"MM{i}" for i in range(1, 12)]
    assert [(g.layer, g.pass_) for g in gemms[4:]] == [
        ("fc1.4", "backward-data"), ("fc1.4", "backward-weight"),
        ("fc1.3", "backward-data"), ("fc1.3", "backward-weight"),
        ("fc1.2", "backward-data"), ("fc1.2", "backward-weight"),
        ("fc1.1", "backward-weight")]


def test_a_million_copies_totals_by_hand():
    """linear 1024 -> 1024 at batch 256, fp16, inference, 10**6 copies: each GEMM is
    2 x 256 x 1024 x 1024 = 536,870,912 FLOPs and 2 x (256 x 1024 + 1024 x 1024 + 256 x 1024)
    = 3,145,728 bytes, intensity 170.7 FLOP/B above A100's ridge 153.0: compute-bound at
    536,870,912 / 312e12 s each."""
    net = network_from_yaml("batch: 256\ndtype: fp16\nmode: inference\nlayers:\n"
                            "  - {type: linear, in: 1024, out: 1024, repeat: 1000000}\n")
    report = analyze(net, A100)
    totals = report.totals
    assert totals["flops"] == 536_870_912 * 10**6
    assert totals["bytes"] == 3_145_728 * 10**6
    assert totals["parameters"] == 1024 * 1024 * 10**6
    assert totals["time_s"] == pytest.approx(536_870_912 / 312e12 * 10**6, rel=1e-12)
    assert totals["memory_bound_time_fraction"] == 0
    assert len(report.results) == 10**6
    last = report.results[-1]
    assert (last.gemm.name, last.gemm.layer, last.gemm.copy) == ("MM1000000", "fc1.1000000",
                                                                 999_999)
    # memory: 2 bytes a weight (2,097,152,000,000 B of weights) plus the 1 GB workspace
    assert report.memory.weights == 2 * 1024 * 1024 * 10**6
    assert len(report.network.layers) == 10**6 > EXACT_SUM_ITEMS


def test_the_layer_cap_is_one_line():
    over = MAX_LAYERS + 1
    with pytest.raises(InputError, match=r"layers\[0\]\.repeat: the model expands to "
                                         r"1,048,577 layers or more .* at most 1,048,576"):
        network_from_yaml(f"batch: 1\ndtype: fp16\nlayers:\n"
                          f"  - {{type: linear, in: 8, out: 8, repeat: {over}}}\n")


def test_a_repeat_whose_copies_do_not_chain_is_refused():
    with pytest.raises(InputError, match=r"layers\[0\]\.repeat: 'fc1' takes 64 but gives 32"):
        network_from_yaml("batch: 1\ndtype: fp16\nlayers:\n"
                          "  - {type: linear, in: 64, out: 32, repeat: 2}\n")


def test_the_first_conv_takes_the_input_channels():
    text = ("batch: 1\ndtype: fp16\ninput: {channels: 3, height: 8, width: 8}\nlayers:\n"
            "  - {type: conv2d, in_channels: %d, out_channels: 8, kernel: 3}\n")
    with pytest.raises(InputError, match=r"layers\[0\]\.in_channels: layer 'conv1' takes 4 "
                                         r"channels but the input gives 3"):
        network_from_yaml(text % 4)
    assert network_from_yaml(text % 3).layers[0].in_width == 3


def test_decode_is_refused_where_it_means_nothing():
    mlp = "batch: 1\ndtype: fp16\nmlp: [8, 8]\nphase: decode\n"
    with pytest.raises(InputError, match="phase: decode is an inference phase but the model "
                                         "trains"):
        network_from_yaml(mlp).check()
    with pytest.raises(InputError, match="phase: decode reads a KV cache"):
        network_from_yaml(mlp + "mode: inference\n").check()
    bert = HEAD + "mode: inference\nphase: decode\nlayers:\n  - " + BLOCK % "" + "\n"
    with pytest.raises(InputError, match="phase: decode reads the KV cache a causal "
                                         "transformer keeps, but every block here is "
                                         "bidirectional"):
        network_from_yaml(bert).check()  # an encoder's blocks (causal: false) keep no cache
    llama = bert.replace("ffn: 256,", "ffn: 256, causal: true,")
    network_from_yaml(llama).check()  # causal attention keeps a cache: decode stands


def test_a_generation_needs_attention():
    from roofline.analysis.generation import generate

    mlp = network_from_yaml("batch: 1\ndtype: fp16\nmlp: [8, 8]\n")
    with pytest.raises(InputError, match="generate: a generation decodes against the KV cache"):
        generate(mlp, A100, 8, 4)


def test_layers_are_found_by_name_from_their_runs():
    """``Layers.index_of`` reads a copy's index from its run (pre 0, blk.1 .. blk.5 at 1 .. 5,
    head 6) without naming every copy; ``sole_copies`` says where a repeat's copies are the
    only layers their names begin: what ``parallel_times`` reads each copy's items once by;
    ``runs_in`` gives a range of layers as (stored layer, copies) pieces."""
    layers = network_from_yaml(_repeated(5, "train")).layers
    assert [layers.index_of(n) for n in ("pre", "blk.1", "blk.5", "head")] == [0, 1, 5, 6]
    assert [layers.index_of(n) for n in ("blk", "blk.6", "blk.0", "blk.01", "blk.1.attn")] == [
        None] * 5
    assert layers.sole_copies("blk", 0, 5) == 1 and layers.sole_copies("blk", 2, 3) == 3
    assert layers.sole_copies("blk", 3, 5) is None  # copies 4 .. 8: blk.6 .. blk.8 are none
    assert [(layer.name, n) for layer, n in layers.runs_in(0, 7)] == [
        ("pre", 1), ("blk", 5), ("head", 1)]
    assert [(layer.name, n) for layer, n in layers.runs_in(3, 6)] == [("blk", 3)]
    clash = network_from_yaml(HEAD + "mode: train\nlayers:\n"
                              f"  - {BLOCK.replace('}', ', repeat: 4}') % ''}\n"
                              "  - {type: linear, in: 64, out: 64, name: blk.tail}\n").layers
    assert clash.index_of("blk.tail") == 4 and clash.sole_copies("blk", 0, 4) is None
