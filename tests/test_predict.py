"""predicted_time_s and analyze --measure: hand-derived model values, the calibration block's
validation, and the measure path driven by fake kernels and a fake clock (no real timing)."""

from __future__ import annotations

import copy
import math
import sys

import numpy as np
import pytest
from _probe_fakes import fake_torch

from roofline.analysis import measure as measure_mod
from roofline.analysis.predict import (
    LAUNCH_LATENCY_S,
    basis_of,
    datasheet_gemm,
    efficiency,
    fit_of,
    fitted_gemm,
    interpolate,
    predict_gemm,
)
from roofline.analysis.report import analyze, analyze_gemm
from roofline.errors import InputError
from roofline.hardware.catalog import load_hardware
from roofline.hardware.spec import GemmEfficiency, HardwareSpec
from roofline.kernels.cpu import Kernel
from roofline.model.gemm import Gemm
from roofline.model.network import load_network
from roofline.output.times import basis_sentence, beats_roof_notes

EXAMPLE = "examples/mlp-1024-4096-1000.yaml"
HOST = "testbox"

ENTRY = {
    "name": "box", "kind": "cpu", "vendor": "AMD", "model": "AMD EPYC", "architecture": "x",
    "origin": "measured", "peak_tflops": {"fp64": 0.05, "fp32": 0.1}, "bandwidth_gbs": 20.0,
    "llc_mb": 1.0,
    "cpu": {"sockets": 1, "cores_per_socket": 2, "simd_bits": 512, "fma_units": 2,
            "clock_ghz": 3.0},
    "measured": {"machine": f"{HOST}: AMD EPYC, 2 cores, Linux"},
    "calibration": {"version": 1, "call_overhead_s": 1e-6,
                    "gemm_efficiency": {
                        "fp32": {"square": {"32": 0.25, "128": 0.5}, "thin": {"1": 0.1, "16": 0.4},
                                 "thin_nk": 1024, "peak_n": 512},
                        "fp64": {"square": {"32": 0.5}, "thin": {"1": 0.5}, "thin_nk": 64,
                                 "peak_n": 64}},
                    "c_write": {"passes": 2.0, "m": 4096, "n": 4096, "k": 16, "dtype": "fp32"}},
    "sources": [{"title": "probe", "command": "roofline probe",
                 "covers": ["peak_tflops", "bandwidth_gbs", "llc_mb", "cpu"]}],
    "notes": "test entry",
}


def spec(data=None) -> HardwareSpec:
    return HardwareSpec.from_dict(copy.deepcopy(data or ENTRY), "box.yaml")


def test_interpolation_is_linear_in_log_size_and_clamped():
    table = ((32, 0.25), (128, 0.5))
    assert interpolate(table, 64) == pytest.approx(0.375)  # halfway in log2: 5 -> 6 -> 7
    assert interpolate(table, 8) == 0.25 and interpolate(table, 4096) == 0.5


def test_efficiency_takes_the_thin_limit_and_reaches_one_at_the_peak_size():
    eff = spec().calibration.efficiency["fp32"]
    assert isinstance(eff, GemmEfficiency)
    assert efficiency(eff, 512, 512, 512) == pytest.approx(1.0)  # not thin: squares only
    # square table + (512, 1.0): at 256, halfway in log between 128 (0.5) and 512 (1.0)
    assert efficiency(eff, 256, 256, 256) == pytest.approx(0.75)
    # M = 4 of N = K = 4096: square s = (4*4096^2)^(1/3) = 406 -> 0.5 + 0.5*log(406/128)/log 4
    # thin at 4: halfway between 1 (0.1) and 16 (0.4) in log -> 0.25, the smaller one wins
    assert efficiency(eff, 4, 4096, 4096) == pytest.approx(0.25)


