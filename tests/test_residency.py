"""A step's weights read from DRAM at every use (analysis.residency): which steps, which GEMMs,
and the predictions by hand, on a GPU (the fitted GEMM model) and a calibrated CPU."""

from __future__ import annotations

import pytest
from test_predict import _v2_entry, spec

from roofline.analysis.gpu_gemm import FITTED
from roofline.analysis.predict import predict_gemm
from roofline.analysis.report import analyze
from roofline.analysis.residency import Residency
from roofline.hardware.catalog import load_hardware
from roofline.model.gemm import Gemm
from roofline.model.network import load_network

LLAMA = "examples/hf/llama-2-7b.json"


def _decode(path: str = LLAMA, **overrides):
    return load_network(path).with_overrides(mode="inference", phase="decode", batch=1, seq=2048, **overrides)


def test_a_step_beyond_the_cache_reads_its_weights_from_dram():
    weight = Gemm("MM1", "fc", "forward", 1, 4096, 4096, "fp16", b_operand="weight")
    kv = Gemm("MM2", "attn", "forward", 1, 2048, 128, "fp16", b_operand="kv")
    act = Gemm("MM3", "attn", "forward", 128, 128, 64, "fp16")
    cold, warm = Residency(10**9, 50 * 2**20), Residency(10**6, 50 * 2**20)
    assert cold.from_dram and not warm.from_dram
    assert weight.kept_operands == {"b": 2 * 4096 * 4096}  # B only: A and C just produced
    assert kv.kept_bytes == 2 * 2048 * 128 and act.kept_bytes == 0
    assert not Residency(10**12, None).from_dram  # no cache figure: nothing assumed
    # streamed though it fits (33.6 MB in 50 MiB): what a timing loop would find cached
    assert cold.streams(weight) and not warm.streams(weight) and not cold.streams(act)
    big = Gemm("MM4", "fc", "forward", 1, 4096, 11008, "fp16", b_operand="weight")  # 90 MB
    assert not cold.streams(big)  # beyond the cache: from DRAM in a timing loop too
    with pytest.raises(ValueError, match="b_operand"):
        Gemm("MM1", "fc", "forward", 1, 8, 8, "fp16", b_operand="bias")


def test_llama_decode_on_h100_streams_each_projection_from_hbm():
    # Llama-2-7B keeps 13.5 GB of weights, beyond the H100's 50 MiB L2; its 4096 x 4096 fp16
    # attention output projection (33.6 MB) fits in the L2, and a timing loop would find it
    # there, but the step reads it from HBM: min kernel time + B / (0.9 x 3350 GB/s)
    hw = load_hardware("h100-sxm5-80gb")
    report = analyze(_decode(), hw)
    assert report.residency is not None and report.residency.from_dram
    assert report.residency.kept_bytes > 13e9 and report.residency.cache_bytes == 50 * 2**20
    proj = next(r for r in report.results if r.gemm.layer.endswith("proj"))
    assert (proj.gemm.m, proj.gemm.n, proj.gemm.k) == (1, 4096, 4096)
    assert proj.gemm.b_operand == "weight"
    stream = 4096 * 4096 * 2 / (0.9 * 3350e9)
    assert proj.predicted_time_s == pytest.approx(FITTED.min_kernel_s + stream, rel=1e-3)
    # the same GEMM repeated (what the fitted data timed): resident, faster than HBM allows
    repeated = predict_gemm(proj.gemm, hw).time_s
    assert repeated < FITTED.min_kernel_s + stream
    assert report.to_dict()["residency"] == {"kept_bytes": report.residency.kept_bytes,
                                             "cache_bytes": 50 * 2**20,
                                             "weights_from_dram": True}


def test_a_gpu_gemm_beyond_the_l2_is_unchanged():
    # the 11008-wide FFN GEMMs (90 MB) do not fit in 50 MiB: all their bytes came from HBM
    # already, and nothing is added for the kept weight
    hw = load_hardware("h100-sxm5-80gb")
    g = Gemm("MM1", "ffn", "forward", 1, 4096, 11008, "fp16", b_operand="weight")
    assert predict_gemm(g, hw, weights_from_dram=True).time_s == predict_gemm(g, hw).time_s


