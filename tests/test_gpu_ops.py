"""Non-GEMM ops on a GPU (analysis.gpu_ops): streaming kernels at 88% of the DRAM bandwidth plus
a launch each, fused attention at its authors' published rates. Every expected time below is
worked by hand from the cited figures, never taken from the code."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from roofline.analysis.gpu_ops import fa3_tflops
from roofline.analysis.report import analyze
from roofline.hardware.catalog import load_hardware
from roofline.hardware.spec import HardwareSpec
from roofline.model.network import network_from_yaml
from roofline.model.ops import Op
from roofline.output.times import time_lines

LAUNCH = 0.9e-6     # NVIDIA, "Getting Started with CUDA Graphs": 3.8 - 2.9 us per kernel
FRACTION = 0.88     # an A100 80GB SXM streaming kernel: 1.80 of 2.04 TB/s (Nsight Compute 88%)


def _attention(hw: str, causal: bool = False, seq: int = 2048, batch: int = 8,
               dtype: str = "fp16", mode: str = "inference", heads: int = 16,
               hidden: int = 2048, phase: str = "prefill"):
    net = network_from_yaml(
        f"batch: {batch}\ndtype: {dtype}\nmode: {mode}\nseq: {seq}\n"
        + (f"phase: {phase}\n" if mode == "inference" else "")
        + f"layers:\n  - {{type: transformer, hidden: {hidden}, heads: {heads}, "
          f"causal: {str(causal).lower()}}}\n")
    report = analyze(net, load_hardware(hw))
    return report, [r for r in report.ops if r.op.kind.startswith("flash-attention")]


def test_elementwise_op_on_an_a100_streams_at_88_percent_plus_a_launch():
    # ReLU over 2^26 fp16 values: reads 2 B and writes 2 B each = 268,435,456 B.
    # 268,435,456 / (0.88 x 2039e9) = 149.60 us, + 0.9 us launch = 150.50 us
    # (the roof: 268,435,456 / 2039e9 = 131.65 us)
    elements = 2**26
    hw = load_hardware("a100-sxm4-80gb")
    from roofline.analysis.gpu_ops import predict_op

    op = Op("OP1", "fc1", "forward", "relu", elements, 4 * elements)
    p = predict_op(op, hw, "fp16", 312e12, 2039e9)
    assert p.basis == "streaming"
    assert p.time_s == pytest.approx(0.9e-6 + 268_435_456 / (0.88 * 2039e9), rel=1e-12)
    assert p.time_s == pytest.approx(150.50e-6, rel=1e-4)


def test_a_convolutions_bias_and_a_sparse_layers_are_kernels_of_their_own_on_a_gpu():
    # torch's CUDA conv2d runs cuDNN, then output.add_(bias) (Convolution.cpp, ConvBackend::
    # Cudnn): a kernel. A 3x3 convolution of 8 x 64 x 56 x 56 to 64 channels (padding 1) in
    # fp16: 8 x 64 x 56 x 56 = 1,605,632 outputs, read and written at 2 B: 6,422,528 B;
    # on an A100: 0.9 us + 6,422,528 / (0.88 x 2039e9) = 4.479 us, basis streaming
    text = ("batch: 8\ndtype: fp16\nmode: inference\n"
            "input: {channels: 64, height: 56, width: 56}\nlayers:\n"
            "  - {type: conv2d, out_channels: 64, kernel: 3, padding: 1, bias: true}\n")
    report = analyze(network_from_yaml(text), load_hardware("a100-sxm4-80gb"))
    (bias,) = [r for r in report.ops if r.op.kind == "bias"]
    assert bias.op.bytes == 6_422_528
    assert bias.predicted_basis == "streaming"
    assert bias.predicted_time_s == pytest.approx(0.9e-6 + 6_422_528 / (0.88 * 2039e9))
    assert bias.predicted_time_s == pytest.approx(4.4793e-6, rel=1e-4)
    # a sparse layer (no GEMM before its bias): 512 x 128 outputs, 262,144 B in fp16:
    # 0.9 us + 262,144 / (0.88 x 2039e9) = 1.046 us
    sparse = ("batch: 512\ndtype: fp16\nmode: inference\nlayers:\n"
              "  - {type: linear, in: 100000, out: 128, input_nnz: 75, bias: true}\n")
    report = analyze(network_from_yaml(sparse), load_hardware("a100-sxm4-80gb"))
    (bias,) = [r for r in report.ops if r.op.kind == "bias"]
    assert (bias.op.bytes, bias.predicted_basis) == (262_144, "streaming")
    assert bias.predicted_time_s == pytest.approx(1.0461e-6, rel=1e-4)


def test_a_linear_bias_is_added_in_its_gemms_epilogue_on_a_gpu():
    # linear 1024 -> 4096 with a bias, batch 512, fp16, trained: forward GEMM, bias add over
    # 512 x 4096 values (read 2 B, write 2 B each: 8,388,608 B), backward bias sum and GEMMs.
    # On an A100 torch's addmm adds the bias in cuBLASLt's epilogue: no kernel, 0 s, basis
    # gemm-epilogue; the roof still counts the unfused pass, 8,388,608 / 2039e9 = 4.114 us.
    # The bias gradient (a sum over 512 rows: reads 512 x 4096 x 2 B = 4,194,304 B; its 4096
    # sums are left out, as the layer counts it) is torch's reduce kernel (analysis.gpu_reduce):
    # 4-column vectors, blocks 32 x 4 threads, the 4 warps splitting the rows (512 >= 64), 32
    # blocks; 128 rows a thread (< 256: no split across blocks), 32 rounds of 4 loads at
    # 0.2 us after a first load of 1.05 us, one wave on 108 SMs: 0.9 + 1.05 + 6.4 = 8.35 us (its
    # stream 2.338 us; an H100 took 8.41 us for 512 x 4096 bf16)
    text = ("batch: 512\ndtype: fp16\nmode: train\nlayers:\n"
            "  - {type: linear, in: 1024, out: 4096, bias: true}\n")
    report = analyze(network_from_yaml(text), load_hardware("a100-sxm4-80gb"))
    (bias,) = [r for r in report.ops if r.op.kind == "bias"]
    assert bias.op.bytes == 8_388_608
    assert (bias.predicted_time_s, bias.predicted_basis) == (0.0, "gemm-epilogue")
    assert bias.time_s == pytest.approx(8_388_608 / 2039e9)
    (grad,) = [r for r in report.ops if r.op.kind == "bias-backward"]
    assert grad.op.bytes == 4_194_304
    assert grad.predicted_basis == "reduce-kernel"
    assert grad.predicted_time_s == pytest.approx(8.35e-6)
    assert "biases added in their GEMM's epilogue" in " ".join(time_lines(report))
    # on a CPU datasheet entry the same op keeps its roof (no op model there)
    cpu = analyze(network_from_yaml(text.replace("fp16", "bf16")),
                  load_hardware("xeon-platinum-8480plus"))
    (cpu_bias,) = [r for r in cpu.ops if r.op.kind == "bias"]
    assert cpu_bias.predicted_basis == "roofline" and cpu_bias.predicted_time_s > 0


def test_reduction_and_tiny_ops_pay_the_launch():
    # A layernorm over 1024 fp16 values: 4096 B; 4096 / (0.88 x 2039e9) = 2.28 ns: the launch,
    # 0.9 us, is nearly all of it (the roof would say 2 ns)
    net = network_from_yaml("batch: 1\ndtype: fp16\nmode: inference\nlayers:\n"
                            "  - {type: norm, dim: 1024}\n")
    report = analyze(net, load_hardware("a100-sxm4-80gb"))
    (op,) = report.ops
    assert op.op.bytes == 4096
    assert op.predicted_time_s == pytest.approx(0.9e-6 + 4096 / (0.88 * 2039e9), rel=1e-12)
    assert op.time_s == pytest.approx(4096 / 2039e9)


def test_flash_attention_3_forward_head_dim_128_seq_2k_on_h100_at_the_published_rate():
    # FlashAttention-3 (Shah et al. 2024), figure "Attention forward speed, head dim 128
    # (H100 80GB SXM5)", no mask: 625 TFLOP/s at seq 2k. Batch 8, 16 heads of 128:
    # FLOPs = 4 x (8 x 16) x 2048 x 2048 x 128 = 274,877,906,944
    # time = 0.9 us + 274,877,906,944 / 625e12 = 0.9 us + 439.80 us = 440.70 us
    # (bytes: Q, K, V, O = 4 x 8 x 2048 x 2048 x 2 B = 268 MB at 0.88 x 3350 GB/s = 91 us: less)
    assert fa3_tflops("forward", 128, 2048, causal=False) == 625
    _, (attn,) = _attention("h100-sxm5-80gb")
    flops = 4 * (8 * 16) * 2048 * 2048 * 128
    assert attn.op.flops == flops == 274_877_906_944
    assert attn.predicted_basis == "flash-attention-3"
    assert attn.predicted_time_s == pytest.approx(0.9e-6 + flops / 625e12, rel=1e-12)
    assert attn.predicted_time_s == pytest.approx(440.70e-6, rel=1e-4)


def test_flash_attention_on_h100_pcie_keeps_h100_sxm5s_share_of_peak():
    # 625 / 989.5 = 63.16% of the SXM5's peak; H100 PCIe's fp16 peak from its entry
    hw = load_hardware("h100-pcie-80gb")
    _, (attn,) = _attention("h100-pcie-80gb")
    share = 625 / 989.5
    flops = 274_877_906_944
    expected = 0.9e-6 + flops / (share * hw.peak_flops_per_s("fp16"))
    assert attn.predicted_time_s == pytest.approx(expected, rel=1e-12)


def test_flash_attention_2_on_an_a100_at_its_best_published_share():
    # FlashAttention-2 (Dao 2023), section 1: "up to 73% of the theoretical max throughput in
    # the forward pass, and up to 63% ... in the backward pass" (A100). Rule: 73% of 312
    # TFLOP/s = 227.76 TFLOP/s forward, 63% = 196.56 backward, at every shape.
    # Head dim 128, seq 2k, batch 8, 16 heads: 274,877,906,944 / 227.76e12 = 1206.9 us, + 0.9 us
    _, (attn,) = _attention("a100-sxm4-80gb")
    assert attn.predicted_basis == "flash-attention-2"
    expected = 0.9e-6 + 274_877_906_944 / (0.73 * 312e12)
    assert attn.predicted_time_s == pytest.approx(expected, rel=1e-12)
    assert attn.predicted_time_s == pytest.approx(1207.8e-6, rel=1e-4)
    # its backward, 2.5x the FLOPs (687,194,767,360) at 63%: 3496.1 us + 0.9 us
    _, (_, back) = _attention("a100-sxm4-80gb", mode="train")
    assert back.op.kind == "flash-attention-backward" and back.op.flops == 687_194_767_360
    assert back.predicted_time_s == pytest.approx(0.9e-6 + 687_194_767_360 / (0.63 * 312e12),
                                                  rel=1e-12)


def test_published_rates_interpolate_in_log2_and_clamp():
    # causal head dim 128: 521 at 2k, 579 at 4k; seq 3072 is log2(1.5) = 0.58496 of the way:
    # 521 + 0.58496 x 58 = 554.93
    assert fa3_tflops("forward", 128, 3072, True) == pytest.approx(
        521 + math.log2(1.5) * 58, rel=1e-12)
    # no mask, seq 2k: head dim 64 gives 460, 128 gives 625; head dim 96: 460 + 0.58496 x 165
    assert fa3_tflops("forward", 96, 2048, False) == pytest.approx(
        460 + math.log2(1.5) * 165, rel=1e-12)
    # clamped at the published ends: seq 32k reads 16k's figure, head dim 32 reads 64's
    assert fa3_tflops("forward", 128, 32768, False) == 648
    assert fa3_tflops("forward", 32, 512, False) == 333
    # backward: the unmasked figures only (head dim 128, 2k: 501), 256 clamped to 128
    assert fa3_tflops("backward", 128, 2048, False) == 501
    assert fa3_tflops("backward", 256, 16384, False) == 561
    # a causal backward loses to the mask what the causal forward does: head dim 128, 2k,
    # 501 x 521 / 625 = 417.6; head dim 64, 512: 272 x 197 / 333 = 160.9
    assert fa3_tflops("backward", 128, 2048, True) == pytest.approx(501 * 521 / 625, rel=1e-12)
    assert fa3_tflops("backward", 64, 512, True) == pytest.approx(272 * 197 / 333, rel=1e-12)


def test_training_step_charges_the_backward_at_the_backward_figure():
    # causal Llama-style block on H100, seq 4k, batch 2, 32 heads of 128 (hidden 4096):
    # forward FLOPs 4 x 64 x 4096^2 x 128 / 2 = 274,877,906,944 at 579 TFLOP/s (causal, 4k);
    # backward 10 x 64 x 4096^2 x 128 / 2 = 687,194,767,360 at 542 (unmasked figure, 4k) x
    # 579 / 638 (the causal forward's share of the unmasked one at 4k) = 491.9
    _, ops = _attention("h100-sxm5-80gb", causal=True, seq=4096, batch=2, mode="train",
                        heads=32, hidden=4096)
    forward, backward = ops
    assert forward.predicted_time_s == pytest.approx(0.9e-6 + 274_877_906_944 / 579e12)
    assert backward.predicted_time_s == pytest.approx(
        0.9e-6 + 687_194_767_360 / (542e12 * 579 / 638))


def test_decode_attention_streams_the_kv_cache():
    # decode: one query row against 2048 keys: no published figure: basis streaming, bytes at
    # 88% of the bandwidth plus a launch
    _, (attn,) = _attention("h100-sxm5-80gb", phase="decode", causal=True)
    assert attn.predicted_basis == "streaming"
    assert attn.predicted_time_s == pytest.approx(0.9e-6 + attn.op.bytes / (0.88 * 3350e9))


def test_other_architectures_fall_back_to_the_gemm_models_sustained_share():
    # T4 (Turing): no published FlashAttention figure: the fitted Tensor-Core share, 0.863, of
    # its 65 TFLOP/s fp16 peak, times the share of its 1.59 GHz boost it holds under a long
    # GEMM load (its entry's sustained clock, 0.9 GHz): 0.9 / 1.59 = 0.5660; fp32 on an H100:
    # the CUDA-core share, 0.868, of 67 TFLOP/s taken at the 1.83 GHz its Tensor-Core figures
    # assume rather than the 1.98 of NVIDIA's FP32 figure (no sustained clock in the entry)
    t4 = load_hardware("t4")
    _, (attn,) = _attention("t4", seq=512, batch=1)
    flops = 4 * 16 * 512 * 512 * 128
    assert attn.predicted_basis == "gemm-sustained"
    assert attn.predicted_time_s == pytest.approx(
        0.9e-6 + max(flops / (0.863 * 0.9 / 1.59 * t4.peak_flops_per_s("fp16")),
                     attn.op.bytes / (0.88 * t4.bandwidth_bytes_per_s)))
    _, (attn32,) = _attention("h100-sxm5-80gb", dtype="fp32")
    assert attn32.predicted_basis == "gemm-sustained"
    assert attn32.predicted_time_s == pytest.approx(
        0.9e-6 + 274_877_906_944 / (0.868 * 67e12 * 1.83 / 1.98))


def test_a_permuted_copy_runs_at_the_offset_rate_not_drams():
    # GPT-2's head split copied by torch.matmul: 8 x 1024 x 12 x 64 = 6,291,456 values read and
    # as many written, 12,582,912 values, 25,165,824 B in bf16 (50,331,648 B in fp32).
    # H100 SXM5: 132 SMs at its 1.98 GHz CUDA-core clock, 3.35 TB/s at 0.88:
    #   bf16 offsets 12,582,912 / (1.9 x 132 x 1.98e9 = 4.96584e11) = 25.339 us
    #        DRAM    25,165,824 / (0.88 x 3.35e12) = 8.537 us  -> 0.9 + 25.339 = 26.239 us
    #   fp32 offsets 12,582,912 / (1.6 x 132 x 1.98e9 = 4.18176e11) = 30.090 us
    #        DRAM    50,331,648 / 2.948e12 = 17.073 us          -> 0.9 + 30.090 = 30.990 us
    # T4: 40 SMs at the 0.9 GHz it holds (no vector clock), 320 GB/s:
    #   fp16 offsets 12,582,912 / (1.9 x 40 x 0.9e9 = 6.84e10) = 183.96 us
    #        DRAM    25,165,824 / (0.88 x 320e9) = 89.37 us      -> 0.9 + 183.96 = 184.86 us
    from roofline.analysis.gpu_ops import predict_op

    values = 2 * 8 * 1024 * 12 * 64
    assert values == 12_582_912
    for hw, dtype, size, expected in (("h100-sxm5-80gb", "bf16", 2, 26.239e-6),
                                      ("h100-sxm5-80gb", "fp32", 4, 30.990e-6),
                                      ("t4", "fp16", 2, 184.86e-6)):
        spec = load_hardware(hw)
        op = Op("OP1", "attn", "forward", "aten.clone", 0, values * size, strided=True)
        p = predict_op(op, spec, dtype, spec.peak_flops_per_s(dtype),
                       spec.bandwidth_bytes_per_s)
        assert p.basis == "strided-copy"
        assert p.time_s == pytest.approx(expected, rel=2e-4)
        # the same copy of operands laid out alike is a stream
        run = predict_op(Op("OP1", "attn", "forward", "aten.clone", 0, values * size), spec,
                         dtype, spec.peak_flops_per_s(dtype), spec.bandwidth_bytes_per_s)
        assert run.basis == "streaming"
        assert run.time_s == pytest.approx(
            0.9e-6 + values * size / (0.88 * spec.bandwidth_bytes_per_s))


def test_a_captured_softmax_backward_is_two_kernels_on_a_gpu():
    # GPT-2's attention probabilities, 8 x 12 x 1024 x 1024 = 100,663,296 bf16 values: the
    # backward reads the gradient and the output and writes the input gradient, 3 x 2 B a value
    # = 603,979,776 B. torch's CUDA softmax backward multiplies grad by output into a temporary
    # (one such pass), then runs its kernel on the temporary and the output (another):
    # 2 x (0.9 us + 603,979,776 / (0.88 x 3.35e12) = 204.88 us) = 411.55 us on an H100 SXM5
    from roofline.analysis.gpu_ops import predict_op

    spec = load_hardware("h100-sxm5-80gb")
    nbytes = 3 * 2 * 8 * 12 * 1024 * 1024
    assert nbytes == 603_979_776
    args = (spec, "bf16", spec.peak_flops_per_s("bf16"), spec.bandwidth_bytes_per_s)
    two = predict_op(Op("OP1", "attn", "backward", "aten._softmax_backward_data", 0, nbytes),
                     *args)
    assert two.time_s == pytest.approx(2 * (0.9e-6 + nbytes / (0.88 * 3.35e12)))
    assert two.time_s == pytest.approx(411.55e-6, rel=1e-4)
    assert two.basis == "streaming" and two.terms["kernels"] == 2
    # a model.yaml layer's softmax backward says nothing of the framework: one kernel
    one = predict_op(Op("OP1", "attn", "backward", "softmax-backward", 0, nbytes), *args)
    assert one.time_s == pytest.approx(0.9e-6 + nbytes / (0.88 * 3.35e12))


def test_a_cpu_keeps_ops_at_their_roof():
    report, (attn,) = _attention("xeon-platinum-8380", dtype="fp32")
    assert attn.predicted_basis == "roofline" and attn.predicted_time_s == attn.time_s
    assert report.to_dict()["op_prediction"] is None


def test_outputs_state_each_ops_basis():
    report, _ = _attention("h100-sxm5-80gb")
    data = report.to_dict()
    assert data["op_prediction"]["dram_fraction"] == 0.88
    assert data["op_prediction"]["launch_s"] == 0.9e-6
    assert data["op_prediction"]["basis"] == "published"
    assert {op["predicted_basis"] for op in data["ops"]} == {"flash-attention-3", "streaming"}
    totals = data["totals"]
    assert totals["predicted_time_s"] == pytest.approx(
        totals["predicted_gemm_time_s"] + totals["predicted_op_time_s"])
    assert totals["predicted_op_time_s"] == pytest.approx(
        sum(op["predicted_time_s"] for op in data["ops"]))
    text = "\n".join(time_lines(report))
    assert "88% of DRAM bandwidth plus 900 ns launch each (published)" in text
    assert "FlashAttention-3's published H100 rates" in text


def test_html_page_shows_each_ops_prediction_and_basis():
    from roofline.output.html import report_fragment
    from roofline.units import seconds

    report, (attn,) = _attention("h100-sxm5-80gb")
    page = report_fragment(report)
    assert "ops predicted: other ops at 88% of DRAM bandwidth" in page
    assert seconds(attn.predicted_time_s) in page  # 441 us, in the op's predicted cell


def test_the_published_figures_are_the_papers_labels():
    # FlashAttention-3 (arXiv:2407.08608v2) Figure 5(e), forward, head dim 256, no mask: the
    # labels over FlashAttention-3's bars read 482, 627, 707, 736, 746, 756 (1k read 639 from
    # an image transcription until 0.9.0); FlashAttention-2 (arXiv:2307.08691), section 1:
    # "up to 73% ... forward ... up to 63% ... backward"
    from roofline.analysis.attention_rates import FA2_AMPERE_FRACTION, FA3_FIGURES

    (e,) = [c for c in FA3_FIGURES if (c.pass_, c.head_dim, c.causal) == ("forward", 256, False)]
    assert e.tflops == (482, 627, 707, 736, 746, 756)
    assert e.source == "arXiv:2407.08608v2, Figure 5(e)"
    assert FA2_AMPERE_FRACTION == {"forward": 0.73, "backward": 0.63}


def test_a_captured_layer_norm_backward_is_torchs_two_kernels():
    # torch's CUDA layer norm backward (layer_norm_kernel.cu) runs a dX kernel (dY, X read, dX
    # written: the op's three tensors, each row passed through the SM 5 times over the op's 3)
    # and then the weight's and bias's gradients, reading dY and X again (2/3 of the bytes).
    # 8192 x 1024 bf16: 3 x 2 x 8,388,608 = 50,331,648 B; on an H100 SXM5 the dX kernel
    # max(50,331,648 / (0.88 x 3.35e12) = 17.07 us, 5/3 x 50,331,648 / (11.5 x 132 x 1.98e9)
    # = 27.91 us), then 2/3 x 17.07 = 11.38 us, and two 0.9 us launches: 41.09 us (a lent H100
    # took 59.5 us: bench_gpu_norms.py)
    from roofline.analysis.gpu_ops import predict_op

    spec = load_hardware("h100-sxm5-80gb")
    nbytes = 3 * 2 * 8192 * 1024
    args = (spec, "bf16", spec.peak_flops_per_s("bf16"), spec.bandwidth_bytes_per_s)
    two = predict_op(Op("OP1", "ln", "backward", "aten.native_layer_norm_backward", 0, nbytes),
                     *args)
    assert two.time_s == pytest.approx(41.09e-6, rel=1e-3)
    assert two.terms["kernels"] == 2 and two.basis == "row-passes"
    # the model.yaml kind says nothing of the framework: one kernel, the op's bytes
    one = predict_op(Op("OP1", "ln", "backward", "layernorm-backward", 0, nbytes), *args)
    assert one.time_s == pytest.approx(0.9e-6 + nbytes / (0.88 * 3.35e12))


def test_torchs_layer_norm_passes_each_row_through_the_sm_three_times():
    # torch's vectorized_layer_norm_kernel (one block a row) reads X for the statistics, reads
    # it again and writes Y: 1.5 x the op's bytes through the SMs at 11.5 B per SM and clock.
    # 8192 x 1024 bf16: X and Y 2 x 2 x 8,388,608 = 33,554,432 B. H100 SXM5 (132 SMs, 1.98 GHz
    # vector clock): 0.9 us + 1.5 x 33,554,432 / (11.5 x 132 x 1.98e9) = 0.9 + 16.746 = 17.65 us,
    # above the stream's 33,554,432 / (0.88 x 3.35e12) = 11.38 us (a lent H100 took 20.7 us).
    # An H200 has the same SMs and clock: the same 17.65 us (it took 20.7 us too), where the
    # stream alone said 0.9 + 33,554,432 / (0.88 x 4.8e12) = 8.84 us
    from roofline.analysis.gpu_ops import predict_op

    op = Op("OP1", "ln", "forward", "aten.native_layer_norm", 0, 33_554_432)
    for name in ("h100-sxm5-80gb", "h200-sxm-141gb"):
        spec = load_hardware(name)
        got = predict_op(op, spec, "bf16", spec.peak_flops_per_s("bf16"),
                         spec.bandwidth_bytes_per_s)
        assert got.time_s == pytest.approx(17.65e-6, rel=1e-3)
        assert got.basis == "row-passes"
    # the model.yaml kind says nothing of torch: a stream
    spec = load_hardware("h200-sxm-141gb")
    plain = predict_op(Op("OP1", "ln", "forward", "layernorm", 0, 33_554_432), spec, "bf16",
                       spec.peak_flops_per_s("bf16"), spec.bandwidth_bytes_per_s)
    assert plain.time_s == pytest.approx(8.84e-6, rel=1e-3) and plain.basis == "streaming"


def test_torchs_softmax_forward_works_through_a_rows_values_at_a_rate_set_by_its_width():
    # 8192 rows of 4096 bf16 values, captured (row 4096): 2 x 33,554,432 = 67,108,864 values
    # read and written, at 2.4 per SM and clock on an H100 SXM5's 132 SMs at 1.98 GHz:
    # 67,108,864 / (2.4 x 132 x 1.98e9) = 106.99 us, over the stream's 134,217,728 /
    # (0.88 x 3.35e12) = 45.53 us; plus a 0.9 us launch: 107.89 us (a lent H100 took 104.7 us
    # for half of 16384 x 4096's 209.5: benchmarks/data/h100_live_norms.csv). An H200, the
    # same SMs and clock: the same (it took 208.9 us for 16384 rows)
    from roofline.analysis.gpu_ops import predict_op

    op = Op("OP1", "attn", "forward", "aten._softmax", 0, 134_217_728, row=4096)
    for name in ("h100-sxm5-80gb", "h200-sxm-141gb"):
        spec = load_hardware(name)
        got = predict_op(op, spec, "bf16", spec.peak_flops_per_s("bf16"),
                         spec.bandwidth_bytes_per_s)
        assert got.time_s == pytest.approx(107.89e-6, rel=1e-3) and got.basis == "softmax-rows"
    spec = load_hardware("h100-sxm5-80gb")
    args = (spec, "bf16", spec.peak_flops_per_s("bf16"), spec.bandwidth_bytes_per_s)
    # between the widths timed, linear in log2 of the width: 1448 columns is 2^10.5, halfway
    # from 1024's 4.4 to 2048's 3.1, 3.75: 67,108,864 / (3.75 x 2.61360e11) = 68.47 us + 0.9
    half = predict_op(Op("OP1", "a", "forward", "aten._log_softmax", 0, 134_217_728,
                         row=1448), *args)
    assert half.time_s == pytest.approx(69.37e-6, rel=1e-3)
    # a 50,257-token vocabulary: past 9,216 columns, torch's block kernels at 3.9 values a
    # clock: 67,108,864 / (3.9 x 2.6136e11) = 65.84 us. Its bf16 rows (100,514 B) are too wide
    # for shared memory: the three-pass kernel, 667 rows of which 2 x 132 = 264 held at once,
    # 264 x 100,514 B over half the 50 MiB L2 (26,214,400 B) = 1.0122, (1.0122 - 0.9) / 0.5 =
    # 0.2245 of the re-reads from DRAM: a stream of 1.2245 x 45.53 = 55.75 us, under the rows'
    # 65.84 us: the values' work binds (a lent H100 took 141.4 us for 1,335 rows; 132.5 here)
    wide = predict_op(Op("OP1", "a", "forward", "aten._softmax", 0, 134_217_728, row=50257),
                      *args)
    assert wide.time_s == pytest.approx(0.9e-6 + 67_108_864 / (3.9 * 2.6136e11), rel=1e-3)
    assert wide.basis == "softmax-rows"
    # fp32, the same 667 rows: x = 2.0245, every re-read from DRAM: twice 268,435,456 /
    # (0.88 x 3.35e12) = 2 x 91.06 us = 182.12 us + 0.9 (a lent H100 took 359.9 us for 1,335
    # rows, 2 x 182.1 = 364.2 predicted for them)
    fp32_vocab = predict_op(Op("OP1", "a", "forward", "aten._log_softmax", 0, 268_435_456,
                               row=50257), spec, "fp32", spec.peak_flops_per_s("fp32"),
                            spec.bandwidth_bytes_per_s)
    assert fp32_vocab.time_s == pytest.approx(183.02e-6, rel=1e-3)
    assert fp32_vocab.basis == "softmax-rows" and fp32_vocab.terms["memory_s"] == pytest.approx(
        182.12e-6, rel=1e-3)
    # 100 fp32 rows of 50,257, fewer than the 264 held: 100 x 201,028 B / 26,214,400 = 0.767,
    # no re-read from DRAM: 40,205,600 / (0.88 x 3.35e12) = 13.64 us + 0.9, a stream
    few = predict_op(Op("OP1", "a", "forward", "aten._softmax", 0, 40_205_600, row=50257),
                     spec, "fp32", spec.peak_flops_per_s("fp32"), spec.bandwidth_bytes_per_s)
    assert few.time_s == pytest.approx(14.54e-6, rel=1e-3) and few.basis == "streaming"
    # 16,384 bf16 columns (32 KiB) fit shared memory: read once whatever the L2
    smem = predict_op(Op("OP1", "a", "forward", "aten._softmax", 0, 134_217_728, row=16384),
                      *args)
    assert smem.terms["memory_s"] == pytest.approx(134_217_728 / (0.88 * 3.35e12), rel=1e-6)
    # 128 keys, timed: 4.3 a clock: 67,108,864 / (4.3 x 2.6136e11) = 59.71 us + 0.9
    narrow = predict_op(Op("OP1", "a", "forward", "aten._softmax", 0, 134_217_728, row=128),
                        *args)
    assert narrow.time_s == pytest.approx(60.61e-6, rel=1e-3)
    # fp32 at 1024 columns streams: 268,435,456 / (0.88 x 3.35e12) = 91.06 us, over the row
    # rate's 67,108,864 / (4.4 x 2.6136e11) = 58.36 us
    fp32 = predict_op(Op("OP1", "a", "forward", "aten._softmax", 0, 268_435_456, row=1024),
                      spec, "fp32", spec.peak_flops_per_s("fp32"), spec.bandwidth_bytes_per_s)
    assert fp32.time_s == pytest.approx(91.96e-6, rel=1e-3) and fp32.basis == "streaming"
    # no row (a model.yaml softmax, or one across another dimension): a stream
    plain = predict_op(Op("OP1", "a", "forward", "aten._softmax", 0, 134_217_728), *args)
    assert plain.time_s == pytest.approx(0.9e-6 + 134_217_728 / (0.88 * 3.35e12), rel=1e-3)


def _softmax_rows(path: Path) -> list[tuple[str, str, int, int, float]]:
    """(op, dtype, rows, cols, measured s) of a gpu_measure.py file's softmax and log-softmax
    forward rows at 2^22 values or more (smaller kernels reach neither rate)."""
    import csv

    with open(path, newline="") as f:
        return [(r["op"], r["dtype"], int(r["rows"]), int(r["cols"]), float(r["time_ms"]) * 1e-3)
                for r in csv.DictReader(f) if r["op"] in ("softmax", "log-softmax")
                and int(r["rows"]) * int(r["cols"]) >= 2 ** 22]


def _softmax_ratio(spec: HardwareSpec, op: str, dtype: str, rows: int, cols: int,
                   measured: float) -> float:
    from roofline.analysis.gpu_ops import predict_op

    kind = "aten._softmax" if op == "softmax" else "aten._log_softmax"
    size = 2 if dtype == "bf16" else 4
    got = predict_op(Op("OP1", "a", "forward", kind, 0, 2 * rows * cols * size, row=cols), spec,
                     dtype, spec.peak_flops_per_s(dtype), spec.bandwidth_bytes_per_s)
    return measured / got.time_s


def test_the_softmax_rates_are_the_h100s_bf16_timings_and_hold_where_not_fitted():
    """SOFTMAX_VALUES_PER_SM_CLOCK and SOFTMAX_BLOCK_VALUES_PER_SM_CLOCK recomputed from the lent
    H100's bf16 softmax at 2^23 and 2^26 values (values over the time less a 0.9 us launch, per
    SM at 1.98 GHz; each width's geometric mean): 768-8192 columns from h100_live_norms.csv, the
    others from h100_live_rows.csv (16,384 and 32,768 for the block kernels). Never fitted: the
    H100's fp32 and log-softmax rows, its bf16 50,257 (the three-pass kernel past half the L2)
    and 768 timed again, and every H200 row: measured / predicted."""
    from roofline.analysis.gpu_softmax import (
        SOFTMAX_BLOCK_VALUES_PER_SM_CLOCK,
        SOFTMAX_VALUES_PER_SM_CLOCK,
    )

    data = Path(__file__).parent.parent / "benchmarks" / "data"
    fitted: dict[int, list[float]] = {}
    block: list[float] = []
    checked: dict[str, list[float]] = {}
    for device, name in (("h100", "h100-sxm5-80gb"), ("h200", "h200-sxm-141gb")):
        spec = load_hardware(name)
        for kind in ("norms", "rows"):
            for op, dtype, rows, cols, measured in _softmax_rows(
                    data / f"{device}_live_{kind}.csv"):
                rate = 2 * rows * cols / (measured - LAUNCH) / (132 * 1.98e9)
                if (device, op, dtype) == ("h100", "softmax", "bf16"):
                    if cols in (16384, 32768):
                        block.append(rate)
                        continue
                    if cols < 768 if kind == "rows" else cols <= 8192:
                        fitted.setdefault(cols, []).append(rate)
                        continue
                checked.setdefault(f"{device} {kind}", []).append(
                    _softmax_ratio(spec, op, dtype, rows, cols, measured))

    def geomean(v: list[float]) -> float:
        return math.exp(sum(map(math.log, v)) / len(v))

    assert [(cols, round(geomean(v), 1)) for cols, v in sorted(fitted.items())] == list(
        SOFTMAX_VALUES_PER_SM_CLOCK)
    assert len(block) == 4 and round(geomean(block), 1) == SOFTMAX_BLOCK_VALUES_PER_SM_CLOCK
    # (rows, within 1.25x, lowest, highest)
    summary = {k: (len(v), sum(1 / 1.25 <= r <= 1.25 for r in v), round(min(v), 2),
                   round(max(v), 2)) for k, v in checked.items()}
    assert summary == {"h100 norms": (10, 10, 0.99, 1.22), "h100 rows": (58, 51, 0.69, 1.40),
                       "h200 norms": (20, 20, 0.85, 1.23), "h200 rows": (72, 55, 0.66, 1.64)}


def test_the_softmax_l2_ramp_holds_on_the_sweeps():
    """The three-pass kernel's re-reads past half the L2 (``SOFTMAX_L2_RAMP``, read off the lent
    H100's fp32 sweep at 2^26 values, h100_live_softmax_l2.csv): measured / predicted on that
    sweep, and never fitted, on its bf16 and log-softmax rows and on the H200's sweep (60 MiB of
    L2: the ramp starts at 1.2x the H100's width)."""
    data = Path(__file__).parent.parent / "benchmarks" / "data"
    summary = {}
    for device, name in (("h100", "h100-sxm5-80gb"), ("h200", "h200-sxm-141gb")):
        spec = load_hardware(name)
        for dtype in ("bf16", "fp32"):
            got = [_softmax_ratio(spec, *row) for row in _softmax_rows(
                data / f"{device}_live_softmax_l2.csv") if row[1] == dtype]
            summary[f"{device} {dtype}"] = (len(got), sum(1 / 1.25 <= r <= 1.25 for r in got),
                                            round(min(got), 2), round(max(got), 2))
    assert summary == {"h100 bf16": (26, 26, 0.83, 1.19), "h100 fp32": (24, 22, 0.96, 1.28),
                       "h200 bf16": (26, 20, 0.74, 1.23), "h200 fp32": (24, 10, 0.96, 1.43)}


