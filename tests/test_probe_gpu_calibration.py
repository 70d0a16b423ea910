"""Item 5 of issue 20: a probe on a GPU fits the GPU constants (calibration version 3), and a
saved GPU entry predicts with basis ``calibrated``. Against fake pynvml and torch modules (the
torch path ran once on a real H100: docs/probe.md; its entry is benchmarks/data/
h100_live_probe.yaml, checked in test_a_real_h100_probe_entry_loads_and_predicts)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from roofline.analysis.gpu_gemm import FITTED
from roofline.analysis.gpu_ops import predict_op
from roofline.analysis.predict import basis_of, predict_gemm
from roofline.errors import InputError
from roofline.hardware.spec import HardwareSpec
from roofline.model.gemm import Gemm
from roofline.model.ops import Op
from roofline.output.times import basis_sentence
from roofline.probe import run_probe

HWDB = Path(__file__).parent.parent / "hwdb" / "gpu"


def _a100(calibration: dict | None) -> HardwareSpec:
    data = yaml.safe_load((HWDB / "a100-sxm4-80gb.yaml").read_text())
    if calibration is not None:
        data["calibration"] = calibration
    return HardwareSpec.from_dict(data, "test")


GPU_BLOCK = {"dram_fraction": 0.95, "launch_s": 4e-6, "tensor_core_fraction": 0.9,
             "cuda_core_fraction": 0.8, "min_kernel_s": 6e-6}


def test_probe_on_a_gpu_writes_a_gpu_calibration_and_its_library(fake_gpu):
    result = run_probe(preset="tiny")
    cal = result.measured["gpu"]["calibration"]
    assert cal["version"] == 5
    # the fake torch has no __version__; its GEMMs would be cuBLAS's
    assert cal["library"] == {"name": "torch", "version": "unknown", "blas": "cuBLAS"}
    gpu = cal["gpu"]
    assert gpu["dram_fraction"] == gpu["tensor_core_fraction"] == gpu["cuda_core_fraction"] == 1
    assert gpu["min_kernel_s"] > 0 and gpu["launch_s"] > 0
    # the two small kernels were timed as CUDA-graph replays: a graph of 100 GEMMs (64^3, the
    # plan's) and one of 100 copies (no matmul in it), each replayed, never called eagerly
    assert gpu["timing"] == "graph"
    assert [g.calls for g in fake_gpu.graphs] == [100, 0] and fake_gpu.replays
    entry = result.to_hardware_dict("my-a100")
    assert entry["calibration"] == cal
    spec = HardwareSpec.from_dict(entry, "probe")
    assert spec.calibration is not None and spec.calibration.gpu_ops is not None
    assert spec.calibration.efficiency == {}
    assert basis_of(spec) == "calibrated"
    # the datasheet entry's tiles and L2 came along, so fp16 runs on the Tensor-Core tiles
    assert spec.tiles and spec.llc_mb == 40
    gemm = predict_gemm(Gemm("MM1", "fc", "forward", 4096, 4096, 4096, "fp16"), spec)
    assert gemm.basis == "calibrated" and gemm.terms["tile_m"] in (256.0, 128.0, 64.0)
    assert "calibrated from the probe's measurements of this GPU" in basis_sentence(spec)


def test_a_calibrated_gpu_entry_predicts_ops_from_its_own_constants():
    # ReLU over 2^26 fp16 values (268,435,456 B) on an A100 calibrated at 95% of 2039 GB/s and
    # 4 us a kernel: 4e-6 + 268,435,456 / (0.95 x 2039e9) = 4 us + 138.58 us = 142.58 us
    hw = _a100({"version": 3, "gpu": GPU_BLOCK})
    op = Op("OP1", "fc1", "forward", "relu", 2**26, 4 * 2**26)
    p = predict_op(op, hw, "fp16", 312e12, 2039e9)
    assert p.time_s == pytest.approx(4e-6 + 268_435_456 / (0.95 * 2039e9), rel=1e-12)
    assert p.time_s == pytest.approx(142.58e-6, rel=1e-4)


def test_a_calibrated_gpu_entry_predicts_gemms_with_its_own_constants():
    hw = _a100({"version": 3, "gpu": GPU_BLOCK})
    # 8 x 8 x 8: the fixed time of a kernel the probe timed, 6 us, plus one main-loop
    # iteration of one 64 x 64 tile (and the fitted prologue share of one): 2 x 64 x 64 x 32 =
    # 262,144 FLOP at 0.9 x 312e12 / 108 SMs = 2.6e12 FLOP/s per SM -> 1.008246e-7 s (its
    # loads, 8,192 B at 64 B x 1.41 GHz, 9.08e-8 s, are shorter); operands in L2: no DRAM time;
    # then its C, 128 B, drains at the probe's 0.95 x 2039 GB/s: 6.6084e-11 s
    tiny = predict_gemm(Gemm("MM1", "fc", "forward", 8, 8, 8, "fp16"), hw)
    assert tiny.basis == "calibrated" and tiny.time_s == pytest.approx(
        6e-6 + (1 + FITTED.tile_overhead_iterations) * 262_144 / 2.6e12 + 128 / (0.95 * 2039e9))
    # 8192^3 fp16: 1,099,511,627,776 FLOPs at 0.9 x 312 TFLOP/s = 3.9157 ms; the model's waves
    # (64 x 64 tiles of 128 x 128... over 108 SMs) only add to it: at least that, at most 10% more
    big = predict_gemm(Gemm("MM1", "fc", "forward", 8192, 8192, 8192, "fp16"), hw)
    assert 2 * 8192**3 / (0.9 * 312e12) <= big.time_s <= 1.1 * 2 * 8192**3 / (0.9 * 312e12)


def test_old_calibration_versions_still_load_and_gpu_needs_version_3():
    assert _a100(None).calibration is None
    with pytest.raises(InputError, match="calibration.gpu: a GPU calibration needs calibration "
                                         "version 3"):
        _a100({"version": 2, "gpu": GPU_BLOCK})
    with pytest.raises(InputError, match="dram_fraction: expected a share"):
        _a100({"version": 3, "gpu": GPU_BLOCK | {"dram_fraction": 88}})


def test_a_real_h100_probe_entry_loads_and_predicts():
    """The entry ``roofline probe --quick --save h100-live`` wrote on a lent H100 SXM5 (torch
    2.11.0+cu130; benchmarks/data/h100_live_probe.yaml) loads as a calibrated Hopper entry."""
    path = Path(__file__).parent.parent / "benchmarks" / "data" / "h100_live_probe.yaml"
    hw = HardwareSpec.from_dict(yaml.safe_load(path.read_text()), "file")
    assert basis_of(hw) == "calibrated" and hw.architecture == "Hopper" and hw.gpu.sms == 132
    # ReLU over 2^26 bf16 values (268,435,456 B): its 6.293 us launch plus the bytes at the
    # device copy it measured, 2975 GB/s (its DRAM share 1): 6.293 us + 90.230 us = 96.523 us
    op = Op("OP1", "fc1", "forward", "relu", 2**26, 4 * 2**26)
    p = predict_op(op, hw, "bf16", hw.peak_flops_per_s("bf16"), hw.bandwidth_bytes_per_s)
    assert p.time_s == pytest.approx(6.293e-6 + 268_435_456 / 2975e9, rel=1e-12)
    assert p.time_s == pytest.approx(96.523e-6, rel=1e-4)
    # 8192^3 bf16 at the 696.5 TFLOP/s it measured: at least 1.5786 ms, the waves at most 10% more
    big = predict_gemm(Gemm("MM1", "fc", "forward", 8192, 8192, 8192, "bf16"), hw)
    assert 2 * 8192**3 / 696.5e12 <= big.time_s <= 1.1 * 2 * 8192**3 / 696.5e12


def test_the_graph_timed_h100_entry_adds_the_kernels_own_fixed_time():
    """The entry a method-9 probe saved on a lent H100 (2026-11-27;
    benchmarks/data/h100_live_probe_graph.yaml): its small kernels timed in a CUDA graph, 1.982
    and 1.111 us, not the 12 and 6.8 us each took from Python."""
    path = Path(__file__).parent.parent / "benchmarks" / "data" / "h100_live_probe_graph.yaml"
    hw = HardwareSpec.from_dict(yaml.safe_load(path.read_text()), "file")
    gpu = hw.calibration.gpu_ops
    assert (gpu.timing, gpu.min_kernel_s, gpu.launch_s) == ("graph", 1.982e-06, 1.111e-06)
    assert "timed in a CUDA graph" in basis_sentence(hw)
    # ReLU over 2^26 bf16 values (268,435,456 B): 1.111 us plus the bytes at its measured
    # device copy, 2970.9 GB/s: 1.111 + 90.356 = 91.467 us
    op = Op("OP1", "fc1", "forward", "relu", 2**26, 4 * 2**26)
    p = predict_op(op, hw, "bf16", hw.peak_flops_per_s("bf16"), hw.bandwidth_bytes_per_s)
    assert p.time_s == pytest.approx(1.111e-6 + 268_435_456 / hw.bandwidth_bytes_per_s)
    assert p.time_s == pytest.approx(91.467e-6, rel=1e-3)


def test_a_probed_gpu_runs_fused_attention_at_its_published_rate_not_its_gemm_rate():
    """FlashAttention-3's published rates are of the datasheet peak; the H100 entry the probe
    saved has bf16 697 TFLOP/s (its GEMMs) beside the datasheet's 989.5 in ``theoretical:``.
    Applied to 697, torch's attention on that H100 came out 0.5-0.8 of its measured time."""
    from roofline.analysis.gpu_ops import fa3_tflops
    from roofline.model.ops import AttentionShape

    path = Path(__file__).parent.parent / "benchmarks" / "data" / "h100_live_probe.yaml"
    hw = HardwareSpec.from_dict(yaml.safe_load(path.read_text()), "file")
    # 2 x 16 heads x 8192^2 pairs x 128 x 4 FLOPs, forward, not causal
    flops = 4 * 2 * 16 * 8192 * 8192 * 128
    op = Op("OP1", "attn", "forward", "flash-attention", flops, 2 * 8192 * 4 * 2048 * 2,
            AttentionShape(128, 8192, 8192, False))
    p = predict_op(op, hw, "bf16", hw.peak_flops_per_s("bf16"), hw.bandwidth_bytes_per_s)
    assert p.basis == "flash-attention-3"
    assert p.terms["flop_s"] == pytest.approx(flops / (fa3_tflops("forward", 128, 8192, False)
                                                       * 1e12))