def test_a_single_gemm_that_fits_stays_resident():
    # `roofline gemm` (a one-GEMM network): the step keeps its weight and nothing else, which
    # fits in the L2, so repeated steps find it there (a timing loop's view)
    from roofline.analysis.whatif import gemm_report

    report = gemm_report(1, 4096, 4096, "h100-sxm5-80gb", "fp16")
    assert report.residency is not None and not report.residency.from_dram
    g = report.results[0]
    assert g.predicted_time_s == predict_gemm(g.gemm, load_hardware("h100-sxm5-80gb")).time_s


def test_cpu_gemv_of_a_kept_weight_by_hand():
    hw = spec(_v2_entry())  # LLC 1 MiB, 20 GB/s, thin_dram {1: 0.05, 16: 0.2}
    # 1 x 256 x 256 fp32: A 1 KiB, B 256 KiB, C 1 KiB, resident in 1 MiB; B its most
    g = Gemm("MM1", "fc", "forward", 1, 256, 256, "fp32", b_operand="weight")
    warm = predict_gemm(g, hw)
    # repeated: the in-cache thin table at r = 1 (0.1)
    assert warm.time_s == pytest.approx(1e-6 + 2 * 256 * 256 / (0.1e12 * 0.1))
    # B from DRAM: the beyond-the-LLC table at r = 1 (0.05), B's bytes at 20 GB/s
    cold = predict_gemm(g, hw, weights_from_dram=True)
    flop_s = 2 * 256 * 256 / (0.1e12 * 0.05)
    ab_s = 4 * 256 * 256 / 20e9
    assert cold.time_s == pytest.approx(1e-6 + max(flop_s, ab_s))
    assert cold.terms["ab_s"] == pytest.approx(ab_s) and cold.terms["c_s"] == 0


def test_cpu_kept_weight_beyond_the_measured_rows_keeps_the_in_cache_efficiency():
    hw = spec(_v2_entry())
    # M = 64 is beyond the beyond-the-LLC table's rows (1, 16): in-cache efficiency (thin
    # table clamped at 16: 0.4), B's stream as the floor. 64 x 256 x 256: s = 161 is not thin
    # (4 x 64 = 256 = max): squares only, 0.5 + 0.5 log(161/128)/log 4 = 0.5828
    g = Gemm("MM1", "fc", "forward", 64, 256, 256, "fp32", b_operand="weight")
    cold = predict_gemm(g, hw, weights_from_dram=True)
    s = (64 * 256 * 256) ** (1 / 3)
    import math

    eff = 0.5 + 0.5 * math.log(s / 128) / math.log(4)
    flop_s = 2 * 64 * 256 * 256 / (0.1e12 * eff)
    assert cold.time_s == pytest.approx(1e-6 + max(flop_s, 4 * 256 * 256 / 20e9))
    # a kept B that is not most of the working set (a convolution's small weight): only its
    # stream is added, the efficiency is the in-cache one
    small = Gemm("MM2", "conv", "forward", 2048, 16, 64, "fp32", b_operand="weight")
    w, c = predict_gemm(small, hw), predict_gemm(small, hw, weights_from_dram=True)
    assert c.terms["flop_s"] == w.terms["flop_s"]
    assert c.terms["ab_s"] == pytest.approx(4 * 16 * 64 / 20e9)


def test_network_weight_gemms_carry_their_b_operand():
    report = analyze(_decode(), load_hardware("h100-sxm5-80gb"))
    kinds = {r.gemm.layer.rsplit(".", 1)[-1]: r.gemm.b_operand for r in report.results}
    assert kinds["qkv"] == kinds["proj"] == kinds["lm_head"] == "weight"