def test_the_softmax_rate_holds_on_the_steps_profiled_softmax_kernels():
    """Never fitted: torch.profiler's softmax_warp_forward in the lent GPUs' bf16 GPT-2 (8 x 12
    heads x 1024 x 1024 scores) and BERT (16 x 12 x 512 x 512) forward steps
    (benchmarks/data/h1?0_live_steps.json), per call, within 1.25x of the captured softmax's
    prediction: 1.00 / 1.03 on the H100, 0.89 / 0.95 on the H200 (as a stream 1.28 / 1.24 and
    1.63 / 1.61; BERT at 768's rate, before 512 columns were timed: 0.90 / 0.83)."""
    import json
    from pathlib import Path

    from roofline.analysis.gpu_ops import predict_op

    data = Path(__file__).parent.parent / "benchmarks" / "data"
    scores = {"gpt2-forward": (8 * 12 * 1024 * 1024, 1024), "bert-forward": (16 * 12 * 512 ** 2,
                                                                             512)}
    ratios = []
    for device, name in (("h100", "h100-sxm5-80gb"), ("h200", "h200-sxm-141gb")):
        spec = load_hardware(name)
        steps = json.loads((data / f"{device}_live_steps.json").read_text())
        for step in steps:
            if step["dtype"] != "bf16" or step["step"] not in scores:
                continue
            (kernel,) = [k for k in step["top_kernels"] if "softmax_warp_forward" in k["name"]]
            values, row = scores[step["step"]]
            op = Op("OP1", "attn", "forward", "aten._softmax", 0, 2 * values * 2, row=row)
            got = predict_op(op, spec, "bf16", spec.peak_flops_per_s("bf16"),
                             spec.bandwidth_bytes_per_s)
            ratios.append(kernel["s"] / kernel["calls"] / got.time_s)
    assert [round(r, 2) for r in ratios] == [1.00, 1.03, 0.89, 0.95]


