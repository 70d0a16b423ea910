"""Alignment flags and batch advice, checked against hand-computed figures."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline import Gemm, load_hardware
from roofline.analysis.alignment import alignment_notes, pad_to
from roofline.analysis.batch import intensity_limit, min_compute_bound_batch
from roofline.hardware.spec import Alignment
from roofline.model.gemm import gemm_intensity


def alignment_warnings(gemm, rule):
    """(every dimension on the 16-byte rule, one sentence per note) as a report shows them."""
    from roofline.output.advice import alignment_text

    notes = alignment_notes(gemm, rule)
    return all(n.tier == "advice" for n in notes), [alignment_text(n) for n in notes]


FP16_V100 = Alignment(multiple=8, preferred=8)
FP16_A100 = Alignment(multiple=8, preferred=64)


def linear_gemm(name, layer, pass_, m, n, k, dtype):
    """A GEMM of a linear layer, made by roofline.layers.Linear (so it carries the layer's
    roles and batch dimensions), with the given M x N x K."""
    from roofline.model.layers import Linear, Step

    def step(batch):
        return Step(batch, None, "train", 2)

    if pass_ == "forward":
        (shape,) = Linear(layer, k, n).forward(step(m))
    elif pass_ == "backward-data":
        shape = Linear(layer, n, k).backward(step(m), data_grad=True)[0]
    else:
        (shape,) = Linear(layer, m, n).backward(step(k), data_grad=False)
    assert (shape.pass_, shape.m, shape.n, shape.k) == (pass_, m, n, k)
    return Gemm(name, layer, pass_, m, n, k, dtype, shape.roles, shape.batch_dims)


def test_pad_to():
    assert pad_to(1002, 8) == 1008  # the example: 1002 -> 1008 for FP16
    assert pad_to(1008, 8) == 1008
    assert pad_to(1, 64) == 64


def test_misaligned_input_is_flagged_with_the_padded_size():
    gemm = linear_gemm("MM1", "fc1", "forward", 512, 4096, 1002, "fp16")
    aligned, warnings = alignment_warnings(gemm, FP16_V100)
    assert not aligned
    assert warnings == ["K=1002 (in) is not a multiple of 8 (best for fp16 Tensor Cores): "
                        "pad to 1008"]


def test_every_misaligned_dimension_is_flagged():
    gemm = linear_gemm("MM4", "fc2", "backward-weight", 1002, 1001, 500, "fp16")
    aligned, warnings = alignment_warnings(gemm, FP16_V100)
    assert not aligned
    assert [w.split(" ")[0] for w in warnings] == ["M=1002", "N=1001", "K=500"]


def test_a100_preference_for_64_is_a_hint_not_a_misalignment():
    gemm = linear_gemm("MM2", "fc2", "forward", 512, 1000, 4096, "fp16")
    aligned, warnings = alignment_warnings(gemm, FP16_A100)
    assert aligned
    assert warnings == ["N=1000 (out): multiples of 64 run best on this device (next: 1024)"]


def test_fp8_alignment_is_a_requirement():
    gemm = linear_gemm("MM1", "fc1", "forward", 8, 24, 100, "fp8")
    aligned, warnings = alignment_warnings(gemm, Alignment(16, 128))
    assert not aligned and "required for fp8" in warnings[-1]


def test_no_rule_means_nothing_to_miss():
    assert alignment_warnings(linear_gemm("MM1", "fc1", "forward", 3, 5, 7, "fp32"), None) == (True, [])


def test_min_batch_for_1024_to_4096_on_v100_is_168():
    # V100 ridge R = 125e12 / 900e9 = 138.89 FLOP/B; a=4096, b=1024, e=2:
    # B >= eRab / (2ab - eR(a+b)) = 2*138.89*4194304 / (8388608 - 2*138.89*5120)
    #   = 1,165,084,444 / 6,966,386 = 167.24 -> 168
    ridge = 125e12 / 900e9
    gemm = linear_gemm("MM1", "fc1", "forward", 8, 4096, 1024, "fp16")
    assert min_compute_bound_batch(gemm, ridge) == 168
    assert gemm_intensity(168, 4096, 1024, "fp16") >= ridge > gemm_intensity(167, 4096, 1024,
                                                                              "fp16")


def test_weight_gradient_has_the_same_threshold_with_batch_as_k():
    ridge = 125e12 / 900e9
    wgrad = linear_gemm("MM5", "fc1", "backward-weight", 1024, 4096, 8, "fp16")
    assert min_compute_bound_batch(wgrad, ridge) == 168


def test_slide_output_layer_cannot_become_compute_bound_on_v100():
    # hidden 128 -> 670,091 outputs in FP16: the limit 2ab/(e(a+b)) = 2*128*670091/(2*670219)
    # = 127.98 FLOP/B, below V100's 138.9, so no batch helps.
    ridge = 125e12 / 900e9
    gemm = linear_gemm("MM2", "out", "forward", 128, 670_091, 128, "fp16")
    assert intensity_limit(128, 670_091, "fp16") == pytest.approx(127.976, abs=1e-3)
    assert min_compute_bound_batch(gemm, ridge) is None


@given(st.integers(1, 20000), st.integers(1, 20000), st.floats(1.0, 600.0))
def test_min_batch_is_exactly_the_threshold(a, b, ridge):
    gemm = linear_gemm("MM1", "l", "forward", 1, a, b, "fp16")
    batch = min_compute_bound_batch(gemm, ridge)
    if batch is None:
        assert intensity_limit(a, b, "fp16") <= ridge
        assert gemm_intensity(10**9, a, b, "fp16") < ridge
    else:
        assert gemm_intensity(batch, a, b, "fp16") >= ridge
        assert batch == 1 or gemm_intensity(batch - 1, a, b, "fp16") < ridge


@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(1, 10**6))
def test_intensity_rises_with_batch_and_saturates(a, b, batch):
    lower = gemm_intensity(batch, a, b, "fp16")
    higher = gemm_intensity(batch + 1, a, b, "fp16")
    assert higher >= lower
    assert higher < intensity_limit(a, b, "fp16") * (1 + 1e-12)


def test_advice_appears_in_the_report_for_memory_bound_gemms():
    from roofline import analyze, network_from_yaml

    net = network_from_yaml("batch: 8\ndtype: fp16\nmlp: [1024, 4096]")
    report = analyze(net, load_hardware("v100-sxm2-16gb"))
    mm1 = report.results[0]
    assert mm1.bound == "memory"
    assert mm1.min_compute_bound_batch == 168
    assert mm1.advice == ("batch >= 168 makes it compute-bound",)


def test_tile_quantization_nvidia_example():
    # Matrix Multiplication Background guide: with 128x128 tiles a 256x256 output needs 4 tiles,
    # 257x256 needs 6. One SM isolates tile quantization: 65,792 / (6 x 16,384) = 0.669
    from roofline.analysis.quantization import tile_wave_efficiency

    assert tile_wave_efficiency(256, 256, (128, 128), sms=1) == 1.0
    assert tile_wave_efficiency(257, 256, (128, 128), sms=1) == pytest.approx(65_792 / 98_304)


def test_wave_quantization_nvidia_example():
    # 1792x1792 with 256x128 tiles: 7 x 14 = 98 tiles, one wave on A100's 108 SMs, 91% full:
    # 1792 * 1792 / (108 * 256 * 128) = 3,211,264 / 3,538,944 = 0.907
    from roofline.analysis.quantization import tile_wave_efficiency

    assert tile_wave_efficiency(1792, 1792, (256, 128), sms=108) == pytest.approx(0.9074, abs=1e-4)
    # one more row of tiles spills into a nearly empty second wave: 8 x 14 = 112 tiles
    assert tile_wave_efficiency(1793, 1792, (256, 128), sms=108) < 0.5


def test_small_compute_bound_gemm_is_flagged_on_a100():
    # 512 x 512 x 8192 fp16: intensity 2*512*512*8192 / (2*(2*512*8192 + 512*512)) = 248 FLOP/B,
    # above A100's 153; the best tile (64x64) gives 8 x 8 = 64 tiles for 108 SMs:
    # 262,144 / (108 * 4096) = 59% of the tile slots busy
    from roofline import analyze, network_from_yaml

    report = analyze(network_from_yaml("batch: 512\ndtype: fp16\nmlp: [8192, 512]\n"
                                       "mode: inference"), load_hardware("a100-sxm4-80gb"))
    mm1 = report.results[0]
    assert mm1.bound == "compute"
    # the nearest shape that loses less: M = 768 gives 12 x 8 = 96 tiles in one wave,
    # 768 * 512 / (108 * 4096) = 393,216 / 442,368 = 89% (nothing within +-50% reaches 90%)
    assert mm1.warnings == ("tile/wave quantization: best tile 64x64 (64 tiles, 108 SMs, 1 wave) "
                            "keeps 59% of slots busy; nearest shape losing less: "
                            "768 x 512 x 8192 (89%)",)
    assert mm1.quantization.efficiency == pytest.approx(262_144 / 442_368)
    assert mm1.quantization.better == (768, 512, 8192, pytest.approx(393_216 / 442_368))


def test_no_batch_advice_names_the_limit_and_the_ridge():
    from roofline.analysis.batch import batch_advice
    from roofline.output.advice import batch_text

    gemm = linear_gemm("MM2", "out", "forward", 128, 670_091, 128, "fp16")
    advice = batch_advice(gemm, 125e12 / 900e9, None)
    assert advice.batch is None and advice.limit == pytest.approx(128.0, abs=0.05)
    assert batch_text(advice) == (
        "no batch reaches the ridge (138.9): intensity tends to 128.0 FLOP/B; widen the layer")


def test_no_quantization_warning_on_a_cpu_or_a_well_filled_gpu():
    from roofline.analysis.quantization import quantization_of

    big = linear_gemm("MM1", "fc1", "forward", 4096, 4096, 4096, "fp16")
    assert quantization_of(big, None, ()) is None
    assert not quantization_of(big, 108, ((256, 128), (64, 64))).warns


def test_batch_advice_when_a_dimension_is_a_multiple_of_the_batch():
    # A layer whose M = 128 x batch (128 tokens per sample), N = 4096, K = 1024, fp16, V100:
    # the 1024 -> 4096 closed form needs M >= 167.24 tokens (see above), so batch 2 (M = 256)
    # is the first that is compute-bound; batch 1 (M = 128) gives 2*128*4096*1024 /
    # (2*(128*1024 + 1024*4096 + 128*4096)) = 1,073,741,824 / 9,699,328 = 110.7 FLOP/B < 138.9.
    ridge = 125e12 / 900e9
    tokens = Gemm("MM1", "blk", "forward", 128, 4096, 1024, "fp16", ("tokens", "out", "in"),
                  (128, 0, 0))
    assert gemm_intensity(128, 4096, 1024, "fp16") == pytest.approx(110.70, abs=0.01)
    assert min_compute_bound_batch(tokens, ridge) == 2


def test_no_batch_dimension_means_no_batch_advice():
    from roofline.analysis.batch import batch_advice
    from roofline.output.advice import batch_text

    fixed = Gemm("MM1", "x", "forward", 64, 4096, 1024, "fp16")  # nothing grows with the batch
    assert min_compute_bound_batch(fixed, 138.9) is None
    assert batch_text(batch_advice(fixed, 138.9, None)).startswith(
        "its shape does not depend on the batch")


def test_two_batch_dimensions_are_searched():
    # M = N = batch, K = 64, fp16: I(B) = 2*B*B*64 / (2*(64B + 64B + B*B)) = 64B / (128 + B);
    # >= 100 when 64B >= 12800 + 100B: never (limit 64 < 100); >= 32 when 32B >= 4096: B = 128.
    from roofline.analysis.batch import batch_intensity_limit

    square = Gemm("MM1", "x", "forward", 1, 1, 64, "fp16", ("batch", "batch", "k"), (1, 1, 0))
    assert min_compute_bound_batch(square, 32.0) == 128
    assert min_compute_bound_batch(square, 100.0) is None
    assert batch_intensity_limit(square) == pytest.approx(64.0)


def test_batch_advice_cache_key_covers_every_field_of_a_gemms_shape():
    # the advice is shared between GEMMs that differ only in name and place; a new Gemm field
    # that changes the shape must join the key, or two shapes would share one sentence
    from dataclasses import fields

    from roofline.analysis.batch import _SHAPE_FIELDS
    from roofline.model.gemm import Gemm

    place = {"name", "layer", "pass_", "copy"}
    shape = {f.name for f in fields(Gemm) if f.init} - place
    assert set(_SHAPE_FIELDS) == shape