def test_compare_and_sweep_say_where_the_weights_come_from():
    from roofline.analysis.whatif import compare, sweep

    # the README MLP in inference at batch 1 keeps 16.6 MB of fp16 weights: within an A100's
    # 40 MiB L2, beyond a V100's 6 MiB
    c = compare("examples/mlp-1024-4096-1000.yaml", ["a100-sxm4-80gb", "v100-sxm2-16gb"],
                batch=1, mode="inference").to_dict()
    flags = {d["hardware"]: d["residency"]["weights_from_dram"] for d in c["devices"]}
    assert flags == {"a100-sxm4-80gb": False, "v100-sxm2-16gb": True}
    s = sweep(LLAMA, "h100-sxm5-80gb", [1, 4], mode="inference", phase="decode",
              seq=512).to_dict()
    assert [p["weights_from_dram"] for p in s["points"]] == [True, True]


def test_bench_kept_weights_times_measures_kernels_and_refuses_what_it_cannot(capsys):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import bench_kept_weights as bench
    repeated, cycled = bench.kernels(2, 8, 8, 3, "numpy")  # --measure's own, checked
    assert "over" not in repeated.label and cycled.label.endswith("over 3 weights")
    repeated.run(2)
    cycled.run(4)
    assert bench.within([1.0, 1.3, 0.6, 2.5], 1.25) == 0.25
    assert bench.main(["--hw", "h100-sxm5-80gb"]) == 2  # a GPU: nothing to time here
    assert bench.main(["--hw", "no-such-entry"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


def test_a_weight_gradient_writes_its_gradient_to_dram():
    # dW = X^T dY for a 4096 x 4096 layer over 64 tokens in fp16: C (32 MiB) fits in the
    # H100's 50 MiB L2 with A and B (0.5 MiB each); in a step beyond the L2 the gradient goes
    # to HBM: its DRAM term is C / (0.9 x 3350 GB/s), and the kernel takes at least that
    # after its fixed time
    hw = load_hardware("h100-sxm5-80gb")
    g = Gemm("MM1", "fc", "backward-weight", 4096, 4096, 64, "fp16")
    assert g.kept_operands == {"c": 2 * 4096 * 4096}
    cold = predict_gemm(g, hw, weights_from_dram=True)
    stream = 2 * 4096 * 4096 / (0.9 * 3350e9)
    assert cold.terms["dram_s"] == pytest.approx(stream)
    assert cold.time_s >= FITTED.min_kernel_s + stream
    assert predict_gemm(g, hw).terms["dram_s"] == 0  # repeated: all in the L2
    # on a calibrated CPU: C written at the probe's C passes (3.0) over DRAM, as a C beyond
    # the LLC is; 16 x 64 x 16 fp32 (C 4 KiB) fits in the 1 MiB LLC
    cpu = spec(_v2_entry())
    w = Gemm("MM2", "fc", "backward-weight", 16, 64, 16, "fp32")
    warm, kept = predict_gemm(w, cpu), predict_gemm(w, cpu, weights_from_dram=True)
    assert warm.terms["c_s"] == 0
    assert kept.terms["c_s"] == pytest.approx(3.0 * 4 * 16 * 64 / 20e9)
    assert kept.time_s == pytest.approx(warm.time_s + kept.terms["c_s"])


def test_measure_cycles_a_cpu_weight_that_the_step_reads_from_dram():
    from test_predict import HOST, FakeClock

    from roofline.analysis import measure as measure_mod
    from roofline.kernels.cpu import Kernel
    from roofline.model.network import network_from_dict
    from roofline.output.times import time_lines

    # 8 linear layers of 256 x 256 fp32 (256 KiB each, 2 MiB in all) on a 1 MiB LLC: each
    # GEMM fits (8 x 256 x 256: 272 KiB), the step does not, so each is timed over
    # ceil(2 x 1 MiB / 256 KiB) = 8 weights
    net = network_from_dict({"name": "deep", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 256, "out": 256,
                                         "repeat": 8}]}, "deep.yaml")
    report = analyze(net, spec(_v2_entry()))
    assert report.residency.from_dram
    assert measure_mod.weights_of(report.results[0], report) == 8
    clock, made = FakeClock(), []

    def make(m, n, k, g, dtype, weights=1):
        made.append((m, n, k, g, dtype, weights))
        return Kernel("fake", lambda loops: setattr(clock, "now", clock.now + loops * 1e-4),
                      2.0 * m * n * k * g, "FLOP")

    measured = measure_mod.measure_report(report, None, make, "fake", clock, HOST)
    assert made == [(8, 256, 256, 1, "fp32", 8)]
    assert measured.results[0].to_dict()["measured_weights"] == 8
    assert any("cycled through 8 copies of its weight" in line for line in time_lines(measured))
    assert measure_mod.allocated_bytes(8, 256, 256, 1, "fp32", 8) == 4 * (
        8 * 256 + 8 * 256 * 256 + 8 * 256)


