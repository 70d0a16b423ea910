"""Non-GEMM ops on a CPU with the probe's op costs (analysis/cpu_ops.py, calibration version 4
``ops``): hand-worked times, the kind -> class table's coverage, the block's YAML round trip and
its one-line errors, and older entries that still predict ops at their roof."""

from __future__ import annotations

import copy
import math
import sys

import pytest
import yaml

from roofline.analysis import cpu_ops
from roofline.analysis.report import analyze, analyze_op
from roofline.errors import InputError
from roofline.hardware.spec import OP_RATE_KEYS, HardwareSpec
from roofline.model.capture import FLOPS_PER_ELEMENT
from roofline.model.network import load_network, network_from_dict
from roofline.model.ops import ELEMENTWISE, AttentionShape, Op, elementwise
from roofline.output.times import time_lines

OPS = {"library": "torch", "dtype": "fp32", "threads": 2, "call_s": 2e-6,
       "rates_gbs": {"stream_cache": 50.0, "stream_dram": 10.0, "copy": 20.0, "tanh": 4.0,
                     "exp": 8.0, "gelu": 2.0, "softmax": 8.0, "layernorm": 8.0,
                     "batchnorm": 4.0, "max_pool2d": 1.0},
       "attention": {128: 0.2, 512: 0.4}, "attention_causal": {128: 0.1, 512: 0.2},
       "attention_head_dim": 64}
ENTRY = {
    "name": "box", "kind": "cpu", "vendor": "AMD", "model": "AMD EPYC", "architecture": "x",
    "origin": "measured", "peak_tflops": {"fp32": 0.1, "fp16": 0.1}, "bandwidth_gbs": 20.0,
    "llc_mb": 32.0,
    "cpu": {"sockets": 1, "cores_per_socket": 2, "simd_bits": 512, "fma_units": 2,
            "clock_ghz": 3.0},
    "calibration": {"version": 4, "call_overhead_s": 1e-6,
                    "gemm_efficiency": {"fp32": {"square": {"32": 0.5}, "thin": {"1": 0.5},
                                                 "thin_nk": 64, "peak_n": 64}},
                    "ops": OPS},
    "sources": [{"title": "probe", "command": "roofline probe",
                 "covers": ["peak_tflops", "bandwidth_gbs", "llc_mb", "cpu"]}],
    "notes": "test entry",
}
MIB = 2**20


def spec(ops=OPS, version=4) -> HardwareSpec:
    data = copy.deepcopy(ENTRY)
    data["calibration"]["version"] = version
    if ops is None:
        del data["calibration"]["ops"]
    else:
        data["calibration"]["ops"] = copy.deepcopy(ops)
    return HardwareSpec.from_dict(data, "box.yaml")


def op(kind: str, flops: int, nbytes: int, attention=None) -> Op:
    return Op("OP1", "layer", "forward", kind, flops, nbytes, attention)


def of(shape) -> Op:
    return Op("OP1", shape.layer, shape.pass_, shape.kind, shape.flops, shape.bytes,
              shape.attention, shape.follows)


def test_a_gelu_in_cache_pays_a_call_and_its_work_at_the_gelu_rate():
    # 65,536 fp32 values: read and written, 2 x 4 x 65,536 = 524,288 B <= 1 MiB, 1/32 of the
    # 32 MiB LLC: in cache;
    # streaming 524,288 / 50e9 = 10.49 us, work 524,288 / 2e9 = 262.1 us: 2 + 262.1 us
    gelu = of(elementwise("l", "forward", "gelu", 65536, 4))
    assert gelu.bytes == 524288
    r = analyze_op(gelu, spec(), "fp32")
    assert r.predicted_basis == "calibrated: transcendental"
    assert r.predicted_time_s == pytest.approx(2e-6 + 524288 / 2e9)