def test_the_layer_norm_row_rate_holds_on_liger_kernels_a100_timings():
    """Never fitted, on an architecture the rate never saw: torch.nn.LayerNorm's fp32 forward on
    4096 rows, as Liger-Kernel published it for an A100 SXM4 80GB and an A100 80GB PCIe
    (benchmarks/data/liger_layer_norm.csv). By hand, 4096 x 16384 on the SXM4: 1.5 x
    536,870,912 B / (11.5 x 108 SMs x 1.41e9) = 459.86 us + 0.9 = 460.76 us (it took 506.7 us,
    1.10); a stream alone, 536,870,912 / (0.88 x 2.039e12) + 0.9 = 300.1 us, would say 1.69.
    Every A100 row within 1.25x (0.96-1.15); none as a stream (1.40-1.74)."""
    import csv
    from pathlib import Path

    from roofline.analysis.gpu_ops import predict_op

    spec = load_hardware("a100-sxm4-80gb")
    got = predict_op(Op("OP1", "ln", "forward", "aten.native_layer_norm", 0, 536_870_912), spec,
                     "fp32", spec.peak_flops_per_s("fp32"), spec.bandwidth_bytes_per_s)
    assert got.time_s == pytest.approx(460.76e-6, rel=1e-3) and got.basis == "row-passes"
    data = Path(__file__).parent.parent / "benchmarks" / "data" / "liger_layer_norm.csv"
    ratios, streams = [], []
    with open(data, newline="") as f:
        for row in csv.DictReader(f):
            if not row["entry"].startswith("a100"):
                continue
            spec = load_hardware(row["entry"])
            nbytes = 2 * int(row["rows"]) * int(row["cols"]) * 4
            args = (spec, "fp32", spec.peak_flops_per_s("fp32"), spec.bandwidth_bytes_per_s)
            measured = float(row["median_ms"]) * 1e-3
            ratios.append(measured / predict_op(
                Op("OP1", "ln", "forward", "aten.native_layer_norm", 0, nbytes), *args).time_s)
            streams.append(measured / predict_op(
                Op("OP1", "ln", "forward", "layernorm", 0, nbytes), *args).time_s)
    assert len(ratios) == 10
    assert (round(min(ratios), 2), round(max(ratios), 2)) == (0.96, 1.15)
    assert (round(min(streams), 2), round(max(streams), 2)) == (1.40, 1.74)


