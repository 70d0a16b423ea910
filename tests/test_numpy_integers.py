"""Integers out of numpy (a notebook's ``np.int64(8)``, ``np.arange(1, 5)``) are integers to
every integer parameter of the library (``files.numbers.integer``: whatever ``operator.index``
takes), each call giving what the same call with Python's ints gives; bools, floats (even
whole ones), numpy's bools and floats, and arrays of the wrong shape are refused in one line
that names the parameter and the value. The library itself never imports numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import roofline
from roofline import InputError
from roofline.files.numbers import integer

MODEL = Path(__file__).resolve().parents[1] / "examples" / "mlp-1024-4096-1000.yaml"
LLAMA = MODEL.parent / "hf" / "llama-2-7b.json"
SERVING = {"mode": "inference", "phase": "prefill"}


@pytest.mark.parametrize("value, expected", [
    (8, 8), (np.int64(8), 8), (np.int32(8), 8), (np.uint8(8), 8), (np.uint64(2**63), 2**63),
    (np.array(8), 8),  # a 0-d array is one number to operator.index
    (True, None), (np.True_, None), (np.array(True), None), (8.0, None), (np.float64(8), None),
    ("8", None), (None, None), (np.array([8]), None), (b"8", None)])
def test_what_an_integer_is(value, expected):
    got = integer(value)
    assert got == expected
    assert got is None or type(got) is int  # Python's: no product of it wraps at 2**63


def _same(numpy_call, plain_call):
    """The two calls' results, every number of their JSON alike."""
    assert numpy_call().to_dict() == plain_call().to_dict()


@pytest.mark.parametrize("name, numpy_call, plain_call", [
    ("batch", lambda: roofline.analyze_model(MODEL, "v100", batch=np.int64(8)),
     lambda: roofline.analyze_model(MODEL, "v100", batch=8)),
    ("seq", lambda: roofline.analyze_model(LLAMA, "h100", batch=np.int32(2), seq=np.int64(128),
                                           **SERVING),
     lambda: roofline.analyze_model(LLAMA, "h100", batch=2, seq=128, **SERVING)),
    ("group_size", lambda: roofline.analyze_model(LLAMA, "h100", batch=1, seq=64,
                                                  weights="int4", group_size=np.int64(64),
                                                  **SERVING),
     lambda: roofline.analyze_model(LLAMA, "h100", batch=1, seq=64, weights="int4",
                                    group_size=64, **SERVING)),
    ("prompt, generate", lambda: roofline.analyze_model(LLAMA, "h100", batch=np.int64(1),
                                                        prompt=np.int64(100),
                                                        generate=np.uint16(8)),
     lambda: roofline.analyze_model(LLAMA, "h100", batch=1, prompt=100, generate=8)),
    ("batches array", lambda: roofline.sweep(MODEL, "v100", batches=np.array([1, 8, 64])),
     lambda: roofline.sweep(MODEL, "v100", batches=[1, 8, 64])),
    ("batches arange", lambda: roofline.sweep(MODEL, "v100", batches=np.arange(1, 5)),
     lambda: roofline.sweep(MODEL, "v100", batches=[1, 2, 3, 4])),
    ("batches numpy list", lambda: roofline.sweep(MODEL, "v100",
                                                  batches=[np.int64(4), np.int8(2)]),
     lambda: roofline.sweep(MODEL, "v100", batches=[2, 4])),
    ("one batch", lambda: roofline.sweep(MODEL, "v100", batches=np.int64(64)),
     lambda: roofline.sweep(MODEL, "v100", batches=64)),
    ("seqs", lambda: roofline.sweep(LLAMA, "h100", batches=[1], seqs=np.array([128, 256]),
                                    **SERVING),
     lambda: roofline.sweep(LLAMA, "h100", batches=[1], seqs=[128, 256], **SERVING)),
    ("sweep's batch", lambda: roofline.sweep(LLAMA, "h100", seqs=[64], batch=np.int64(2),
                                             **SERVING),
     lambda: roofline.sweep(LLAMA, "h100", seqs=[64], batch=2, **SERVING)),
    ("sweep's generations", lambda: roofline.sweep(LLAMA, "h100", batches=np.array([1, 4]),
                                                   prompt=np.int64(64), generate=np.int64(4)),
     lambda: roofline.sweep(LLAMA, "h100", batches=[1, 4], prompt=64, generate=4)),
    ("compare's batch", lambda: roofline.compare(MODEL, ["v100", "a100"], batch=np.int64(32)),
     lambda: roofline.compare(MODEL, ["v100", "a100"], batch=32)),
    ("compare's generation", lambda: roofline.compare(LLAMA, ["h100", "a100"], batch=1,
                                                      prompt=np.int64(64),
                                                      generate=np.int64(4)),
     lambda: roofline.compare(LLAMA, ["h100", "a100"], batch=1, prompt=64, generate=4)),
    ("gemm_report", lambda: roofline.gemm_report(np.int64(512), np.int32(4096), np.uint16(1024),
                                                 "a100"),
     lambda: roofline.gemm_report(512, 4096, 1024, "a100")),
    ("Network, Linear", lambda: roofline.analyze(roofline.Network(
        "n", np.int64(8), "fp16", "train", (roofline.Linear("fc", np.int64(1024),
                                                            np.int32(4096)),)), "v100"),
     lambda: roofline.analyze(roofline.Network(
         "n", 8, "fp16", "train", (roofline.Linear("fc", 1024, 4096),)), "v100")),
])
def test_numpy_integers_give_what_python_ints_give(name, numpy_call, plain_call):
    _same(numpy_call, plain_call)


