"""Layers with the same fields are built, analyzed and formatted once (Network.parts, the
analysis and the table's per-shape cells); each must still read as its own layer: its own
GEMM numbers, layer names, and notes. Values worked by hand."""

from __future__ import annotations

from dataclasses import fields

from roofline.analysis.report import analyze
from roofline.hardware.catalog import load_hardware
from roofline.model.gemm import Gemm
from roofline.model.network import network_from_yaml
from roofline.output.report import NOTE_NAMES, listed, report_table
from roofline.output.table import aligned

# four layers of two shapes: fc1 and fc3 alike (1000 -> 1000), fc2 and fc4 alike
_MLP = """
batch: 64
dtype: fp16
layers:
  - {type: linear, in: 1000, out: 1000}
  - {type: linear, in: 1000, out: 1000, activation: none}
  - {type: linear, in: 1000, out: 1000}
  - {type: linear, in: 1000, out: 1000, activation: none}
"""


def test_layers_alike_keep_their_own_names_and_numbers():
    gemms, _ = network_from_yaml(_MLP).expand()
    # forward MM1..MM4 (fc1..fc4), then backward from fc4: data gradient, weight gradient;
    # fc1 has no data gradient (nothing before it has weights): 3 x 4 - 1 = 11 GEMMs
    assert [(g.name, g.layer, g.pass_) for g in gemms] == [
        ("MM1", "fc1", "forward"), ("MM2", "fc2", "forward"), ("MM3", "fc3", "forward"),
        ("MM4", "fc4", "forward"),
        ("MM5", "fc4", "backward-data"), ("MM6", "fc4", "backward-weight"),
        ("MM7", "fc3", "backward-data"), ("MM8", "fc3", "backward-weight"),
        ("MM9", "fc2", "backward-data"), ("MM10", "fc2", "backward-weight"),
        ("MM11", "fc1", "backward-weight")]
    # forward 64 x 1000 x 1000; data gradient 64 x 1000 x 1000; weight gradient 1000^2 x 64
    assert {(g.m, g.n, g.k) for g in gemms if g.pass_ != "backward-weight"} == {
        (64, 1000, 1000)}
    assert {(g.m, g.n, g.k) for g in gemms if g.pass_ == "backward-weight"} == {
        (1000, 1000, 64)}
    assert all(g.flops == 2 * 64 * 1000 * 1000 for g in gemms)
    # fp16: 2 (64 x 1000 + 1000 x 1000 + 64 x 1000) bytes
    assert all(g.bytes == 2 * (64_000 + 1_000_000 + 64_000) for g in gemms)


def test_a_renamed_gemm_keeps_every_other_field():
    g = Gemm("MM1", "fc1", "backward-weight", 1000, 24, 64, "fp16", ("in", "out", "batch"),
             (0, 0, 1), "fp32", True, 3, 0, (1, 1, 1), None, "", 0)
    h = g.renamed("MM9", "fc9", 2)
    assert (h.name, h.layer, h.copy) == ("MM9", "fc9", 2)
    for f in fields(Gemm):
        if f.name not in ("name", "layer", "copy"):
            assert getattr(h, f.name) == getattr(g, f.name), f.name
    assert h == Gemm("MM9", "fc9", "backward-weight", 1000, 24, 64, "fp16",
                     ("in", "out", "batch"), (0, 0, 1), "fp32", True, 3, 2)


def test_the_table_names_every_layer_of_one_shape():
    report = analyze(network_from_yaml(_MLP), load_hardware("a100"))
    text = report_table(report)
    rows = [line.split()[:3] for line in text.splitlines() if line.startswith("MM")]
    assert rows[:4] == [["MM1", "fc1", "fwd"], ["MM2", "fc2", "fwd"], ["MM3", "fc3", "fwd"],
                        ["MM4", "fc4", "fwd"]]
    # 1000 is on the 8-element rule but off the 64-element (128-byte) tier of fp16 on an A100:
    # every layer's width is named in the advice, each layer by its own name
    advice = " ".join(line.strip() for line in text.split("warnings and advice:")[1].split("\n"))
    for layer in ("fc1.in", "fc2.out", "fc3.in", "fc4.out"):
        assert layer in advice