def test_a_masked_or_dropout_attention_adds_its_per_score_work():
    # GPT-2's training attention: 8 x 12 heads, 1024 x 1024 scores each, head dim 64, unmasked:
    # scores 8 x 12 x 1024 x 1024 = 100,663,296; forward FLOPs 4 x 64 a score = 25,769,803,776.
    # A mask read for every score adds 0.229 SM clocks a score, dropout 0.264 (fitted on a lent
    # H100, benchmarks/data/h100_live_masks.csv); backward 0.239 and 0.150 (FLOPs 10 x 64 a
    # score). H100 SXM5: 132 SMs x 1.98 GHz = 2.6136e11 SM clocks a second:
    #   forward, masked:          100,663,296 x 0.229 / 2.6136e11 =  88.20 us
    #   forward, masked, dropout: 100,663,296 x 0.493 / 2.6136e11 = 189.88 us
    #   backward, dropout:        100,663,296 x 0.150 / 2.6136e11 =  57.77 us
    # On the lent H100 the mask added 83.8 us forward and dropout 99.4 us more (masks.csv).
    from roofline.analysis.gpu_ops import predict_op
    from roofline.model.ops import AttentionShape

    spec = load_hardware("h100-sxm5-80gb")
    scores = 8 * 12 * 1024 * 1024
    assert scores == 100_663_296
    peak, bw = spec.peak_flops_per_s("bf16"), spec.bandwidth_bytes_per_s

    def time(kind, per_score, masked, dropout):
        shape = AttentionShape(64, 1024, 1024, False, masked, dropout)
        op = Op("OP1", "attn", "forward" if kind == "flash-attention" else "backward", kind,
                per_score * 64 * scores, 4 * scores // 1024 * 64 * 2, shape)
        return predict_op(op, spec, "bf16", peak, bw).time_s

    plain = time("flash-attention", 4, False, False)
    assert time("flash-attention", 4, True, False) - plain == pytest.approx(88.20e-6, rel=1e-3)
    assert time("flash-attention", 4, True, True) - plain == pytest.approx(189.88e-6, rel=1e-3)
    back = time("flash-attention-backward", 10, False, False)
    assert (time("flash-attention-backward", 10, False, True) - back
            == pytest.approx(57.77e-6, rel=1e-3))
    # decode (one query row) streams: nothing added
    shape = AttentionShape(64, 1, 1024, False, True, True)
    op = Op("OP1", "attn", "forward", "flash-attention", 4 * 64 * 1024 * 96, 10**6, shape)
    plain_op = dataclasses.replace(op, attention=AttentionShape(64, 1, 1024, False))
    assert (predict_op(op, spec, "bf16", peak, bw).time_s
            == predict_op(plain_op, spec, "bf16", peak, bw).time_s)


def test_a_mask_that_needs_its_gradient_runs_the_memory_efficient_kernel_on_hopper():
    # T5-style learned bias over every pair, GPT-2's training shape (8 x 12 heads, 1024 x 1024
    # scores, head dim 64): forward 4 x 64 x 100,663,296 = 25,769,803,776 FLOPs at the
    # memory-efficient kernel's 85.2 TFLOP/s (a lent H100: h100_live_masks_repeat.csv):
    # 0.9 us + 302.46 us = 303.36 us (measured there: 307.6 us); with dropout 0.1 also
    # 100,663,296 scores x 0.476 SM clocks / 2.6136e11 = 183.33 us: 486.69 us (488.5 us).
    # The backward, 10 x 64 a score, 64,424,509,440 FLOPs at 80.1: 0.9 + 804.30 = 805.20 us
    # (814.3 us). On an A100 the rules for FlashAttention-2 stand (not measured there).
    from roofline.analysis.gpu_ops import predict_op
    from roofline.model.ops import AttentionShape

    scores = 8 * 12 * 1024 * 1024
    spec = load_hardware("h100-sxm5-80gb")

    def predicted(kind, per_score, dropout, hw=spec):
        shape = AttentionShape(64, 1024, 1024, False, True, dropout, mask_grad=True)
        op = Op("OP1", "attn", "forward" if kind == "flash-attention" else "backward", kind,
                per_score * 64 * scores, 10**6, shape)
        return predict_op(op, hw, "bf16", hw.peak_flops_per_s("bf16"),
                          hw.bandwidth_bytes_per_s)

    forward = predicted("flash-attention", 4, False)
    assert forward.basis == "memory-efficient"
    assert forward.time_s == pytest.approx(303.36e-6, rel=1e-3)
    assert predicted("flash-attention", 4, True).time_s == pytest.approx(486.69e-6, rel=1e-3)
    assert predicted("flash-attention-backward", 10, False).time_s == pytest.approx(
        805.20e-6, rel=1e-3)
    assert predicted("flash-attention", 4, False, load_hardware("a100-sxm4-80gb")).basis == (
        "flash-attention-2")


def test_a_length_off_the_kernels_blocks_computes_its_last_blocks_in_full():
    # ViT-Base's 197 tokens: the forward rounds queries and keys up to 128-row blocks, 256
    # each, so (197 / 256)^2 = 0.5922 of its blocks hold real scores; the backward to 64-row
    # blocks, also 256; at 512 tokens every block is full
    from roofline.analysis.gpu_ops import tile_share
    from roofline.model.ops import AttentionShape

    vit = AttentionShape(64, 197, 197, False)
    assert tile_share(vit, "forward") == pytest.approx((197 / 256) ** 2)
    assert tile_share(vit, "backward") == pytest.approx((197 / 256) ** 2)
    # 320 tokens: 384 in 128-row blocks, exactly 320 in 64-row ones
    assert tile_share(AttentionShape(64, 320, 320, False), "forward") == pytest.approx(
        (320 / 384) ** 2)
    assert tile_share(AttentionShape(64, 320, 320, False), "backward") == 1.0
    assert tile_share(AttentionShape(128, 512, 512, True), "forward") == 1.0


def test_the_backward_rate_goes_on_falling_below_512_tokens_to_128():
    # FlashAttention-3's backward at head dim 64: 272 TFLOP/s at 512, 363 at 1k, 91 a doubling;
    # at 256 tokens 272 - 91 = 181, at 128 and below 272 - 2 x 91 = 90; the forward stays at
    # its 512 figure (333)
    assert fa3_tflops("backward", 64, 256, False) == pytest.approx(181.0)
    assert fa3_tflops("backward", 64, 128, False) == pytest.approx(90.0)
    assert fa3_tflops("backward", 64, 32, False) == pytest.approx(90.0)
    assert fa3_tflops("forward", 64, 256, False) == pytest.approx(333.0)