def test_calibrated_prediction_by_hand():
    hw = spec()
    # 4 x 4096 x 4096 fp32: A 64 KiB, B 64 MiB, C 64 KiB > 1 MiB LLC: from DRAM
    g = Gemm("MM1", "fc", "forward", 4, 4096, 4096, "fp32")
    p = predict_gemm(g, hw)
    flop_s = 2 * 4 * 4096 * 4096 / (0.1e12 * 0.25)
    ab_s = 4 * (4 * 4096 + 4096 * 4096) / 20e9
    c_s = 2.0 * 4 * 4 * 4096 / 20e9
    assert p.basis == "calibrated"
    assert p.time_s == pytest.approx(1e-6 + max(flop_s, ab_s) + c_s)
    # cache-resident (64^3 fp32, 48 KiB <= 1 MiB): no DRAM terms
    small = predict_gemm(Gemm("MM1", "fc", "forward", 64, 64, 64, "fp32"), hw)
    eff64 = 0.25 + 0.25 * 0.5
    assert small.time_s == pytest.approx(1e-6 + 2 * 64**3 / (0.1e12 * eff64))
    assert small.terms["ab_s"] == 0 and small.terms["c_s"] == 0


def _v2_entry():
    data = copy.deepcopy(ENTRY)
    cal = data["calibration"]
    cal["version"] = 2
    cal["gemm_efficiency"]["fp32"].update(
        thin_dram={"1": 0.05, "16": 0.2}, thin_dram_nk=4096,
        c_write={"passes": 3.0, "m": 8192, "n": 4096, "k": 16, "time_s": 0.01})
    return data


def test_version_2_uses_thin_gemms_beyond_the_llc_and_c_cost_per_dtype():
    hw = spec(_v2_entry())
    # 4 x 4096 x 4096 fp32, B 64 MiB beyond the 1 MiB LLC: the thin_dram table, halfway in log
    # between 1 (0.05) and 16 (0.2) -> 0.125, below the square figure at s = 406 (0.916)
    g = Gemm("MM1", "fc", "forward", 4, 4096, 4096, "fp32")
    p = predict_gemm(g, hw)
    flop_s = 2 * 4 * 4096 * 4096 / (0.1e12 * 0.125)
    ab_s = 4 * (4 * 4096 + 4096 * 4096) / 20e9
    c_s = 3.0 * 4 * 4 * 4096 / 20e9  # fp32's own 3.0 passes, not the version-1 figure 2.0
    assert p.time_s == pytest.approx(1e-6 + max(flop_s, ab_s) + c_s)
    # resident (4 x 256 x 256 fp32: 270 KB <= 1 MiB): the in-cache thin table, 0.25 at 4
    small = predict_gemm(Gemm("MM1", "fc", "forward", 4, 256, 256, "fp32"), hw)
    assert small.time_s == pytest.approx(1e-6 + 2 * 4 * 256 * 256 / (0.1e12 * 0.25))
    # fp64 has no C figure of its own: the top-level one (version 1's) holds
    g64 = Gemm("MM1", "fc", "forward", 4096, 4096, 16, "fp64")
    assert predict_gemm(g64, hw).terms["c_s"] == pytest.approx(2.0 * 8 * 4096 * 4096 / 20e9)


def test_a_lone_gemv_beyond_the_llc_runs_at_the_rate_its_table_timed_not_the_read_stream():
    data = _v2_entry()
    # the probe timed 1 x 4096 x 4096 fp32 (B 64 MiB, beyond the 1 MiB LLC) at 0.5 of the
    # 0.1 TFLOP/s peak after the 1 us call: 671 us, B at 100 GB/s, 5x the 20 GB/s read stream
    data["calibration"]["gemm_efficiency"]["fp32"]["thin_dram"] = {"1": 0.5, "16": 0.6}
    hw = spec(data)
    g = Gemm("MM1", "fc", "forward", 1, 4096, 4096, "fp32", b_operand="weight")
    timed_s = 1e-6 + 2 * 4096 * 4096 / (0.1e12 * 0.5)
    c_s = 3.0 * 4 * 4096 / 20e9  # C, 16 KiB, fp32's 3.0 passes at 20 GB/s
    lone = predict_gemm(g, hw)
    assert lone.time_s == pytest.approx(timed_s + c_s)  # the probe's own time, plus C
    assert lone.terms["ab_s"] == 0
    # once in a step its weight is read once: B's 64 MiB at the read stream is the floor
    step = predict_gemm(g, hw, weights_from_dram=True)
    assert step.time_s == pytest.approx(1e-6 + 4 * (4096 + 4096 * 4096) / 20e9 + c_s)
    # M = 64 is past the table's rows (1, 16): the floor stays for a lone GEMM too
    wide = predict_gemm(Gemm("MM1", "fc", "forward", 64, 4096, 4096, "fp32"), hw)
    assert wide.terms["ab_s"] == pytest.approx(4 * (64 * 4096 + 4096 * 4096) / 20e9)