def test_cycled_kernels_check_their_product_and_take_the_next_weight_each_call():
    from roofline.kernels.cpu import cycled_run, shaped_gemm_kernel

    kernel = shaped_gemm_kernel(3, 5, 7, "fp64", weights=4)  # checked against a reference
    assert "over 4 weights" in kernel.label
    kernel.run(9)
    used: list[str] = []
    run = cycled_run(lambda a, b, out: used.append(b), "a", ["b0", "b1", "b2"], None)
    run(2)
    run(4)
    assert used == ["b0", "b1", "b2", "b0", "b1", "b2"]
    same = cycled_run(lambda a, b, out: used.append(b), "a", ["only"], None)
    same(2)
    assert used[-2:] == ["only", "only"]


def test_torch_cycled_kernel_checks_its_product():
    pytest.importorskip("torch")
    from roofline.kernels.torch_cpu import shaped_gemm

    kernel = shaped_gemm(3, 5, 7, 2, "fp32", weights=3)  # batched, checked on its first B
    assert kernel.label.endswith("over 3 weights") and kernel.work == 2.0 * 3 * 5 * 7 * 2
    kernel.run(5)


def test_measure_says_which_gemms_it_timed_repeated_though_the_step_moves_them_in_dram():
    from test_predict import HOST, FakeClock

    from roofline.analysis import measure as measure_mod
    from roofline.kernels.cpu import Kernel
    from roofline.model.network import network_from_dict
    from roofline.output.times import measured_residency_lines

    # training: the forward and data-gradient GEMMs read a weight (cycled), the weight
    # gradients write a gradient (kept C: timed repeated, the one B they read being dY)
    net = network_from_dict({"name": "deep", "batch": 8, "dtype": "fp32", "mode": "train",
                             "layers": [{"type": "linear", "in": 256, "out": 256,
                                         "repeat": 8}]}, "deep.yaml")
    report = analyze(net, spec(_v2_entry()))
    clock = FakeClock()

    def make(m, n, k, g, dtype, weights=1):
        return Kernel("fake", lambda loops: setattr(clock, "now", clock.now + loops * 1e-4),
                      2.0 * m * n * k * g, "FLOP")

    measured = measure_mod.measure_report(report, None, make, "fake", clock, HOST)
    lines = measured_residency_lines(measured)
    assert lines[0].startswith("measured: a weight GEMM that fits in the cache cycled through")
    assert lines[1].startswith("measured: 8 GEMMs timed repeated")  # the 8 weight gradients
    assert measured_residency_lines(report) == []  # nothing measured, nothing said


def test_measure_refuses_in_one_sentence_a_cycled_weight_beyond_its_allocation_limit(
        monkeypatch):
    from test_predict import HOST, FakeClock

    from roofline.analysis import measure as measure_mod
    from roofline.model.network import network_from_dict

    net = network_from_dict({"name": "deep", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 256, "out": 256,
                                         "repeat": 8}]}, "deep.yaml")
    report = analyze(net, spec(_v2_entry()))
    monkeypatch.setattr(measure_mod, "MAX_SHAPE_BYTES", 2**20)  # 8 weights of 256 KiB: 2 MiB
    with pytest.raises(measure_mod.MeasureError, match="over 8 copies of its weight"):
        measure_mod.measure_report(report, None, lambda *a, **k: None, "fake", FakeClock(),
                                   HOST)
