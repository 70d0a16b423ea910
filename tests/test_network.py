"""GEMM expansion of model.yaml: numbering, passes and shapes from docs/design.md."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline import InputError, load_network, network_from_yaml

TWO_LAYER = """
batch: 512
dtype: fp16
layers:
  - {type: linear, in: 1024, out: 4096, name: fc1}
  - {type: linear, in: 4096, out: 1000}
"""


def test_two_layer_mlp_gives_mm1_to_mm5_exactly_as_design_md():
    # docs/design.md: MM1 = X.W1, MM2 = H.W2, MM3 = dY.W2^T, MM4 = H^T.dY, MM5 = X^T.dH
    # X: 512x1024, W1: 1024x4096, H: 512x4096, W2: 4096x1000, dY: 512x1000
    gemms = network_from_yaml(TWO_LAYER).gemms()
    got = [(g.name, g.layer, g.pass_, g.m, g.n, g.k) for g in gemms]
    assert got == [
        ("MM1", "fc1", "forward", 512, 4096, 1024),          # X(512x1024) . W1(1024x4096)
        ("MM2", "fc2", "forward", 512, 1000, 4096),          # H(512x4096) . W2(4096x1000)
        ("MM3", "fc2", "backward-data", 512, 4096, 1000),    # dY(512x1000) . W2^T(1000x4096)
        ("MM4", "fc2", "backward-weight", 4096, 1000, 512),  # H^T(4096x512) . dY(512x1000)
        ("MM5", "fc1", "backward-weight", 1024, 4096, 512),  # X^T(1024x512) . dH(512x4096)
    ]


def test_default_layer_names_and_defaults():
    net = network_from_yaml(TWO_LAYER)
    assert net.mode == "train"
    assert [layer.name for layer in net.layers] == ["fc1", "fc2"]


def test_mlp_shorthand_equals_layers():
    short = network_from_yaml("batch: 512\ndtype: fp16\nmlp: [1024, 4096, 1000]")
    assert short.gemms() == network_from_yaml(TWO_LAYER).gemms()


@given(st.lists(st.integers(1, 5000), min_size=2, max_size=40))
def test_training_takes_3n_minus_1_gemms_and_inference_n(widths):
    n = len(widths) - 1
    net = network_from_yaml(f"batch: 8\ndtype: fp32\nmlp: {widths}")
    assert len(net.gemms()) == 3 * n - 1
    assert len(net.with_overrides(mode="inference").gemms()) == n
    assert [g.name for g in net.gemms()] == [f"MM{i}" for i in range(1, 3 * n)]


def test_three_layers_backward_order():
    # n=3: MM1..3 forward; MM4 data fc3, MM5 weight fc3, MM6 data fc2, MM7 weight fc2, MM8 weight fc1
    net = network_from_yaml("batch: 8\ndtype: fp16\nmlp: [16, 32, 64, 8]")
    order = [(g.layer, g.pass_) for g in net.gemms()[3:]]
    assert order == [("fc3", "backward-data"), ("fc3", "backward-weight"),
                     ("fc2", "backward-data"), ("fc2", "backward-weight"),
                     ("fc1", "backward-weight")]


def test_overrides_replace_batch_dtype_mode():
    net = network_from_yaml(TWO_LAYER).with_overrides(batch=1, dtype="bf16", mode="inference")
    assert (net.batch, net.dtype, net.mode) == (1, "bf16", "inference")
    assert [(g.m, g.dtype) for g in net.gemms()] == [(1, "bf16"), (1, "bf16")]


@pytest.mark.parametrize("kwargs, message", [
    ({"batch": 0}, "overrides: batch: expected a positive integer, got 0"),
    ({"dtype": "fp12"}, "overrides: dtype: expected one of"),
    ({"mode": "eval"}, "overrides: mode: expected one of train, inference, got 'eval'"),
])
def test_bad_overrides_are_input_errors(kwargs, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        network_from_yaml(TWO_LAYER).with_overrides(**kwargs)


def test_name_defaults_to_file_stem(tmp_path):
    path = tmp_path / "my-net.yaml"
    path.write_text("batch: 4\ndtype: fp32\nmlp: [8, 8]\n")
    assert load_network(path).name == "my-net"


_DUPLICATE_CASES = [
    # two layers of one name: the advice read "width 10 (a.out, a.in)", two layers as one
    ("[{name: a}, {name: a}]", "layers[1].name: 'a' is also the name of layers[0]"),
    # a name given that a default takes (the second linear's default is fc2)
    ("[{name: fc2}, {}]", "layers[1]: its default name 'fc2' is also the name of layers[0]"),
    # a repeat's copies are a.1 .. a.3: a plain a.2 after or before it meets the second
    ("[{name: a, repeat: 3}, {name: a.2}]",
     "layers[1].name: 'a.2' is also the name of copy 2 of layers[0] ('a', repeat 3)"),
    ("[{name: a.2}, {name: a, repeat: 3}]",
     "layers[1].name: 'a' names its copies a.1 .. a.3, and a.2 is the name of layers[0]"),
    ("[{name: a, repeat: 3}, {name: a, repeat: 2}]",
     "layers[1].name: 'a' is also the name of layers[0], repeated too: both name their copies "
     "a.1, a.2, ..."),
]


@pytest.mark.parametrize("layers, expected", _DUPLICATE_CASES)
def test_a_layer_name_given_twice_is_refused(layers, expected):
    widths = "{type: linear, in: 10, out: 10, "
    text = "batch: 8\ndtype: fp16\nlayers: " + layers.replace("{", widths).replace(", }", "}")
    with pytest.raises(InputError) as caught:
        network_from_yaml(text, "model.yaml")
    assert str(caught.value) == (f"model.yaml: {expected}: layer names must be unique (every "
                                 f"output names a GEMM's layer by it)")


def test_names_that_only_look_alike_are_kept():
    # a plain a beside a's copies a.1 .. a.3; a.4 past them; a.02 and a.x no copy's name
    layers = ", ".join("{type: linear, in: 10, out: 10, name: %s%s}" % (name, repeat)
                       for name, repeat in (("a", ", repeat: 3"), ("a", ""), ("a.4", ""),
                                            ("a.02", ""), ("a.x", "")))
    net = network_from_yaml(f"batch: 8\ndtype: fp16\nlayers: [{layers}]\n", "model.yaml")
    assert [g.layer for g in net.gemms() if g.pass_ == "forward"] == [
        "a.1", "a.2", "a.3", "a", "a.4", "a.02", "a.x"]


_BLOCK = "{type: transformer, hidden: 64, heads: 4, ffn: 256, name: blk"
_INSIDE_CASES = [
    # a block names its parts blk.qkv, blk.attn, ...: a layer of such a name, after or before
    (f"[{_BLOCK}}}, {{type: linear, in: 64, out: 64, name: blk.attn}}]",
     "layers[1].name: 'blk.attn' lies inside the transformer block layers[0] ('blk'), whose "
     "parts are named blk.qkv, blk.attn, ..."),
    (f"[{{type: linear, in: 64, out: 64, name: blk.qkv}}, {_BLOCK}}}]",
     "layers[1].name: 'blk' names a transformer block's parts blk.qkv, blk.attn, ..., and "
     "layers[0] ('blk.qkv') lies inside it"),
    # a repeat's copy k names them blk.k.qkv, ...: inside copy 3 of 4, after or before
    (f"[{_BLOCK}, repeat: 4}}, {{type: linear, in: 64, out: 64, name: blk.3.attn}}]",
     "layers[1].name: 'blk.3.attn' lies inside copy 3 of the transformer block layers[0] "
     "('blk', repeat 4), whose parts are named blk.3.qkv, blk.3.attn, ..."),
    (f"[{{type: linear, in: 64, out: 64, name: blk.3.attn}}, {_BLOCK}, repeat: 4}}]",
     "layers[1].name: 'blk' names the parts of its copies blk.1 .. blk.4 blk.k.qkv, "
     "blk.k.attn, ..., and layers[0] ('blk.3.attn') lies inside copy 3"),
]


@pytest.mark.parametrize("layers, expected", _INSIDE_CASES)
def test_a_name_inside_a_blocks_parts_is_refused(layers, expected):
    """plan gave an item to the layer whose name is the longest its layer begins with, so a
    plain ``blk.3.attn`` took copy 3's attention core (found by the scale work of 0.9.0)."""
    with pytest.raises(InputError) as caught:
        network_from_yaml("batch: 8\nseq: 16\ndtype: fp16\nlayers: " + layers, "model.yaml")
    assert str(caught.value) == (f"model.yaml: {expected}: layer names must be unique (every "
                                 f"output names a GEMM's layer by it)")


def test_a_name_past_a_repeats_copies_or_beside_a_linear_is_kept():
    """Copies 1..4 only: blk.7.attn is no copy's part; a linear layer names no parts."""
    text = ("batch: 8\nseq: 16\ndtype: fp16\nlayers:\n"
            f"  - {_BLOCK}, repeat: 4}}\n  - {{type: linear, in: 64, out: 64, name: blk.7.attn}}\n"
            "  - {type: linear, in: 64, out: 64, name: enc}\n"
            "  - {type: linear, in: 64, out: 64, name: enc.proj}\n")
    assert [run.layer.name for run in network_from_yaml(text).layer_runs][-3:] == [
        "blk.7.attn", "enc", "enc.proj"]