def test_c_write_passes_by_hand():
    from roofline.analysis.predict import c_write_passes

    eff = {"square": {"32": 1.0}, "thin": {"1": 1.0}, "thin_nk": 64, "peak_n": 32}
    # 1024 x 1024 x 16 fp32 at 1 TFLOP/s: t_flop 33.6 us, above t_ab (A and B 64 KiB each at
    # 10 GB/s: 13.1 us); 33.6 + 200 us measured leaves 200 us for C, and one pass of C (4 MiB
    # at 10 GB/s) takes 419.4 us: 0.477 passes
    t_flop = 2 * 1024 * 1024 * 16 / 1e12
    passes = c_write_passes(t_flop + 200e-6, 1024, 1024, 16, "fp32", 0.0, 1e12, eff, 10e9)
    assert passes == pytest.approx(0.4768, rel=1e-3)


def test_json_carries_predicted_beside_the_roofline_time():
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec())
    data = report.to_dict()
    assert data["prediction_basis"] == "calibrated"
    for gemm in data["gemms"]:
        assert gemm["predicted_time_s"] >= gemm["time_s"] * 0.5
        assert "measured_time_s" not in gemm


def test_datasheet_gpu_model_adds_quantization_and_launch_latency():
    """The pre-0.4.0 GPU prediction, kept as datasheet_gemm for comparison (bench_gpu_model)."""
    hw = load_hardware("a100")
    g = Gemm("MM2", "fc2", "forward", 512, 1000, 4096, "fp16")
    result = analyze_gemm(g, hw)
    q = result.quantization.effective
    expected = LAUNCH_LATENCY_S + max(g.flops / (312e12 * q), g.bytes / 2039e9)
    assert datasheet_gemm(g, hw, result.quantization).time_s == pytest.approx(expected)
    assert result.time_s == pytest.approx(g.flops / 312e12)  # the bound is unchanged


def test_gpu_entry_prediction_is_the_fitted_gpu_model_and_says_so():
    hw = load_hardware("a100")
    g = Gemm("MM2", "fc2", "forward", 512, 1000, 4096, "fp16")
    result = analyze_gemm(g, hw)
    fitted = fitted_gemm(g, hw)
    assert result.predicted_time_s == fitted.time_s and fitted.basis == "fitted"
    assert basis_of(hw) == "fitted"
    fit = fit_of(hw)
    assert fit is not None and fit["architecture_in_data"] is True  # A100 MAMF rows
    assert "DeepBench" in fit["data"] and "t4" in fit["devices"]  # the data, named
    sentence = basis_sentence(hw)
    assert sentence.startswith("predicted: fitted") and "DeepBench" in sentence
    volta = load_hardware("v100")
    assert fit_of(volta)["architecture_in_data"] is False  # held out: no Volta in the fit
    assert "none of them Volta" in basis_sentence(volta)
    assert fit_of(load_hardware("xeon-platinum-8180")) is None