def test_a_convolutions_bias_is_added_inside_it_on_a_cpu_a_linears_is_a_pass():
    # torch's CPU conv2d hands its bias to oneDNN, which adds it in the convolution: 0 s, basis
    # gemm-epilogue (its roof keeps the unfused pass). A 1x1 convolution of 2 x 8 x 16 x 16 to
    # 8 channels, fp32: 2 x 8 x 16 x 16 = 4,096 outputs, 2 x 4 x 4,096 = 32,768 B
    net = network_from_dict({"name": "c", "batch": 2, "dtype": "fp32", "mode": "train",
                        "input": {"channels": 8, "height": 16, "width": 16},
                        "layers": [{"type": "conv2d", "out_channels": 8, "kernel": 1,
                                    "bias": True}]}, "<test>")
    report = analyze(net, spec())
    (bias,) = [r for r in report.ops if r.op.kind == "bias"]
    assert bias.op.bytes == 32_768
    assert (bias.predicted_time_s, bias.predicted_basis) == (0.0, "gemm-epilogue")
    assert bias.time_s > 0
    text = " ".join(time_lines(report))
    assert "convolution biases added inside their convolution" in text
    assert "gemm-epilogue" not in text  # not a class of the calibration
    # its gradient, a sum of dY per channel, stays a pass: 4,096 x 4 B read = 16,384 B in
    # cache (<= 1 MiB): 2 us + 16,384 / 50e9 = 2.328 us
    (grad,) = [r for r in report.ops if r.op.kind == "bias-backward"]
    assert grad.predicted_basis == "calibrated: streaming"
    assert grad.predicted_time_s == pytest.approx(2e-6 + 16_384 / 50e9)
    # a Linear's bias is a pass on a CPU (torch's addmm copies it into its output first):
    # 64 x 512 outputs, 2 x 4 x 32,768 = 262,144 B in cache: 2 us + 262,144 / 50e9 = 7.243 us
    net = network_from_dict({"name": "l", "batch": 64, "dtype": "fp32", "mode": "inference",
                        "layers": [{"type": "linear", "in": 256, "out": 512,
                                    "bias": True}]}, "<test>")
    (bias,) = [r for r in analyze(net, spec()).ops if r.op.kind == "bias"]
    assert bias.predicted_basis == "calibrated: streaming"
    assert bias.predicted_time_s == pytest.approx(7.2429e-6, rel=1e-4)


def test_a_relu_beyond_the_llc_streams_at_the_dram_rate():
    # 2^20 values: 8 MiB > 1 MiB (1/32 of the LLC, though inside it): 8,388,608 / 10e9 =
    # 838.9 us, plus the 2 us call
    relu = of(elementwise("l", "forward", "relu", MIB, 4))
    r = analyze_op(relu, spec(), "fp32")
    assert r.predicted_basis == "calibrated: streaming"
    assert r.predicted_time_s == pytest.approx(2e-6 + 8 * MIB / 10e9)


def test_a_permuted_copy_pays_the_copy_rate_a_copy_laid_out_alike_streams():
    # In cache (2^14 fp32 values read and as many written, 131,072 B, under 1/32 of the 32 MiB
    # LLC): permuted, the copy rate's 131,072 / 20e9 = 6.55 us outlasts the stream's 131,072 /
    # 50e9 = 2.62 us: 2 + 6.55 us; laid out alike, a stream: 2 + 2.62 us. Beyond the LLC (8 MiB)
    # the DRAM stream, 8,388,608 / 10e9 = 838.9 us, outlasts the copy rate's 419.4 us: 2 + 838.9.
    small = 2 * 2**14 * 4
    permuted = Op("OP1", "l", "forward", "aten.clone", 0, small, strided=True)
    alike = Op("OP1", "l", "forward", "aten.clone", 0, small)
    r = analyze_op(permuted, spec(), "fp32")
    assert r.predicted_basis == "calibrated: copy"
    assert r.predicted_time_s == pytest.approx(2e-6 + 131072 / 20e9)
    r = analyze_op(alike, spec(), "fp32")
    assert r.predicted_basis == "calibrated: streaming"
    assert r.predicted_time_s == pytest.approx(2e-6 + 131072 / 50e9)
    # a cast is a copy too; repeat and roll stay copies whatever the capture saw
    cast = analyze_op(Op("OP1", "l", "forward", "aten._to_copy", 0, small), spec(), "fp32")
    assert cast.predicted_basis == "calibrated: streaming"
    rolled = analyze_op(Op("OP1", "l", "forward", "aten.roll", 0, small), spec(), "fp32")
    assert rolled.predicted_basis == "calibrated: copy"
    big = analyze_op(Op("OP1", "l", "forward", "aten.clone", 0, 8 * MIB, strided=True), spec(),
                     "fp32")
    assert big.predicted_time_s == pytest.approx(2e-6 + 8 * MIB / 10e9)


