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