def test_the_timing_of_the_small_kernels_is_read_and_said():
    graph = _a100({"version": 5, "gpu": GPU_BLOCK | {"timing": "graph"}})
    assert graph.calibration.gpu_ops.timing == "graph"
    assert "timed in a CUDA graph: the GPU's own" in basis_sentence(graph)
    old = _a100({"version": 4, "gpu": GPU_BLOCK})  # before version 5: timed from Python
    assert old.calibration.gpu_ops.timing == "eager"
    assert "the host's per-call cost in them" in basis_sentence(old)
    with pytest.raises(InputError, match="timing"):
        _a100({"version": 4, "gpu": GPU_BLOCK | {"timing": "graph"}})
    with pytest.raises(InputError, match="expected one of graph, eager"):
        _a100({"version": 5, "gpu": GPU_BLOCK | {"timing": "wall"}})


def test_hw_show_says_how_the_kernel_constants_were_timed(invoke):
    data = Path(__file__).parent.parent / "benchmarks" / "data"
    graph = invoke("hw", "show", str(data / "h100_live_probe_graph.yaml")).stdout
    eager = invoke("hw", "show", str(data / "h100_live_probe.yaml")).stdout
    assert ("calibration: version 5, through torch 2.11.0+cu130 (cuBLAS): GPU kernel constants "
            "timed in a CUDA graph (the whole block") in graph
    assert "GPU kernel constants timed from Python (the host's time in them)" in eager