def test_a_numpy_batch_runs_that_batch():
    # by hand: the MLP's fc1 forward at batch 8 is 8 x 4096 x 1024, 2 * 8 * 4096 * 1024 =
    # 67,108,864 FLOPs; the Report holds Python's ints (JSON prints them)
    report = roofline.analyze_model(MODEL, "v100", batch=np.int64(8))
    first = report.results[0].gemm
    assert (first.m, first.n, first.k, first.flops) == (8, 4096, 1024, 67_108_864)
    assert type(report.batch) is type(first.m) is int


def test_gemm_and_its_functions_take_numpy_integers_as_pythons():
    # numpy's int64 products wrap: 2 * 2**30 * 2**30 * 2**30 is 2**91, which int64 gives as 0
    # (with a RuntimeWarning); read as Python's ints, 2**91 = 2,475,880,078,570,760,549,798,248,448
    big = np.int64(2**30)
    assert roofline.gemm_flops(big, big, big) == 2_475_880_078_570_760_549_798_248_448
    # (M, N, K) = (4, 6, 5) in fp32: bytes 4 (4*5 + 5*6 + 4*6) = 296, FLOPs 2*4*6*5 = 240
    m, n, k = np.int64(4), np.int32(6), np.uint8(5)
    assert roofline.gemm_bytes(m, n, k, "fp32") == 296
    assert roofline.gemm_intensity(m, n, k, "fp32") == pytest.approx(240 / 296)
    gemm = roofline.Gemm("MM1", "fc", "forward", m, n, k, "fp32", batch_count=np.int64(2))
    assert (gemm.m, gemm.n, gemm.k, gemm.batch_count, gemm.flops) == (4, 6, 5, 2, 480)
    assert all(type(v) is int for v in (gemm.m, gemm.n, gemm.k, gemm.batch_count))
    with pytest.raises(ValueError, match=r"^m must be a positive integer, got np\.True_$"):
        roofline.Gemm("MM1", "fc", "forward", np.True_, 6, 5, "fp32")
    with pytest.raises(ValueError, match=r"^k must be a positive integer, got 5\.0$"):
        roofline.gemm_flops(4, 6, 5.0)


def test_analyze_gemms_batches_take_numpy_integers():
    gemm = roofline.gemm_report(64, 4096, 4096, "a100").results[0].gemm
    assert (roofline.analyze_gemm(gemm, "a100", max_batch=np.int64(32), captured_batch=np.int64(64))
            == roofline.analyze_gemm(gemm, "a100", max_batch=32, captured_batch=64))
    for key in ("max_batch", "captured_batch"):
        with pytest.raises(InputError, match=rf"^{key}: expected a.* integer.*, got 32\.0$"):
            roofline.analyze_gemm(gemm, "a100", **{key: 32.0})


def _refused(call, message):
    with pytest.raises(InputError) as caught:
        call()
    text = str(caught.value)
    assert text == message
    assert "\n" not in text


@pytest.mark.parametrize("value, shown", [
    (True, "True"), (8.0, "8.0"), (np.float64(8), repr(np.float64(8))),  # np.float64(8.0)
    (np.float32(8.5), repr(np.float32(8.5))), (np.True_, repr(np.True_)),  # np.True_
    (np.array([[8]]), "a 2-d ndarray of shape (1, 1)")])
@pytest.mark.parametrize("key", ["batch", "seq", "group_size"])
def test_a_setting_that_is_no_integer_is_refused_by_name(key, value, shown):
    settings = {"batch": 1, "seq": 64, "weights": "int4", **SERVING, key: value}
    _refused(lambda: roofline.analyze_model(LLAMA, "h100", **settings),
             f"overrides: {key}: expected a positive integer, got {shown}")