def test_an_op_is_in_cache_up_to_a_32nd_of_the_llc():
    # 131,072 values: 1 MiB = 32 MiB / 32: 2 + 1,048,576 / 50e9 us; one more value: DRAM
    at = analyze_op(of(elementwise("l", "forward", "relu", MIB // 8, 4)), spec(), "fp32")
    assert at.predicted_time_s == pytest.approx(2e-6 + MIB / 50e9)
    over = analyze_op(of(elementwise("l", "forward", "relu", MIB // 8 + 1, 4)), spec(), "fp32")
    assert over.predicted_time_s == pytest.approx(2e-6 + (MIB + 8) / 10e9)


def test_a_rate_is_held_per_value_across_dtypes():
    # fp16 gelu of 65,536 values: 262,144 B, charged as 4/2 x 262,144 B at 2 GB/s: the same
    # 262.1 us of work per value as in fp32 (the calibration's dtype)
    gelu = of(elementwise("l", "forward", "gelu", 65536, 2))
    r = analyze_op(gelu, spec(), "fp16")
    assert r.predicted_time_s == pytest.approx(2e-6 + 262144 * 2 / 2e9)


def test_a_slow_stream_outlasts_a_fast_class():
    # tanh of 2^20 values, 8 MiB, beyond 1/32 of the LLC: work 8 MiB / 4 GB/s = 2.10 ms against the
    # DRAM stream 8 MiB / 10 GB/s = 0.84 ms: the work; with a tanh rate of 40 GB/s, the stream
    tanh = op("aten.tanh", MIB, 8 * MIB)
    assert analyze_op(tanh, spec(), "fp32").predicted_time_s == pytest.approx(
        2e-6 + 8 * MIB / 4e9)
    fast = copy.deepcopy(OPS)
    fast["rates_gbs"]["tanh"] = 40.0
    assert analyze_op(tanh, spec(fast), "fp32").predicted_time_s == pytest.approx(
        2e-6 + 8 * MIB / 10e9)


def test_fused_attention_runs_at_its_measured_share_by_key_length():
    # s = 256 lies halfway (in log) between 128 and 512: share (0.2 + 0.4) / 2 = 0.3 of
    # 0.1 TFLOP/s; 4 x 12 x 256^2 x 64 = 201,326,592 FLOPs / 3e10 = 6.711 ms; causal 0.15
    flops = 4 * 12 * 256**2 * 64
    full = op("flash-attention", flops, 1000, AttentionShape(64, 256, 256, False))
    r = analyze_op(full, spec(), "fp32")
    assert r.predicted_basis == "calibrated: attention"
    assert r.predicted_time_s == pytest.approx(2e-6 + flops / (0.3 * 0.1e12))
    causal = op("flash-attention", flops // 2, 1000, AttentionShape(64, 256, 256, True))
    assert analyze_op(causal, spec(), "fp32").predicted_time_s == pytest.approx(
        2e-6 + flops / 2 / (0.15 * 0.1e12))
    # clamped at the ends: s = 4096 at 512's share
    long = op("flash-attention", flops, 1000, AttentionShape(64, 4096, 4096, False))
    assert analyze_op(long, spec(), "fp32").predicted_time_s == pytest.approx(
        2e-6 + flops / (0.4 * 0.1e12))
    # decode (one query row) streams its KV cache
    decode = op("flash-attention", 4 * 12 * 256 * 64, 10**6, AttentionShape(64, 1, 256, False))
    r = analyze_op(decode, spec(), "fp32")
    assert r.predicted_basis == "calibrated: streaming"
    assert r.predicted_time_s == pytest.approx(2e-6 + 1e6 / 50e9)


def test_an_unmapped_kind_and_a_class_not_measured_stream_and_say_so():
    unknown = op("aten.frobnicate", 0, 4000)
    r = analyze_op(unknown, spec(), "fp32")
    assert r.predicted_basis == cpu_ops.UNMAPPED == "calibrated: streaming (unmapped)"
    assert r.predicted_time_s == pytest.approx(2e-6 + 4000 / 50e9)
    numpy_ops = copy.deepcopy(OPS)
    numpy_ops.update(library="numpy", threads=1, missing={"gelu": "numpy has no erf"})
    del numpy_ops["rates_gbs"]["gelu"], numpy_ops["attention"], numpy_ops["attention_causal"]
    gelu = of(elementwise("l", "forward", "gelu", 65536, 4))
    r = analyze_op(gelu, spec(numpy_ops), "fp32")
    assert r.predicted_basis == cpu_ops.NOT_MEASURED
    assert r.predicted_time_s == pytest.approx(2e-6 + 524288 / 50e9)
    attention = op("flash-attention", 10**9, 1000, AttentionShape(64, 256, 256, False))
    r = analyze_op(attention, spec(numpy_ops), "fp32")
    assert r.predicted_basis == cpu_ops.NOT_MEASURED
    # not timed, it still cannot outrun the peak: 10^9 FLOPs at 0.1 TFLOP/s = 10 ms (it
    # streamed its 1000 bytes alone before: 2.02 us, under its own roofline time)
    assert r.predicted_time_s == pytest.approx(2e-6 + 10**9 / 0.1e12)
    assert r.predicted_time_s >= r.time_s


def test_captured_names_are_looked_up_as_the_capture_costs_them():
    assert cpu_ops.base_kind("aten._foreach_add_") == "add"
    assert cpu_ops.base_kind("aten.add_") == "add"
    assert cpu_ops.base_kind("aten._softmax") == "_softmax"
    assert cpu_ops.class_of("aten._foreach_mul_") == ("streaming", None)
    assert cpu_ops.class_of("aten.tanh") == ("transcendental", "tanh")
    assert cpu_ops.class_of("aten.max_pool2d_with_indices") == ("pooling", "max_pool2d")
    assert cpu_ops.class_of("aten.clone") == ("copy", "copy")


def _model_kinds() -> set[str]:
    """Every op kind the bundled examples make, trained with each optimizer, flash and naive."""
    kinds: set[str] = set()
    for path in ("examples/mlp-1024-4096-1000.yaml", "examples/resnet50.yaml",
                 "examples/slide-amazon-670k.yaml", "examples/snapml-criteo.yaml",
                 "examples/hf/gpt2.json", "examples/hf/mixtral-8x7b.json"):
        net = load_network(path)
        seq = 16 if path.endswith(".json") else None
        for optimizer, attention in (("sgd", "flash"), ("adam", "naive")):
            over = net.with_overrides(batch=2, mode="train", optimizer=optimizer, dtype="fp32",
                                      seq=seq, attention=attention if seq else None)
            kinds |= {o.kind for o in over.expand()[1]}
    return kinds


def test_the_class_table_covers_every_kind_roofline_and_the_capture_make():
    kinds = set(ELEMENTWISE) | _model_kinds() | {f"aten.{name}" for name in FLOPS_PER_ELEMENT}
    unmapped = sorted(k for k in kinds if cpu_ops.class_of(k) is None)
    assert not unmapped
    for name, (cls, key) in cpu_ops.CLASSES.items():
        assert cls in cpu_ops.CLASS_NAMES, name
        assert key is None or key in OP_RATE_KEYS, name
        assert (key is None) == (cls in ("streaming", "attention")), name


def test_older_blocks_keep_ops_at_their_roof():
    hw = spec(ops=None, version=3)
    assert hw.calibration is not None and hw.calibration.cpu_ops is None
    relu = of(elementwise("l", "forward", "relu", MIB, 4))
    r = analyze_op(relu, hw, "fp32")
    assert r.predicted_basis == "roofline" and r.predicted_time_s == r.time_s
    report = analyze(load_network("examples/mlp-1024-4096-1000.yaml").with_overrides(
        dtype="fp32", mode="train", optimizer="sgd"), hw)
    assert report.to_dict()["op_prediction"] is None


def test_the_report_says_how_its_ops_were_predicted():
    net = load_network("examples/resnet50.yaml").with_overrides(dtype="fp32", batch=2)
    data = analyze(net, spec()).to_dict()
    assert data["op_prediction"]["library"] == "torch"
    assert data["op_prediction"]["rates_gbs"]["gelu"] == 2.0
    assert data["op_prediction"]["attention"] == {"128": 0.2, "512": 0.4}
    bases = {o["predicted_basis"] for o in data["ops"]}
    assert bases == {"calibrated: streaming", "calibrated: normalization",
                     "calibrated: pooling"}
    total = sum(o["predicted_time_s"] for o in data["ops"])
    assert data["totals"]["predicted_op_time_s"] == pytest.approx(total)


def test_the_block_round_trips_through_yaml():
    hw = spec()
    again = HardwareSpec.from_dict(yaml.safe_load(yaml.safe_dump(ENTRY)), "again.yaml")
    assert again.calibration.cpu_ops == hw.calibration.cpu_ops
    ops = hw.calibration.cpu_ops
    assert ops.attention == ((128, 0.2), (512, 0.4)) and ops.threads == 2
    assert set(ops.rates_gbs) == set(OP_RATE_KEYS)


@pytest.mark.parametrize("path, value, message", [
    (("library",), "jax", "calibration.ops.library: expected one of numpy, torch, got 'jax'"),
    (("dtype",), "fp99", "calibration.ops.dtype: expected one of"),
    (("threads",), 0, "calibration.ops.threads"),
    (("call_s",), -1, "calibration.ops.call_s"),
    (("rates_gbs", "tanh"), -4, "calibration.ops.rates_gbs.tanh"),
    (("rates_gbs", "tanh"), 1e300, "calibration.ops.rates_gbs.tanh: 1e+300 GB/s is implausible"),
    (("rates_gbs", "frobnicate"), 1.0, "calibration.ops.rates_gbs.frobnicate: unknown field"),
    (("attention", 128), 7.0, "calibration.ops.attention.128: expected a share"),
    (("attention", "x"), 0.5, "calibration.ops.attention.x: expected a positive integer size"),
    (("missing",), {"frobnicate": "no"}, "calibration.ops.missing.frobnicate: unknown field"),
    (("missing",), {"gelu": ""}, "calibration.ops.missing.gelu: expected a non-empty string"),
    (("bogus",), 1, "calibration.ops.bogus: unknown field"),
])
def test_bad_values_are_refused_in_one_line_naming_the_field(path, value, message):
    ops = copy.deepcopy(OPS)
    node = ops
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(InputError, match=message.replace(".", r"\.").replace("(", r"\(")
                       .replace("+", r"\+")) as info:
        spec(ops)
    assert "\n" not in str(info.value)


def test_a_missing_stream_rate_an_old_version_or_a_lost_head_dim_are_refused():
    ops = copy.deepcopy(OPS)
    del ops["rates_gbs"]["stream_dram"]
    with pytest.raises(InputError, match=r"rates_gbs\.stream_dram: missing required field"):
        spec(ops)
    with pytest.raises(InputError, match=r"calibration\.ops: op costs need calibration "
                                         r"version 4"):
        spec(version=3)
    ops = copy.deepcopy(OPS)
    del ops["attention_head_dim"]
    with pytest.raises(InputError, match=r"calibration\.ops\.attention_head_dim: missing"):
        spec(ops)


def test_a_probe_without_torch_writes_an_ops_block_that_names_what_it_lacks(monkeypatch):
    from _probe_fakes import CPUINFO

    from roofline import probe
    from roofline.kernels.cpu_ops import MISSING_WITHOUT_TORCH
    from roofline.probe import identify

    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(CPUINFO))
    for name in ("pynvml", "torch", "cupy"):
        monkeypatch.setitem(sys.modules, name, None)
    result = probe.run_probe(preset="tiny")
    block = result.measured["calibration"]["ops"]
    assert block["library"] == "numpy" and block["threads"] == 1
    assert set(block["missing"]) == {"gelu", "batchnorm", "max_pool2d", "attention"}
    assert set(block["rates_gbs"]) == set(OP_RATE_KEYS) - set(MISSING_WITHOUT_TORCH)
    assert "attention" not in block and all(v > 0 for v in block["rates_gbs"].values())
    figures = {m["figure"] for m in result.to_dict()["not_measured"]}
    assert {f"calibration.ops.{k}" for k in MISSING_WITHOUT_TORCH} <= figures
    hw = HardwareSpec.from_dict(result.to_hardware_dict("tinybox"), "tinybox")
    assert hw.calibration.cpu_ops.missing == block["missing"]


def _probe_with_torch(preset: str, library: str = "torch"):
    pytest.importorskip("torch")
    from _probe_fakes import CPUINFO

    from roofline import probe
    from roofline.probe import identify

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(CPUINFO))
        for name in ("pynvml", "cupy"):
            monkeypatch.setitem(sys.modules, name, None)
        return probe.run_probe(preset=preset, library=library)


def test_attention_is_not_held_against_another_librarys_peak():
    """CI, a 2-vCPU VM: torch's attention ran at 1.57 of the fp32 peak numpy's OpenBLAS had
    measured, a share the loader refuses (at most 1.5), and the tour notebook's probe died."""
    result = _probe_with_torch("tiny", library="numpy")
    block = result.measured["calibration"]["ops"]
    assert block["library"] == "torch" and "attention" not in block
    assert "probe --library torch" in block["missing"]["attention"]
    assert "calibration.ops.attention" in [s.figure for s in result.not_measured]
    HardwareSpec.from_dict(yaml.safe_load(yaml.safe_dump(result.to_hardware_dict("box"))), "box")


def test_a_probe_with_torch_times_every_class():
    result = _probe_with_torch("tiny")
    block = result.measured["calibration"]["ops"]
    assert block["library"] == "torch" and "missing" not in block
    assert set(block["rates_gbs"]) == set(OP_RATE_KEYS)
    assert set(block["attention"]) == set(block["attention_causal"]) == {16, 32}
    assert all(math.isfinite(v) and v > 0 for v in block["rates_gbs"].values())
    hw = HardwareSpec.from_dict(yaml.safe_load(yaml.safe_dump(
        result.to_hardware_dict("tinybox"))), "tinybox")
    assert hw.calibration.version == 5 and hw.calibration.cpu_ops.attention_head_dim == 8


@pytest.mark.slow
def test_a_quick_probe_writes_an_ops_block():
    result = _probe_with_torch("quick")
    block = result.to_hardware_dict("quickbox")["calibration"]["ops"]
    assert set(block["rates_gbs"]) == set(OP_RATE_KEYS)
    assert set(block["attention"]) == {128, 512} and block["attention_head_dim"] == 64
    ops_s = sum(stats["best_s"] for stats in result.details["op_costs"].values())
    assert ops_s < 1.0  # the kernels themselves: milliseconds each


def test_an_eval_batch_norm_is_captured_as_the_scale_and_shift_it_is():
    torch = pytest.importorskip("torch")
    from roofline.torch import capture

    module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))
    kinds = {}
    for mode in ("inference", "train"):
        module.train(mode == "train")
        net = capture(module, torch.randn(2, 3, 16, 16), mode=mode)
        kinds[mode] = {o.kind for o in net.expand()[1] if "batch_norm" in o.kind}
    assert kinds["inference"] == {"aten._native_batch_norm_legit_no_training"}
    assert kinds["train"] == {"aten.native_batch_norm", "aten.native_batch_norm_backward"}
    assert cpu_ops.class_of("aten._native_batch_norm_legit_no_training") == ("streaming", None)
    assert cpu_ops.class_of("aten.native_batch_norm") == ("normalization", "batchnorm")


def test_an_add_in_cache_slower_than_dram_is_called_stalled(monkeypatch):
    import time

    from roofline.output.probe_notes import note_text
    from roofline.probe import op_costs
    from roofline.probe.plan import PRESETS
    from roofline.probe.runner import Session

    monkeypatch.setattr(op_costs, "ops_library", lambda: "numpy")
    s = Session(PRESETS["tiny"], lambda m: None, time.perf_counter)
    s.measured["bandwidth_gbs"]["dram"] = 1e9  # no add can reach half of it
    s.measured["calibration"] = {}
    op_costs.calibrate_ops(s, 2**20)
    stalled = [w for w in s.warnings if w.code == "op_costs_stalled"]
    assert len(stalled) == 1 and "OMP_WAIT_POLICY=ACTIVE" in note_text(stalled[0])


def test_a_captured_dropout_is_priced_as_torchs_cpu_decomposes_it():
    # the capture records a training dropout as CUDA's one kernel: 2^20 fp32 values read and
    # written and a 1-byte mask, 9 MiB (model.capture._fused_dropout). torch's CPU runs
    # bernoulli_, div_ and x * noise: 1 + 2 + 3 = 6 fp32 values a value, 24 MiB, in 3 calls:
    # beyond 1/32 of the LLC, 3 x 2 us + 24 MiB / 10e9; its backward dY * noise, 3 values (12
    # MiB) in one call
    forward = Op("OP1", "drop", "forward", "aten.native_dropout", 2 * MIB, 9 * MIB)
    backward = Op("OP2", "drop", "backward", "aten.native_dropout_backward", MIB, 9 * MIB)
    assert analyze_op(forward, spec(), "fp32").predicted_time_s == pytest.approx(
        3 * 2e-6 + 24 * MIB / 10e9)
    assert analyze_op(backward, spec(), "fp32").predicted_time_s == pytest.approx(
        2e-6 + 12 * MIB / 10e9)
    # in a 16-bit dtype: 2 x 2 B + 1 B = 5 B a value recorded, 6 x 2 B = 12 B a value moved
    half = Op("OP1", "drop", "forward", "aten.native_dropout", 2 * MIB, 5 * MIB)
    assert analyze_op(half, spec(), "fp16").predicted_time_s == pytest.approx(
        3 * 2e-6 + 12 * MIB / 10e9)
