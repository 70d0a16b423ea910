"""Batch norm and residual adds as layer types, and the ResNet-50 example with them: parameters
against torchvision's published count, op bytes by hand."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.model.network import load_network, network_from_yaml

EXAMPLES = Path(__file__).parent.parent / "examples"
_BLOCK = """input: {channels: 16, height: 8, width: 8}
layers:
  - {type: conv2d, name: a, out_channels: 32, kernel: 3, stride: 2, padding: 1}
  - {type: batchnorm, name: a.bn}
  - {type: conv2d, name: s, branch: true, in_channels: 16, height: 8, width: 8, out_channels: 32, kernel: 1, stride: 2}
  - {type: batchnorm, name: s.bn, branch: true}
  - {type: add, name: add, activation: relu}
"""


def test_resnet50_parameters_equal_torchvisions():
    # torchvision.models.resnet50: num_params 25,557,032 (its model card), of which the batch
    # norms' scales and shifts are 2 x 26,560 = 53,120
    net = load_network(EXAMPLES / "resnet50.yaml")
    assert net.parameters == 25_557_032
    bn = sum(layer.parameters for layer in net.layers if type(layer).__name__ == "BatchNorm")
    assert bn == 53_120


def test_resnet50_ops_include_batch_norm_and_residual_adds():
    net = load_network(EXAMPLES / "resnet50.yaml")
    kinds = Counter((op.pass_, op.kind) for op in net.ops())
    # 53 batch norms (the stem, 3 per block x 16 blocks, 4 shortcuts), 16 residual adds
    assert kinds["forward", "batchnorm"] == 53
    assert kinds["backward", "batchnorm-backward"] == 53
    assert kinds["forward", "residual"] == 16
    assert kinds["backward", "residual-backward"] == 16
    # ReLUs: the stem's, 2 per block inside and 1 after each add: 1 + 16 x 3
    assert kinds["forward", "relu"] == 49
    inference = net.with_overrides(mode="inference")
    assert not [op for op in inference.ops() if op.kind == "batchnorm"]  # folded


def test_batch_norm_and_add_bytes():
    # batch 4, fp16; the map after the stride-2 convolution is 32 x 4 x 4 = 512 values per
    # image, 2048 in all
    net = network_from_yaml("batch: 4\ndtype: fp16\nmode: train\n" + _BLOCK)
    ops = {(op.layer, op.kind): op for op in net.ops()}
    # forward: read x, write y (2 x 2048 x 2 bytes) + mean and inverse deviation, 2 x 32 fp32
    assert ops["a.bn", "batchnorm"].bytes == 2 * 2048 * 2 + 2 * 32 * 4
    # backward: read dY and x, write dX + the saved statistics read
    assert ops["a.bn", "batchnorm-backward"].bytes == 3 * 2048 * 2 + 2 * 32 * 4
    # add: read both maps, write one; its gradient likewise, where the two paths fork: the
    # block's input, 16 x 8 x 8 = 1024 values per image, 4096 in all (the shortcut's map)
    assert ops["add", "residual"].bytes == 3 * 2048 * 2
    assert ops["add", "residual-backward"].bytes == 3 * 4096 * 2
    # parameters: 32 x 16 x 9 + 32 x 16 + 2 x (32 + 32)
    assert net.parameters == 4608 + 512 + 128


def test_resnet50_residual_gradients_are_summed_at_each_blocks_fork():
    # batch 64, fp32: each residual-backward reads two gradients and writes one (12 bytes a
    # value) over the block's input. Identity blocks: the add's own map. The four first blocks
    # fork at the previous stage's output: res2.1 at the pool's 64 x 56 x 56, res3.1 at
    # 256 x 56 x 56, res4.1 at 512 x 28 x 28, res5.1 at 1024 x 14 x 14
    net = load_network(EXAMPLES / "resnet50.yaml")
    grads = {op.layer: op.bytes for op in net.ops() if op.kind == "residual-backward"}
    forks = {"res2.1.add": 64 * 56 * 56, "res3.1.add": 256 * 56 * 56,
             "res4.1.add": 512 * 28 * 28, "res5.1.add": 1024 * 14 * 14}
    for name, fork in forks.items():
        assert grads[name] == 64 * 12 * fork, name
    # the others: the stage's map, 256 x 56 x 56 ... 2048 x 7 x 7
    assert grads["res2.2.add"] == grads["res2.3.add"] == 64 * 12 * 256 * 56 * 56
    assert grads["res5.3.add"] == 64 * 12 * 2048 * 7 * 7
    assert len(grads) == 16


def test_branch_batch_norm_reads_the_branch_and_leaves_the_chain():
    net = network_from_yaml("batch: 4\ndtype: fp16\nmode: inference\n" + _BLOCK +
                            "  - {type: conv2d, name: next, out_channels: 8, kernel: 1}\n")
    names = [layer.name for layer in net.layers]
    assert net.layers[names.index("s.bn")].shape == (32, 4, 4)
    assert net.layers[names.index("next")].in_channels == 32


def test_batch_norm_needs_a_feature_map():
    with pytest.raises(InputError, match="normalizes a feature map"):
        network_from_yaml("batch: 4\ndtype: fp16\nlayers:\n  - {type: batchnorm}\n")
