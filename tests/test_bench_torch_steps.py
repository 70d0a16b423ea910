"""benchmarks/bench_torch_steps.py, the whole-step measuring stick: its bookkeeping with hand
figures (no timing asserted), and, marked slow, its core run on a tiny model for one repeat so
that the script cannot rot. The slow tests need torch (the `torch` extra; CI installs it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

try:
    import torch
except ImportError:  # CI installs the torch extra: there, a missing torch is a failure
    if os.environ.get("CI"):
        raise
    torch = None

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_torch_steps as bench  # noqa: E402

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed "
                                                       "(pip install 'roofline[torch]')")


def test_gemm_class_ops_are_products_and_convolutions():
    for op in ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear",
               "aten::mkldnn_convolution", "aten::_slow_conv2d_forward",
               "aten::_slow_conv2d_backward", "aten::convolution_backward", "aten::conv2d"):
        assert bench.is_gemm_op(op), op
    for op in ("aten::gelu", "aten::native_batch_norm", "aten::max_pool2d_with_indices",
               "aten::_softmax", "aten::add_", "aten::fill_",
               "autograd::engine::evaluate_function: AddmmBackward0"):
        assert not bench.is_gemm_op(op), op


def _row(samples, predicted, profile=None, by_op=None):
    case = bench.Case("tiny", lambda: None, lambda: (), "train", "sgd", "batch 2")
    return bench.Row(case, samples, predicted, 0.4 * predicted, 0.6 * predicted, by_op or {},
                     10**9, profile)


def test_row_statistics_by_hand():
    # per-step 1, 2, 3, 4, 10 ms: best 1, median 3; |x - 3| = 2, 1, 0, 1, 7 -> MAD 1 ms,
    # spread 1/3; predicted 0.8 ms -> measured / predicted 1 / 0.8 = 1.25
    row = _row((2e-3, 1e-3, 3e-3, 10e-3, 4e-3), 0.8e-3)
    assert row.best_s == pytest.approx(1e-3)
    assert row.median_s == pytest.approx(3e-3)
    assert row.spread == pytest.approx(1 / 3)
    assert row.ratio == pytest.approx(1.25)


def test_profile_split_and_misses():
    # wall 100 ms; GEMMs 50 + 20 ms; others 15 (gelu) + 5 (add_) + 0.5 (below 1% of the
    # step: left out of the misses) + 3 (autograd's own entry: in "other", not an aten op)
    prof = bench.Profile(0.1, {"aten::addmm": 0.05, "aten::bmm": 0.02, "aten::gelu": 0.015,
                               "aten::add_": 0.005, "aten::view": 0.0005,
                               "autograd::engine::evaluate_function: X": 0.003},
                         {"aten::gelu": 12, "aten::add_": 4})
    assert prof.gemm_s == pytest.approx(0.07)
    assert prof.other_s == pytest.approx(0.015 + 0.005 + 0.0005 + 0.003)
    row = _row((0.09,), 0.08, prof, {"gelu": 0.003})
    assert row.misses() == [("aten::gelu", 0.015, 0.003, 12), ("aten::add_", 0.005, None, 4)]
    # relu runs as clamp_min on the CPU; a reshape's copy_ is the capture's clone
    prof2 = bench.Profile(0.1, {"aten::clamp_min": 0.004, "aten::copy_": 0.002})
    assert _row((0.09,), 0.08, prof2, {"relu": 0.001, "clone": 0.0005}).misses() == [
        ("aten::clamp_min", 0.004, 0.001, 0), ("aten::copy_", 0.002, 0.0005, 0)]
    text = bench.render([row], markdown=True)
    # 90 / 80 ms = 1.125 <= 1.15: within; GEMMs 70 ms against 0.4 x 80 = 32 ms: 2.19;
    # others 23.5 against 48 ms: 0.49; gelu 15 / 3 = 5.00, 15 ms over 12 calls = 1.25 ms
    assert "| tiny | batch 2 | 1.0 | 90.0 | 90.0 | 0% | 80.0 | 1.12 | 70.0 / 32.0 = 2.19 | " \
           "23.5 / 48.0 = 0.49 | 100.0 |" in text
    assert "1 of 1 steps within 1.15x of the prediction" in text
    assert "| tiny | gelu | 12 | 15.0 | 1.25 | 3.0 | 5.00 |" in text
    assert "| tiny | add_ | 4 | 5.0 | 1.25 | - | - |" in text


def test_the_five_steps_of_issue_20():
    pytest.importorskip("torch")
    steps = bench.cases()
    assert list(steps) == ["mlp-train", "gpt2-forward", "bert-forward", "resnet50-forward",
                           "resnet50-train"]
    assert [(c.mode, c.optimizer) for c in steps.values()] == [
        ("train", "sgd"), ("inference", "none"), ("inference", "none"), ("inference", "none"),
        ("train", "sgd")]


def _tiny_mlp():
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8))


def _tiny_cnn():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 4 * 4, 10))


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("mode,optimizer,build,inputs", [
    ("train", "sgd", _tiny_mlp, lambda: (torch.randn(4, 16),)),
    ("inference", "none", _tiny_cnn, lambda: (torch.randn(2, 3, 8, 8),)),
])
def test_core_runs_a_tiny_step_once(mode, optimizer, build, inputs):
    case = bench.Case("tiny", build, inputs, mode, optimizer, "tiny")
    row = bench.run_case(case, "epyc-7763", repeats=1, warmups=0, min_timed_s=0,
                         say=lambda m: None)
    assert len(row.samples) == 1 and row.best_s > 0
    assert row.predicted_s == pytest.approx(row.predicted_gemm_s + row.predicted_other_s)
    assert row.predicted_gemm_s > 0 and row.predicted_other_s > 0
    assert row.profile is not None and row.profile.gemm_s > 0
    if optimizer == "sgd":  # the SGD update, predicted as the add_ each parameter gets
        assert row.predicted_by_op["add_"] > 0
    text = bench.render([row], markdown=False)
    assert text.splitlines()[0].startswith("step")


@needs_torch
def test_a_wrong_step_name_is_one_line_and_exit_2(capsys):
    assert bench.main(["--steps", "mlp-train,nope", "--hw", "epyc-7763"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("Error: unknown step nope (choose from mlp-train, ")
    assert len(err.splitlines()) == 1


@needs_torch
def test_an_unknown_entry_is_one_line_and_exit_2(capsys):
    assert bench.main(["--hw", "no-such-entry"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("Error: unknown hardware 'no-such-entry'")
    assert len(err.splitlines()) == 1


@needs_torch
def test_an_entry_not_calibrated_through_torch_is_one_line_and_exit_2(capsys):
    assert bench.main(["--hw", "epyc-7763"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("Error: epyc-7763 is not calibrated, and these steps run in torch: save one "
                   "with `roofline probe --library torch --save NAME`, or pass --probe")


def test_an_eval_batch_norm_is_classed_as_the_capture_names_it():
    prof = bench.Profile(0.1, {"aten::native_batch_norm": 0.004})
    case = bench.Case("tiny", lambda: None, lambda: (), "inference", "none", "batch 2")
    row = bench.Row(case, (0.09,), 0.08, 0.04, 0.04, {"_native_batch_norm_legit_no_training":
                                                      0.002}, 10**9, prof,
                    {"streaming": 0.002})
    assert row.by_class() == [("streaming", 0.004, 0.002)]
    assert row.misses() == [("aten::native_batch_norm", 0.004, 0.002, 0)]


def test_round_robin_times_every_step_once_per_round_and_spreads_the_rounds():
    """Two steps of 5 and 2 timed samples over 3 rounds: ceil(5/3) = 2 and ceil(2/3) = 1 per
    round, in the order a, a, b each round (6 and 3 samples); steps that take no time leave
    the whole 30 s span to the two pauses: 30 / 2 = 15 s, then the 15 s left / 1."""
    calls: list[str] = []
    pauses: list[float] = []

    def step(name: str):
        return lambda: calls.append(name)

    samples = bench.round_robin([(step("a"), 5), (step("b"), 2)], rounds=3, span_s=30.0,
                                sleep=pauses.append, say=lambda m: None)
    assert calls == ["a", "a", "b"] * 3
    assert [len(s) for s in samples] == [6, 3]
    assert len(pauses) == 2
    assert pauses[0] == pytest.approx(15.0, abs=0.1)
    assert pauses[1] == pytest.approx(30.0, abs=0.1)
    assert bench.round_robin([(step("c"), 1)], rounds=1, span_s=30.0, sleep=pauses.append,
                             say=lambda m: None) == [[pytest.approx(0.0, abs=0.1)]]
    assert len(pauses) == 2  # one round: no pause


def test_the_host_check_times_the_peak_kernel_once_a_round_against_the_entry():
    """A 2 GFLOP call timed 3 times a round on a fake clock: 0.02, 0.01, 0.03 s (best 0.01 s:
    200 GFLOP/s), then 0.025, 0.02, 0.04 (best 0.02: 100 GFLOP/s); the entry holds 250, so the
    rounds ran at 40-80% of it, and each round's line ends with its rate."""
    ticks = iter([0, 0.02, 1, 1.01, 2, 2.03, 3, 3.025, 4, 4.02, 5, 5.04])
    calls: list[int] = []
    check = bench.HostCheck("fp32 GEMM n=1000", calls.append, 2e9, 250e9,
                            clock=lambda: next(ticks))
    lines: list[str] = []
    bench.round_robin([(lambda: None, 2)], rounds=2, span_s=0.0, sleep=lambda s: None,
                      say=lines.append, check=check)
    assert calls == [1] * 6
    assert check.rates == [pytest.approx(200e9), pytest.approx(100e9)]
    assert lines[0].endswith("; fp32 GEMM n=1000 200 GFLOP/s")
    assert lines[1].endswith("; fp32 GEMM n=1000 100 GFLOP/s")
    assert check.line() == ("host: fp32 GEMM n=1000 (the entry's fp32 peak kernel) ran at "
                            "100-200 GFLOP/s through the rounds, 40%-80% of the 250.0 the "
                            "entry holds")
    # an entry whose calibration is not torch's has no such kernel to time
    from roofline.hardware.catalog import load_hardware

    assert bench.host_check(load_hardware("epyc-7763")) is None
    # one rate (bench_kept_weights times the kernel once, in its own rounds): 150 of 250
    from _host import host_line, peak_kernel

    assert host_line("fp32 GEMM n=1000", [150e9], 250e9) == (
        "host: fp32 GEMM n=1000 (the entry's fp32 peak kernel) ran at 150 GFLOP/s, 60% of the "
        "250.0 the entry holds")
    assert peak_kernel(load_hardware("epyc-7763")) is None  # a datasheet entry: no calibration


@pytest.mark.slow
@needs_torch
def test_run_cases_times_two_tiny_steps_in_rounds():
    cases = [bench.Case("mlp", _tiny_mlp, lambda: (torch.randn(4, 16),), "train", "sgd", "4"),
             bench.Case("cnn", _tiny_cnn, lambda: (torch.randn(2, 3, 8, 8),), "inference",
                        "none", "2")]
    rows = bench.run_cases(cases, "epyc-7763", repeats=3, warmups=0, profile=False, rounds=2,
                           span_s=0.0, min_timed_s=0, say=lambda m: None)
    assert [r.case.name for r in rows] == ["mlp", "cnn"]
    assert [len(r.samples) for r in rows] == [4, 4]  # ceil(3 / 2) = 2 a round, 2 rounds
    assert all(r.best_s > 0 and r.profile is None for r in rows)