def test_a_fitted_prediction_says_the_clock_it_runs_the_sms_at():
    # T4: hwdb gives the 0.9 GHz a T4 was seen to hold through a GEMM-heavy load (boost 1.59);
    # L4 no sustained clock: its 2.04 GHz boost, and the sentence says what that assumes
    t4, l4 = load_hardware("t4"), load_hardware("l4")
    assert fit_of(t4)["clock"] == {"ghz": 0.9, "basis": "sustained", "boost_ghz": 1.59}
    assert fit_of(l4)["clock"] == {"ghz": 2.04, "basis": "boost", "boost_ghz": 2.04}
    assert ("the SMs at 0.9 GHz, the clock the entry says the board holds through a long GEMM "
            "(boost 1.59)") in basis_sentence(t4)
    assert basis_sentence(l4).endswith(
        "the SMs at their 2.04 GHz boost clock (the entry gives no sustained clock)")


def test_old_measured_entry_without_calibration_loads_and_says_so():
    data = copy.deepcopy(ENTRY)
    del data["calibration"]
    hw = spec(data)
    assert hw.calibration is None
    assert "uncalibrated" in basis_sentence(hw) and "probe method < 3" in basis_sentence(hw)
    g = Gemm("MM1", "fc", "forward", 64, 64, 64, "fp32")
    assert predict_gemm(g, hw).time_s == pytest.approx(
        max(g.flops / 0.1e12, g.bytes / 20e9))


