"""A convolution's compulsory traffic is its tensors (input, filter, output), not the unfolded
im2col matrix, and a strided convolution's data gradient costs the forward's FLOPs. Expected
values are computed by hand from the tensor sizes (NVIDIA, *Convolutional Layers User's Guide*:
intensity from the tensors) and, where torch is installed, by torch's FlopCounterMode."""

from __future__ import annotations

import pytest

from roofline.model.network import network_from_yaml


def _conv(spec: str, channels: int, size: int, batch: int = 64, mode: str = "train",
          stem: bool = True):
    # a 1x1 stem in front gives the convolution an earlier weighted layer (its data gradient)
    stem_layer = (f"  - {{type: conv2d, name: stem, out_channels: {channels}, kernel: 1}}\n"
                  if stem else "")
    net = network_from_yaml(f"batch: {batch}\ndtype: fp16\nmode: {mode}\n"
                            f"input: {{channels: {channels}, height: {size}, width: {size}}}\n"
                            f"layers:\n{stem_layer}  - {{name: c, {spec}}}\n")
    return {g.pass_: g for g in net.gemms() if g.layer == "c"}


def test_res2_3x3_forward_is_compute_bound_on_its_tensors():
    # res2.1.b: 3x3, 64 -> 64, 56x56, padding 1, batch 64, fp16
    # X = 64 x 64 x 56 x 56 = 12,845,056 elements; W = 64 x 64 x 9 = 36,864; Y = X's size
    # bytes = 2 (12,845,056 + 36,864 + 12,845,056) = 51,453,952
    # FLOPs = 2 x 64 x 56 x 56 x 64 x 576 = 14,797,504,512 -> 287.6 FLOP/B (V100 ridge 139)
    g = _conv("type: conv2d, out_channels: 64, kernel: 3, padding: 1", 64, 56,
              mode="inference")["forward"]
    assert g.bytes_by_operand == {"a": 25_690_112, "b": 73_728, "c": 25_690_112}
    assert g.bytes == 51_453_952
    assert g.flops == 14_797_504_512
    assert g.intensity == pytest.approx(287.58, abs=0.01)


def test_gradients_read_and_write_the_tensors():
    # res3.1.b: 3x3 stride 2 padding 1, 128 -> 128, 56x56 -> 28x28, batch 8, fp16
    # X = 8 x 128 x 56 x 56 = 3,211,264; W = 128 x 128 x 9 = 147,456; Y = dY = 8 x 128 x 28 x 28
    # = 802,816; dX = X's size; dW = W's size
    gemms = _conv("type: conv2d, out_channels: 128, kernel: 3, stride: 2, padding: 1", 128, 56,
                  batch=8)
    x, w, y = 3_211_264, 147_456, 802_816
    assert gemms["forward"].bytes_by_operand == {"a": 2 * x, "b": 2 * w, "c": 2 * y}
    assert gemms["backward-data"].bytes_by_operand == {"a": 2 * y, "b": 2 * w, "c": 2 * x}
    assert gemms["backward-weight"].bytes_by_operand == {"a": 2 * x, "b": 2 * y, "c": 2 * w}


def test_strided_data_gradient_costs_the_forward_flops():
    # every input-output pair is one multiply-add: 2 N.P.Q.K.C.R.S in each pass
    # 8 x 28 x 28 x 128 x 128 x 9 x 2 = 1,849,688,064 (not 4x that)
    gemms = _conv("type: conv2d, out_channels: 128, kernel: 3, stride: 2, padding: 1", 128, 56,
                  batch=8)
    assert {p: g.flops for p, g in gemms.items()} == {
        "forward": 1_849_688_064, "backward-data": 1_849_688_064,
        "backward-weight": 1_849_688_064}


def test_strided_1x1_reads_only_the_input_it_samples():
    # res3.1.shortcut: 1x1 stride 2 on 256 x 56 x 56 -> 512 x 28 x 28: the windows read every
    # other row and column, 256 x 28 x 28 of each image; batch 8: 1,605,632 elements read
    g = _conv("type: conv2d, out_channels: 512, kernel: 1, stride: 2", 256, 56,
              batch=8)["forward"]
    assert g.bytes_by_operand["a"] == 2 * 8 * 256 * 28 * 28
    # its data gradient still writes the whole dX (zeros where no window reads): 8 x 256 x 56^2
    dgrad = _conv("type: conv2d, out_channels: 512, kernel: 1, stride: 2", 256, 56,
                  batch=8)["backward-data"]
    assert dgrad.bytes_by_operand["c"] == 2 * 8 * 256 * 56 * 56


def test_batch_advice_scales_the_tensors():
    # twice the batch: every batch-sized tensor doubles, the filter does not
    g = _conv("type: conv2d, out_channels: 64, kernel: 3, padding: 1", 64, 56,
              mode="inference")["forward"]
    assert g.traffic(g.dims_at_batch(128)) == 2 * (2 * 25_690_112) + 73_728


def test_grouped_convolution_tensors():
    # depthwise 3x3 on 32 x 14 x 14 (padding 1), batch 4: X = Y = 4 x 32 x 196 = 25,088;
    # W = 32 x 1 x 9 = 288; fp16
    g = _conv("type: conv2d, out_channels: 32, kernel: 3, padding: 1, groups: 32", 32, 14,
              batch=4)["forward"]
    assert g.batch_count == 32
    assert g.bytes_by_operand == {"a": 50_176, "b": 576, "c": 50_176}


@pytest.mark.parametrize("stride, dilation, padding", [(2, 1, 1), (3, 2, 2), (1, 2, 0)])
def test_flops_match_torch_for_every_pass(stride, dilation, padding):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    conv = torch.nn.Conv2d(16, 24, 3, stride=stride, padding=padding, dilation=dilation,
                           bias=False, device="meta")
    x = torch.empty(2, 16, 23, 23, device="meta", requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        conv(x).sum().backward()
    counts = counter.get_flop_counts()["Global"]
    gemms = _conv(f"type: conv2d, out_channels: 24, kernel: 3, stride: {stride}, "
                  f"padding: {padding}, dilation: {dilation}", 16, 23, batch=2)
    ours = sum(g.flops for g in gemms.values())
    theirs = sum(v for op, v in counts.items() if "convolution" in str(op))
    assert ours == theirs
    assert gemms["forward"].flops * 3 == theirs


def test_rows_read_match_a_listing_and_stay_quick_on_huge_maps():
    """The rows some window reads, against listing every tap (small maps, every stride,
    padding and dilation), and without listing on a map of 2**40 rows."""
    import itertools

    from roofline.model.layers.conv2d import touched

    for size, k, s, p, d in itertools.product(range(1, 13), range(1, 5), range(1, 5),
                                              range(3), range(1, 3)):
        span = size + 2 * p - d * (k - 1) - 1
        if span < 0:
            continue
        out = span // s + 1
        listed = {o * s - p + r * d for o in range(out) for r in range(k)} & set(range(size))
        assert touched(size, k, s, p, d, out) == len(listed), (size, k, s, p, d)
    huge = 2**40
    assert touched(huge, 1, 2, 0, 1, huge // 2) == huge // 2  # a strided 1x1 reads half
    assert touched(huge, 3, 1, 1, 1, huge) == huge