@pytest.mark.parametrize("kwargs, message", [
    ({"batches": np.array([[1, 2]])},
     "batches: expected a list of positive integers, got a 2-d ndarray of shape (1, 2)"),
    ({"batches": np.array(4)},  # a 0-d array: one number or a list? Neither, said so
     "batches: expected a list of positive integers, got array(4)"),
    ({"batches": np.array([1.0, 2.0])},
     f"batches: expected positive integers, got {np.float64(1.0)!r}"),
    ({"batches": np.array([True, False])}, f"batches: expected positive integers, got "
                                           f"{np.True_!r}"),
    ({"batches": [8, np.float64(16)]},
     f"batches: expected positive integers, got {np.float64(16)!r}"),
    ({"batches": np.array([0, 8])}, "batches: expected positive integers, got 0"),
    ({"batches": np.True_}, f"batches: expected an integer, a list of them or text (1,8,64 "
                            f"or 1..512), got {type(np.True_).__name__} {np.True_!r}"),
    ({"batches": np.float64(8)}, f"batches: expected an integer, a list of them or text "
                                 f"(1,8,64 or 1..512), got float64 {np.float64(8)!r}"),
    ({"batches": [2**41]}, "batches: 2199023255552 is out of range (at most 2**40 = "
                           "1099511627776)"),
    ({"batches": b"\x08"}, "batches: expected a list of positive integers, got a bytes"),
    ({"batches": [1], "seqs": np.arange(4).reshape(2, 2)},
     "seqs: expected a list of positive integers, got a 2-d ndarray of shape (2, 2)"),
])
def test_a_list_that_is_no_list_of_integers_is_refused_by_name(kwargs, message):
    _refused(lambda: roofline.sweep(MODEL, "v100", **kwargs), message)


@pytest.mark.parametrize("call, message", [
    (lambda: roofline.analyze_model(LLAMA, "h100", batch=1, prompt=np.float64(64), generate=4),
     f"{LLAMA}: prompt: expected a positive integer, got {np.float64(64)!r}"),
    (lambda: roofline.sweep(LLAMA, "h100", batches=[1], prompt=64, generate=np.True_),
     f"{LLAMA}: generate: expected a positive integer, got {np.True_!r}"),
    (lambda: roofline.compare(LLAMA, ["h100", "a100"], batch=1, prompt=True, generate=4),
     f"{LLAMA}: prompt: expected a positive integer, got True"),
    (lambda: roofline.gemm_report(np.float64(64), 64, 64, "v100"),
     f"gemm: M: expected a positive integer, got {np.float64(64)!r}"),
    (lambda: roofline.gemm_report(64, np.array([[64]]), 64, "v100"),
     "gemm: N: expected a positive integer, got a 2-d ndarray of shape (1, 1)"),
    (lambda: roofline.Network("n", True, "fp16", "train", ()),
     "<model>: batch: expected an integer, got True"),
    (lambda: roofline.Linear("fc", 1024, np.float64(4096)),
     f"fc: out_features: expected an integer, got {np.float64(4096)!r}"),
])
def test_other_integer_parameters_refuse_by_name(call, message):
    _refused(call, message)


def test_a_factorys_batch_is_checked_and_given_as_an_int(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    (tmp_path / "np_factory.py").write_text(
        "import torch\nSEEN = []\n\ndef make(batch=2):\n    SEEN.append(batch)\n"
        "    return torch.nn.Linear(64, 32), torch.zeros(batch, 64)\n")
    monkeypatch.chdir(tmp_path)
    try:
        report = roofline.analyze_model("np_factory:make", "h100", batch=np.int64(4),
                                        mode="inference")
        seen = sys.modules["np_factory"].SEEN  # the module the capture imported
        assert seen == [4] and type(seen[0]) is int
        assert report.batch == 4
        _refused(lambda: roofline.analyze_model("np_factory:make", "h100",
                                                batch=np.float64(4)),
                 f"overrides: batch: expected a positive integer, got {np.float64(4)!r}")
        assert seen == [4]  # refused before the factory ran
    finally:
        sys.modules.pop("np_factory", None)


def test_reading_integers_imports_no_numpy(tmp_path):
    code = ("import sys, roofline\n"
            f"roofline.sweep({str(MODEL)!r}, 'v100', batches=[1, 2])\n"
            "for bad in (True, 8.0, [8]):\n"
            "    try:\n"
            f"        roofline.analyze_model({str(MODEL)!r}, 'v100', batch=bad)\n"
            "    except roofline.InputError:\n"
            "        pass\n"
            "print([m for m in ('numpy', 'torch') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.strip() == "[]"