@pytest.mark.parametrize("path, value, message", [
    (("version",), 9, "calibration.version: expected one of 1"),
    (("call_overhead_s",), -1, "calibration.call_overhead_s"),
    (("gemm_efficiency", "fp32", "square"), {"x": 0.1}, "calibration.gemm_efficiency.fp32"
                                                          ".square.x"),
    (("gemm_efficiency", "fp32", "thin"), {}, "calibration.gemm_efficiency.fp32.thin"),
    (("c_write", "passes"), -2, "calibration.c_write.passes"),
    (("gemm_efficiency", "fp32", "c_write"), {"passes": "x"},
     "calibration.gemm_efficiency.fp32.c_write.passes"),
    (("gemm_efficiency", "fp32", "thin_dram"), {"0": 1}, "calibration.gemm_efficiency.fp32"
                                                          ".thin_dram.0"),
    (("gemm_efficiency", "fp99"), {}, "calibration.gemm_efficiency.fp99: unknown field"),
])
def test_calibration_errors_name_the_field(path, value, message):
    data = copy.deepcopy(ENTRY)
    node = data["calibration"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        spec(data)


class FakeClock:
    """Advances by ``per_call_s[shape]`` for each call a fake kernel makes."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def fake_kernels(clock, per_call):
    made = []

    def make(m, n, k, g, dtype):
        made.append((m, n, k, g, dtype))

        def run(loops):
            clock.now += loops * per_call[(m, n, k)]

        return Kernel("fake", run, 2.0 * m * n * k * g, "FLOP")

    return make, made


def test_measure_times_each_distinct_shape_once_and_flags_a_point_above_its_roof():
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec())
    clock = FakeClock()
    # MM1 and MM5 share no shape; MM2/MM3 differ; give MM1 a time below its roof
    roof = {(r.gemm.m, r.gemm.n, r.gemm.k): r.time_s for r in report.results}
    per_call = {shape: t * 2 for shape, t in roof.items()}
    per_call[(512, 4096, 1024)] = roof[(512, 4096, 1024)] / 2
    make, made = fake_kernels(clock, per_call)
    said = []
    measured = measure_mod.measure_report(report, said.append, make, "fake", clock, HOST)
    assert len(made) == len(set(made)) == len(roof)
    mm1, mm2 = measured.results[0].to_dict(), measured.results[1].to_dict()
    assert mm1["measured_time_s"] == pytest.approx(roof[(512, 4096, 1024)] / 2)
    assert mm1["efficiency"] == pytest.approx(2.0) and mm1["beats_roof"]
    assert mm2["efficiency"] == pytest.approx(0.5) and not mm2["beats_roof"]
    assert mm2["measured_over_predicted"] == pytest.approx(
        mm2["measured_time_s"] / mm2["predicted_time_s"])
    assert any("measuring" in line for line in said)
    notes = beats_roof_notes(measured)
    assert len(notes) == 1 and notes[0].startswith("MM1: measured 2.00x its roof")
    from roofline.output.report import report_table

    assert "BEATS ROOF" in report_table(measured)


def test_a_kernel_of_several_calls_is_measured_per_gemm():
    """A CUDA graph's replay makes ``calls`` GEMMs: the measurement is one GEMM's seconds."""
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec())
    clock = FakeClock()

    def make(m, n, k, g, dtype):
        def run(loops):  # 4 GEMMs a replay, 1 ms each
            clock.now += loops * 4 * 1e-3
        return Kernel("graphed", run, 4 * 2.0 * m * n * k * g, "FLOP", calls=4)

    said = []
    measured = measure_mod.measure_report(report, said.append, make, "fake", clock, HOST)
    assert all(r.measured.best_s == pytest.approx(1e-3) for r in measured.results)
    shape_lines = [line for line in said if line.startswith("  [")]
    assert len(shape_lines) == 5 and all(": 1 ms (median 1 ms," in line
                                         for line in shape_lines)


def test_a_graph_keeps_the_tensors_it_replays_alive(monkeypatch):
    """A CUDA graph replays into the memory its calls captured: freed after the capture, that
    memory went to other tensors and a replay wrote into them (an illegal address on an H100)."""
    import gc
    import weakref

    from roofline.kernels.gpu import TorchBackend

    torch = fake_torch()
    backend = TorchBackend(torch)
    a = torch.randn((4, 4))
    alive = weakref.ref(a)
    kernel = backend.graphed("copy", lambda a=a: a.swapaxes(0, 1), 3)
    del a
    gc.collect()
    assert alive() is not None
    kernel.run(2)
    del kernel
    gc.collect()
    assert alive() is None


def test_a_backend_failure_under_measure_is_one_line():
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec())

    def make(m, n, k, g, dtype):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nSearch for ...")

    with pytest.raises(measure_mod.MeasureError) as caught:
        measure_mod.measure_report(report, None, make, "torch, CUDA graph", FakeClock(), HOST)
    assert str(caught.value) == ("torch, CUDA graph failed timing 512x4096x1024 fp32: CUDA "
                                 "error: an illegal memory access was encountered")


def test_measure_shares_shapes_of_repeated_blocks():
    from roofline.model.network import network_from_dict

    net = network_from_dict({"name": "deep", "batch": 8, "dtype": "fp32", "mode": "inference",
                             "layers": [{"type": "linear", "in": 64, "out": 64, "repeat": 6}]},
                            "deep.yaml")
    report = analyze(net, spec())
    clock = FakeClock()
    make, made = fake_kernels(clock, {(8, 64, 64): 1e-6})
    measure_mod.measure_report(report, None, make, "fake", clock, HOST)
    assert len(report.results) == 6 and made == [(8, 64, 64, 1, "fp32")]


def test_measure_refuses_another_machine_and_datasheet_entries_and_fp16():
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec())
    with pytest.raises(measure_mod.MeasureError, match="measured on testbox, this is other"):
        measure_mod.check_measurable(report, "other")
    sheet = analyze(load_network(EXAMPLE), load_hardware("a100"))
    with pytest.raises(measure_mod.MeasureError, match="datasheet entry"):
        measure_mod.check_measurable(sheet, HOST)
    fp16 = copy.deepcopy(ENTRY)
    fp16["peak_tflops"]["fp16"] = 0.2
    half = analyze(load_network(EXAMPLE), spec(fp16))
    with pytest.raises(measure_mod.MeasureError, match="fp64 and fp32 only"):
        measure_mod.check_measurable(half, HOST)


def test_cli_refuses_measure_on_a_datasheet_entry_in_one_line(invoke):
    result = invoke("analyze", EXAMPLE, "--hw", "a100", "--measure")
    assert result.exit_code == 2
    assert result.stderr.strip().count("\n") == 0 and "datasheet entry" in result.stderr


def _fake_gpu(monkeypatch) -> HardwareSpec:
    """A measured GPU entry (an A100-like one, fp32 only) with a fake torch as its library."""
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    monkeypatch.setitem(sys.modules, "cupy", None)
    gpu = copy.deepcopy(ENTRY) | {"kind": "gpu", "gpu": {"sms": 108, "boost_clock_ghz": 1.4},
                                 "peak_tflops": {"fp32": 19.5}}
    del gpu["cpu"], gpu["calibration"]
    gpu["sources"][0]["covers"] = ["peak_tflops", "bandwidth_gbs", "llc_mb", "gpu"]
    return spec(gpu)


def test_gpu_measure_path_through_a_fake_torch(monkeypatch):
    gpu = _fake_gpu(monkeypatch)
    net = load_network(EXAMPLE).with_overrides(dtype="fp32", batch=4)
    report = analyze(net, gpu)
    make, backend = measure_mod.default_kernels(report)
    # timed as CUDA-graph replays (the kernels' time, as a graph-timed calibration predicts):
    # a replay makes ``calls`` GEMMs, each of them 2 batched 4 x 8 x 16 products
    assert backend == "torch, CUDA graph"
    kernel = make(4, 8, 16, 2, "fp32")
    kernel.run(2)
    assert 1 <= kernel.calls <= 100 and kernel.work == 2.0 * 4 * 8 * 16 * 2 * kernel.calls
    assert kernel.label.endswith(f", {kernel.calls} calls in a CUDA graph")
    measured = measure_mod.measure_report(report, None, make, backend, hostname=HOST)
    assert all(math.isfinite(r.to_dict()["efficiency"]) for r in measured.results)


def test_gpu_measure_lays_each_gemm_out_as_the_model_predicts_it(monkeypatch):
    """A Linear's forward on a GPU is timed with its weight along K (F.linear's W, N x K) and
    its output along N, its data gradient with B along N, its weight gradient (M in, N out)
    with A and C along M (dW stored out x in): what the GPU GEMM model predicts for each pass
    (model.gemm.PASS_ROWS)."""
    from roofline.kernels.gpu import _laid_out

    rng = np.random.default_rng(1)
    m, n, k = 4, 6, 5
    for rows in ((2, 2, 1), (2, 1, 1), (0, 1, 1), (2, 2, 0), (0, 2, 0)):
        a, b, c = _laid_out(lambda shape: rng.standard_normal(shape), (), m, n, k, rows)
        np.matmul(a, b, out=c)
        along = {0: "M", 1: "N", 2: "K"}
        # A is (m, k) or, flipped for C along M, B^T; whichever, the operand's rows (its
        # contiguous axis) run along the dimension asked
        A, B = (a, b) if rows[2] == 1 else (b.T, a.T)
        C = c if rows[2] == 1 else c.T
        assert A.shape == (m, k) and B.shape == (k, n) and C.shape == (m, n)
        assert np.allclose(C, A @ B)
        contiguous = {id(A): A.strides.index(8), id(B): B.strides.index(8),
                      id(C): C.strides.index(8)}
        got = tuple(along[(0, 2)[contiguous[id(A)]]] if x is A else
                    along[(2, 1)[contiguous[id(B)]]] if x is B else
                    along[(0, 1)[contiguous[id(C)]]] for x in (A, B, C))
        assert got == tuple(along[r] for r in rows), rows
    gpu = _fake_gpu(monkeypatch)
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32", batch=4), gpu)
    keys = {measure_mod.shape_key(r, report) for r in report.results}
    # training: forward (B along K, C along N), data gradient (B along N), weight gradient
    # (A and C along M): each pass its own timing, with its own layout
    assert {key[6] for key in keys} == {(2, 2, 1), (2, 1, 1), (0, 1, 0)}
    make, _ = measure_mod.default_kernels(report)
    assert make(4, 8, 16, 1, "fp32", rows=(2, 2, 1)).label.startswith(
        "torch fp32 GEMM 4x8x16, rows of A, B, C along K, K, N, ")
    assert make(4, 8, 16, 1, "fp32").label.startswith("torch fp32 GEMM 4x8x16, ")
    cpu_report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32", batch=4), spec())
    assert {measure_mod.shape_key(r, cpu_report)[6] for r in cpu_report.results} == {None}


def test_cpu_measure_times_the_probes_checked_numpy_kernel():
    from roofline.kernels import cpu

    net = load_network(EXAMPLE).with_overrides(dtype="fp32", batch=2)
    report = analyze(net, spec())
    make, backend = measure_mod.default_kernels(report)
    assert (make, backend) == (cpu.shaped_gemm, "numpy")  # one numpy GEMM kernel, not a copy
    kernel = make(4, 8, 16, 3, "fp32")
    assert kernel.work == 2.0 * 4 * 8 * 16 * 3 and kernel.label == "fp32 GEMM 3 x 4x8x16"
    kernel.run(2)


def test_tiny_probe_writes_a_calibration_block_that_loads(monkeypatch):
    from _probe_fakes import CPUINFO

    from roofline import probe
    from roofline.probe import identify

    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(CPUINFO))
    for name in ("pynvml", "torch", "cupy"):
        monkeypatch.setitem(sys.modules, name, None)
    result = probe.run_probe(preset="tiny")
    data = result.to_dict()
    assert data["schema_version"] == 6 and data["method_version"] == 9
    rounds = data["details"]["calibration_rounds"]
    assert rounds["rounds"] >= 2 and "fp32 GEMM 8x8x8" in rounds["kernels"]
    assert "other_load_cpus" in data["details"]
    bw = data["measured"]["bandwidth_gbs"]
    assert {"dram", "triad", "copy"} <= set(bw)
    assert set(data["measured"]["bandwidth_stats"]["dram"]) == {"best", "median", "spread"}
    assert data["details"]["dram_kernel"].startswith("read stream")
    cal = data["measured"]["calibration"]
    assert cal["version"] == 5 and set(cal["gemm_efficiency"]) == {"fp32", "fp64"}
    # without --library: numpy's BLAS, as threadpoolctl names it
    assert cal["library"]["name"] == "numpy" == data["library"]["name"]
    assert cal["library"]["version"] == np.__version__
    for block in cal["gemm_efficiency"].values():
        assert block["c_write"]["passes"] >= 0 and block["thin_dram_nk"] == 24
        assert set(block["thin_dram"]) == set(block["thin"]) == {"1", "2"}
    hw = HardwareSpec.from_dict(result.to_hardware_dict("tinybox"), "tinybox")
    assert hw.calibration is not None and basis_sentence(hw).startswith("predicted: calibrated")


def test_measure_sizes_a_gemm_by_its_dtype_not_eight_bytes():
    """By hand: 16384^3 in fp16 allocates 3 x 16384^2 x 2 B = 1.5 GiB, under the 2 GiB cap (it
    was counted at 8 bytes an element, 6 GiB, and refused); in fp32 it is 3 GiB, refused; int8
    writes an int32 C: 2 x 2^28 x 1 + 2^28 x 4 = 1.5 GiB."""
    side = 16384
    assert measure_mod.allocated_bytes(side, side, side, 1, "fp16") == 3 * side**2 * 2
    assert measure_mod.allocated_bytes(side, side, side, 1, "fp16") < measure_mod.MAX_SHAPE_BYTES
    assert measure_mod.allocated_bytes(side, side, side, 1, "fp32") > measure_mod.MAX_SHAPE_BYTES
    assert measure_mod.allocated_bytes(side, side, side, 1, "int8") == 6 * side**2
    assert measure_mod.allocated_bytes(4, 8, 16, 3, "fp64") == 3 * (64 + 128 + 32) * 8


def test_the_full_probe_times_c_on_a_square_c_three_times_the_llc(monkeypatch):
    """By hand, 32 MiB LLC: C at 3 x 32 MiB = 96 MiB, square, a side rounded up to 512:
    sqrt(96 MiB / 4 B) = 5017 -> 5120 in fp32 (100 MiB), sqrt(96 MiB / 8 B) = 3548 -> 3584 in
    fp64 (98 MiB); K = 16. OpenBLAS writes C ~15% slower per byte when M <= N than when
    M > N, so neither a wide nor a tall C (6144 x 4096 before) stands for both."""
    from types import SimpleNamespace

    from roofline.probe import calibrate, runner
    from roofline.probe.plan import PRESETS

    made = []

    class Kernels:
        def __getattr__(self, name):
            def make(*args, **kwargs):
                made.append((name, args))
                return [None] * len(args[0]) if name == "thin_gemm_kernels" else None
            return make

    monkeypatch.setattr(runner, "gemm_kernels", lambda library: Kernels())
    monkeypatch.setattr(calibrate, "available_memory", lambda: 64 * 2**30)
    session = SimpleNamespace(plan=PRESETS["full"], library="numpy", details={
        f"gemm_{d}": {"sizes": {"1024": {"best": 1.0}}} for d in ("fp32", "fp64")})
    kernels = calibrate.calibration_kernels(session, ["fp32", "fp64"], 32 * 2**20)
    c = {k.dtype: (k.size, k.nk, k.k) for k in kernels if k.kind == "c_write"}
    assert c == {"fp32": (5120, 5120, 16), "fp64": (3584, 3584, 16)}
    assert ("shaped_gemm_kernel", (5120, 5120, 16, "fp32")) in made


def test_measure_refuses_a_machine_of_the_same_host_name_but_another_cpu():
    """The entry was measured on "testbox: AMD EPYC, 2 cores, Linux". A host name alone does
    not identify a machine (VMs are often all "vm"): the CPU's brand and core count must match
    too, each named in the one-line refusal; the platform (a kernel update) may differ."""
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec())
    measure_mod.check_measurable(report, machine=f"{HOST}: AMD EPYC, 2 cores, Linux-6.8")
    with pytest.raises(measure_mod.MeasureError) as caught:
        measure_mod.check_measurable(report, machine=f"{HOST}: Intel Xeon, 16 cores, Linux")
    assert str(caught.value) == (f"box was measured on {HOST} (AMD EPYC, 2 cores), this is "
                                 f"{HOST} (Intel Xeon, 16 cores); use hardware='local'")
    with pytest.raises(measure_mod.MeasureError, match=r"\(AMD EPYC, 2 cores\), this is "
                                                       r"testbox \(AMD EPYC, 16 cores\)"):
        measure_mod.check_measurable(report, machine=f"{HOST}: AMD EPYC, 16 cores, Linux")
    with pytest.raises(measure_mod.MeasureError, match="measured on testbox, this is vm; "):
        measure_mod.check_measurable(report, machine="vm: AMD EPYC, 2 cores, Linux")
    # a brand with a comma in it reads back whole
    comma = copy.deepcopy(ENTRY)
    comma["measured"]["machine"] = "vm: Intel(R) Xeon(R), 2.2GHz, 16 cores, Linux"
    other = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), spec(comma))
    measure_mod.check_measurable(other, machine="vm: Intel(R) Xeon(R), 2.2GHz, 16 cores, L")
    with pytest.raises(measure_mod.MeasureError, match=r"measured on vm \(Intel\(R\) Xeon\(R\),"
                                                       r" 2.2GHz, 16 cores\), this is vm "
                                                       r"\(AMD EPYC, 2 cores\)"):
        measure_mod.check_measurable(other, machine="vm: AMD EPYC, 2 cores, Linux")


def test_this_machine_reads_back_as_the_probe_writes_it():
    from roofline.probe.identify import CpuInfo, machine_text

    cpu = CpuInfo("AMD EPYC 7763", "AMD", 25, 1, 1, 2, 4, 4, (), None, None, None, 1, "sysfs")
    text = machine_text("vm", cpu, "Linux-6.8-x86_64")
    assert text == "vm: AMD EPYC 7763, 2 cores, Linux-6.8-x86_64"
    assert measure_mod._machine_parts(text) == ("vm", "AMD EPYC 7763, 2 cores")
