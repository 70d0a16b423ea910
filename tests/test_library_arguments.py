"""The library's arguments of the wrong type (a new user's first calls): each is refused with
one InputError line naming the argument and what it takes, never a TypeError from a path
function deep inside (``expected str, bytes or os.PathLike``), a file descriptor read for an
int, or a device name walked letter by letter. One int is one batch to sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline
from roofline import InputError

MODEL = Path(__file__).resolve().parents[1] / "examples" / "mlp-1024-4096-1000.yaml"
LLAMA = MODEL.parent / "hf" / "llama-2-7b.json"
SPEC_OR_NAME = "expected a HardwareSpec, an entry's name or a YAML file's path, got"


@pytest.mark.parametrize("call, message", [
    (lambda: roofline.analyze_model(MODEL, None), f"hardware: {SPEC_OR_NAME} NoneType None"),
    (lambda: roofline.analyze_model(MODEL, 100), f"hardware: {SPEC_OR_NAME} int 100"),
    (lambda: roofline.analyze_model(MODEL, ["a100"]),
     f"hardware: {SPEC_OR_NAME} list ['a100']; several devices are compare's"),
    (lambda: roofline.load_hardware(None),
     "hardware: expected an entry's name or a YAML file's path, got NoneType None"),
    (lambda: roofline.sweep(MODEL, ["a100", "v100"], batches=[8]),
     f"hardware: {SPEC_OR_NAME} list ['a100', 'v100']; several devices are compare's"),
    (lambda: roofline.gemm_report(64, 64, 64, 3.5), f"hardware: {SPEC_OR_NAME} float 3.5"),
    (lambda: roofline.compare(MODEL, ["a100", None]), f"hardware: {SPEC_OR_NAME} NoneType None"),
    (lambda: roofline.analyze_model(None, "a100"),
     "model: expected a Network or a model file's path, got NoneType None"),
    (lambda: roofline.analyze_model({"layers": []}, "a100"),
     "model: expected a Network or a model file's path, got dict {'layers': []}"),
    (lambda: roofline.analyze_model(5, "a100"),  # not file descriptor 5
     "model: expected a Network or a model file's path, got int 5"),
    (lambda: roofline.sweep(None, "a100", batches=8),
     "model: expected a Network or a model file's path, got NoneType None"),
    (lambda: roofline.load_network(5), "model: expected a Network or a model file's path, "
                                       "got int 5"),
    (lambda: roofline.compare(MODEL, "a100"), "hardware: compare takes two devices or more, a "
                                              "list (the first is the baseline), got one: str "
                                              "'a100'"),
    # a comma inside one name keeps its own hint, as a one-item list does
    (lambda: roofline.compare(MODEL, "a100,v100"), "hardware: 'a100,v100' is one name"),
    (lambda: roofline.compare(MODEL, ["a100,v100"]), "hardware: 'a100,v100' is one name"),
    (lambda: roofline.compare(MODEL, ["a100", "v100"], bogus=1),
     "compare: unknown keyword 'bogus' (the model settings it takes: batch, dtype, mode, "
     "output_dtype, grad_accumulation, seq, phase, attention, optimizer, recompute, weights, "
     "activations, kv_cache, group_size, logits)"),
    (lambda: roofline.sweep(MODEL, "a100", batches=8, btach=8, zz=1),
     "sweep: unknown keyword 'btach', 'zz' (the model settings"),
    (lambda: roofline.sweep(MODEL, "a100", batches=8.0),
     "batches: expected an integer, a list of them or text (1,8,64 or 1..512), got float 8.0"),
    (lambda: roofline.sweep(MODEL, "a100", batches=True), "batches: expected positive integers, "
                                                         "got True"),
    (lambda: roofline.sweep(MODEL, "a100", batches=[8, "x"]),
     "batches: expected positive integers, got 'x'"),
    (lambda: roofline.analyze_gemm(64, 64, 64, "a100"),
     "gemm: expected a Gemm, got int 64 (a shape M, N, K: gemm_report(m, n, k, hardware))"),
    # analyze takes a Network (it was an AttributeError: 'str' object has no attribute 'check')
    (lambda: roofline.analyze(str(MODEL), "a100"),
     "network: expected a Network, got str "),
    (lambda: roofline.analyze(None, "a100"), "network: expected a Network, got NoneType None"),
    (lambda: roofline.analyze(roofline.load_network(MODEL), None),
     f"hardware: {SPEC_OR_NAME} NoneType None"),
])
def test_a_wrong_argument_is_one_input_error(call, message):
    with pytest.raises(InputError) as caught:
        call()
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_one_int_is_one_point_of_a_sweep():
    # batches=64 is batches=[64]: the MLP at batch 64 on the V100, the same sweep; its first
    # GEMM fc1 forward is 64 x 4096 x 1024: 2 * 64 * 4096 * 1024 = 536,870,912 FLOPs
    one, listed = (roofline.sweep(MODEL, "v100", batches=b) for b in (64, [64]))
    assert one.batches == listed.batches == (64,)
    assert one.to_dict() == listed.to_dict()
    assert one.reports[0].results[0].gemm.flops == 536_870_912


def test_analyze_gemm_takes_a_name_as_every_call_does():
    gemm = roofline.gemm_report(64, 64, 64, "v100").results[0].gemm
    by_name = roofline.analyze_gemm(gemm, "v100")
    by_spec = roofline.analyze_gemm(gemm, roofline.load_hardware("v100"))
    assert by_name == by_spec


def test_analyze_takes_a_name_as_every_call_does():
    network = roofline.load_network(MODEL)
    by_name = roofline.analyze(network, "v100")
    assert by_name.totals == roofline.analyze(network, roofline.load_hardware("v100")).totals
    with pytest.raises(InputError, match=r"analyze_model\(path, hardware\)"):
        roofline.analyze(MODEL, "v100")


@pytest.mark.parametrize("spelling, name", [
    ("float16", "fp16"), ("half", "fp16"), ("FP16", "fp16"), ("bfloat16", "bf16"),
    ("float32", "fp32"), ("float64", "fp64"), ("float8_e4m3fn", "fp8"), ("bf16", "bf16")])
def test_a_dtype_takes_torchs_spellings(spelling, name):
    # the config.json's own spellings (its torch_dtype), which the missing-dtype hint names,
    # read as roofline's, as a torch.dtype or numpy dtype would be (str: "torch.float16")
    report = roofline.analyze_model(MODEL, "h100", dtype=spelling)
    assert report.network.dtype == name
    with pytest.raises(InputError, match="dtype: expected one of fp64, fp32, tf32, fp16, bf16, "
                                         "int8, fp8, got 'complex64'"):
        roofline.analyze_model(MODEL, "h100", dtype="complex64")


def test_a_result_prints_as_one_line():
    # the dataclasses' own reprs printed every result (6 KB for Llama-2-7B, 74 KB for a sweep
    # over 1..4096); the MLP at batch 512 on an A100, whose step the README's first output
    # gives (roof 67.9 us, predicted 128 us)
    report = roofline.analyze_model(MODEL, "a100")
    assert repr(report) == str(report) == (
        "<Report mlp-1024-4096-1000 on a100-sxm4-80gb: fp16, batch 512, train; step 67.9 us "
        "roof, 128 us predicted>")
    assert repr(roofline.compare(MODEL, ["v100", "a100"])) == (
        "<Comparison mlp-1024-4096-1000 on v100-sxm2-16gb, a100-sxm4-80gb>")
    assert repr(roofline.sweep(MODEL, "a100", batches="1..4096")) == (
        "<Sweep mlp-1024-4096-1000 on a100-sxm4-80gb: batch 1..4096 (13); 13 points>")
    # one value is that value, not a range of one ("seq 1279..1279 (1)")
    assert repr(roofline.sweep(LLAMA, "l4", batches="1..4", seqs=[1279], mode="inference",
                               phase="decode")) == (
        "<Sweep llama-2-7b on l4: batch 1..4 (3), seq 1279; 3 points>")