def test_a_note_about_many_gemms_counts_the_rest():
    names = [f"MM{i}" for i in range(1, 31)]
    assert listed(names[:NOTE_NAMES]) == ", ".join(names[:NOTE_NAMES])
    assert listed(names) == ", ".join(names[:NOTE_NAMES]) + f" and {30 - NOTE_NAMES} more"


def test_an_aligned_table_pads_a_short_row():
    assert aligned(("a", "bb", "c"), [("xyz", "1"), ("w", "22", "3")], {0}) == [
        "a    bb  c", "----------", "xyz   1", "w    22  3"]


def test_json_of_layers_alike_is_each_gemm_whole(tmp_path, invoke):
    """The CLI encodes what GEMMs of one shape share once; the text is to_json's, and each
    object is its own GEMM's."""
    import json

    from roofline.output.json import to_json

    model = tmp_path / "alike.yaml"
    model.write_text(_MLP)
    result = invoke("analyze", str(model), "--hw", "a100", "--format", "json")
    report = analyze(network_from_yaml(_MLP, str(model)), load_hardware("a100"))
    data = report.to_dict()
    data["model"] = "alike"
    assert result.stdout == to_json(data) + "\n"
    gemms = json.loads(result.stdout)["gemms"]
    assert [(g["name"], g["layer"]) for g in gemms[:4]] == [
        ("MM1", "fc1"), ("MM2", "fc2"), ("MM3", "fc3"), ("MM4", "fc4")]
    assert all(g["flops"] == 128_000_000 for g in gemms)  # 2 x 64 x 1000 x 1000


def test_a_renamed_op_keeps_every_other_field():
    from roofline.model.ops import AttentionShape, Op

    op = Op("OP3", "blk.attn", "backward", "flash-attention", 10, 20,
            AttentionShape(64, 128, 128, True), follows="linear", strided=True, copy=0)
    assert op.renamed("OP9", "blk.7.attn", 6) == Op(
        "OP9", "blk.7.attn", "backward", "flash-attention", 10, 20,
        AttentionShape(64, 128, 128, True), follows="linear", strided=True, copy=6)


def test_every_bias_op_says_what_product_it_follows():
    # the devices price a bias by the product it follows (a Linear's runs inside its GEMM on a
    # GPU, a convolution's inside it on a CPU): a layer that made one without saying would be
    # priced as a kernel everywhere, silently
    from roofline.model.network import load_network, network_from_dict
    from roofline.model.ops import FOLLOWS

    net = network_from_dict({
        "name": "all", "batch": 2, "dtype": "fp32", "mode": "train", "seq": 8,
        "input": {"channels": 4, "height": 8, "width": 8},
        "layers": [{"type": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1,
                    "bias": True},
                   {"type": "flatten"},
                   {"type": "linear", "in": 256, "out": 64, "bias": True},
                   {"type": "transformer", "hidden": 64, "heads": 4, "ffn": 128,
                    "bias": "all"},
                   {"type": "linear", "in": 64, "out": 32, "input_nnz": 8, "bias": True}]},
        "<test>")
    follows = [(o.layer, o.pass_, o.follows) for o in net.expand()[1]
               if o.kind in ("bias", "bias-backward")]
    assert {f for _, _, f in follows} == set(FOLLOWS)
    gpt2 = load_network("examples/hf/gpt2.json").with_overrides(
        batch=2, mode="train", seq=16, dtype="fp32")
    follows += [(o.layer, o.pass_, o.follows) for o in gpt2.expand()[1]
                if o.kind in ("bias", "bias-backward")]
    assert all(f in FOLLOWS for _, _, f in follows), follows


def test_an_alignment_note_names_a_blocks_part_once(invoke, tmp_path):
    # a transformer block's FFN of 1370 (off the 16-byte rule in fp16): its GEMMs' layers are
    # block1.ffn_up and block1.ffn_down and their dimensions' roles ffn_up.out, ffn_down.in;
    # the note read "block1.ffn_up.ffn_up.out"
    model = tmp_path / "ffn.yaml"
    model.write_text("batch: 4\ndtype: fp16\nseq: 256\nmode: inference\nlayers:\n"
                     "  - {type: transformer, name: block1, hidden: 512, heads: 8, ffn: 1370}\n")
    out = " ".join(invoke("analyze", model, "--hw", "a100").stdout.split())
    assert "dimension 1370 (block1.ffn_up.out, block1.ffn_down.in)" in out
