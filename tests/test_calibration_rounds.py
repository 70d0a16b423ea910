"""The calibration's rounds (probe.calibrate_rounds): which figures contradict their neighbours,
and the extra rounds they and a busy machine call for. Fake kernels on a fake clock and a fake
load meter; every figure is worked by hand, no real time passes."""

from __future__ import annotations

import dataclasses

import pytest

from roofline.kernels.cpu import Kernel
from roofline.output.probe_notes import note_text
from roofline.probe.calibrate import CalKernel
from roofline.probe.calibrate_rounds import MONOTONE_TOL, contradicting, quiet, time_rounds
from roofline.probe.plan import PRESETS
from roofline.probe.runner import Session


def cal(kind, size, dtype="fp32"):
    return CalKernel(dtype, kind, size, Kernel(f"{dtype} {kind} {size}", lambda loops: None,
                                               1.0, "FLOP"))


def test_a_figure_under_a_smaller_sizes_contradicts_it():
    kernels = [cal("square", 32), cal("square", 64), cal("square", 128), cal("square", 256),
               cal("thin", 1), cal("thin", 4), cal("thin", 16), cal("peak", 1024),
               cal("dram", 0, None)]
    effs = [0.3, 0.45, 0.40, 0.80, 0.25, 0.17, 0.6, None, None]
    # squares: 64 (0.45) then 128 at 0.40 >= 0.9 x 0.45 = 0.405? no: 0.40 < 0.405, flagged;
    # 256 rises again. Thin: M = 1 (the GEMV) is left out, so 0.17 at M = 4 is no drop
    assert MONOTONE_TOL == 0.10
    assert contradicting(kernels, effs) == [2]
    effs[2] = 0.41  # within 10 % of 0.45: a step the BLAS may have, not a contradiction
    assert contradicting(kernels, effs) == []
    effs[6] = 0.15  # thin M = 16 under 0.9 x M = 4's 0.17 = 0.153
    assert contradicting(kernels, effs) == [6]


def test_a_square_over_the_peak_flags_the_peak():
    kernels = [cal("peak", 1024), cal("square", 256), cal("square", 512),
               cal("peak", 1024, "fp64"), cal("square", 256, "fp64")]
    # fp32's square 512 at 1.2x the peak (over 1 + 10 %): the peak was slowed; fp64's 1.05 is
    # within the tolerance
    assert contradicting(kernels, [None, 0.9, 1.2, None, 1.05]) == [0]


def test_quiet_is_one_round_on_an_idle_machine_or_nothing_known():
    assert quiet([0.9, 0.1, 1.0]) and quiet([]) and quiet([None, None])
    assert not quiet([0.9, None, 0.5])


class Scripted:
    """A fake clock; kernel ``name`` costs ``per_call[name]`` a call, ``slow[name]`` (a factor)
    while the clock is before ``until[name]``."""

    def __init__(self, per_call, slow=None, until=None):
        self.now, self.per_call = 0.0, per_call
        self.slow, self.until = slow or {}, until or {}

    def __call__(self):
        return self.now

    def kernel(self, dtype, kind, size, work):
        name = f"{kind} {size}"

        def run(loops):
            factor = self.slow.get(name, 1.0) if self.now < self.until.get(name, 0.0) else 1.0
            self.now += loops * self.per_call[name] * factor

        return CalKernel(dtype, kind, size, Kernel(f"{dtype} {name}", run, work, "FLOP"))


class Laps:
    def __init__(self, loads):
        self.loads = list(loads)

    def lap(self):
        return self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]


PER_CALL = {"peak 1000": 0.01, "square 10": 0.002, "square 20": 0.00125, "dram 0": 0.05}


def session(clock, loads=(0.0,), extra=3):
    """fp32 peak 90 GFLOP/s and DRAM 10 GB/s as measured before the rounds, no per-call
    overhead; 2 rounds of one value (a warm call each), up to ``extra`` more; no warm-ups."""
    plan = dataclasses.replace(PRESETS["tiny"], cal_rounds=2, cal_values=1,
                               cal_extra_rounds=extra, warmups=0, cal_min_time_s=0.001)
    s = Session(plan, lambda message: None, clock)
    s.measured.update(gemm_gflops={"fp32": 90.0}, bandwidth_gbs={"dram": 10.0},
                      small_gemm_overhead_s=0.0)
    s.load_meter = lambda: Laps(loads)  # type: ignore[assignment,return-value]
    return s


def kernels(clock):
    # the peak GEMM 1e9 FLOP in 10 ms = 100 GFLOP/s; squares 1e8 FLOP: n = 10 in 2 ms
    # (50 GFLOP/s, 0.5 of the peak), n = 20 in 1.25 ms (80, 0.8); the read stream 1e9 B in
    # 50 ms = 20 GB/s
    return [clock.kernel("fp32", "peak", 1000, 1e9), clock.kernel("fp32", "square", 10, 1e8),
            clock.kernel("fp32", "square", 20, 1e8), clock.kernel(None, "dram", 0, 1e9)]


def test_a_contradicted_figure_gets_rounds_until_it_holds():
    # square 20 runs 2x slower (2.5 ms: 0.4 of the peak, under 0.9 x square 10's 0.5) before
    # 0.3 s. Setup: one call each (calibration: every call is over 1 ms, one loop), 64.5 ms;
    # two rounds of a warm call and a value each, 2 x (10 + 2 + 2.5 + 50) ms = 129 ms a round:
    # 322.5 ms, square 20 slow in both. One more round at 322.5 ms: 1.25 ms, 0.8, no
    # contradiction left, no more rounds
    clock = Scripted(PER_CALL, slow={"square 20": 2.0}, until={"square 20": 0.3})
    s = session(clock)
    best = time_rounds(s, kernels(clock))
    assert best == pytest.approx([0.01, 0.002, 0.00125, 0.05])
    rounds = s.details["calibration_rounds"]
    assert (rounds["rounds"], rounds["extra_rounds"]) == (3, 1)
    assert rounds["contradicting_first"] == ["fp32 square 20"]
    assert rounds["contradicting_left"] == [] and rounds["other_load_cpus"] == [0.0] * 3
    assert rounds["kernels"]["fp32 square 20"]["round_spread"] == pytest.approx(1.0)
    # the peak and the DRAM figure raised to the rounds' best (never lowered)
    assert s.measured["gemm_gflops"]["fp32"] == pytest.approx(100.0)
    assert s.measured["bandwidth_gbs"]["dram"] == pytest.approx(20.0)
    assert s.warnings == []


def test_what_stays_contradicted_is_named_after_the_extra_rounds():
    clock = Scripted(PER_CALL, slow={"square 20": 2.0}, until={"square 20": 1e9})
    s = session(clock, extra=2)
    time_rounds(s, kernels(clock))
    rounds = s.details["calibration_rounds"]
    assert (rounds["rounds"], rounds["extra_rounds"]) == (4, 2)
    assert rounds["contradicting_left"] == ["fp32 square 20"]
    (warning,) = s.warnings
    assert note_text(warning) == (
        "calibration: fp32 square 20 still contradicted a neighbouring size after 4 rounds "
        "(slower than a smaller size, or a square faster than the peak): a real step of the "
        "BLAS, or a machine busy throughout")


def test_a_busy_machine_gets_the_extra_rounds_and_a_warning():
    # other programs keep 1.0 CPU busy through every round: no contradiction, but no quiet
    # round either, so the rounds go on to the cap, and the result says so
    clock = Scripted(PER_CALL)
    s = session(clock, loads=(1.0,), extra=2)
    time_rounds(s, kernels(clock))
    assert s.details["calibration_rounds"]["rounds"] == 4
    assert [note_text(w) for w in s.warnings] == [
        "other programs kept 1.00 CPUs busy on average through every one of the calibration's "
        "4 rounds: its figures are those of a shared machine, where a multi-threaded BLAS "
        "call waits for its threads; rerun `roofline probe` when the machine is idle"]
    # one quiet round among them is enough: no extra round, no warning
    clock = Scripted(PER_CALL)
    s = session(clock, loads=(1.0, 0.05), extra=2)
    time_rounds(s, kernels(clock))
    assert s.details["calibration_rounds"]["rounds"] == 2 and s.warnings == []


def test_the_first_rounds_start_spread_over_the_span():
    # 3 rounds over 10 s: starts at 0, 5 and 10 s after the first; a round here takes
    # 2 x (10 + 2 + 1.25 + 50) ms = 126.5 ms, so the session idles 5 - 0.1265 s, then 5 s
    # less the second round's 126.5 ms
    clock = Scripted(PER_CALL)
    s = session(clock)
    s.plan = dataclasses.replace(s.plan, cal_rounds=3, cal_span_s=10.0)
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        clock.now += seconds

    s.sleep = sleep
    time_rounds(s, kernels(clock))
    assert slept == pytest.approx([5 - 0.1265, 5 - 0.1265])
    # the setup (one call of each kernel: 63.25 ms), then the last round starts 10 s later
    assert clock.now == pytest.approx(0.06325 + 10 + 0.1265)
    assert s.details["calibration_rounds"]["rounds"] == 3


def test_a_figure_the_rounds_raise_says_so():
    # measured before the rounds: fp32 90 GFLOP/s, DRAM 10 GB/s (``session``); the rounds time
    # the peak GEMM's 1e9 FLOP in 10 ms = 100 GFLOP/s and the read stream's 1e9 B in 50 ms =
    # 20 GB/s, so both figures are raised, and the result and the progress say from what: the
    # figure shown is no longer the one its own statistics hold
    clock = Scripted(PER_CALL)
    said = []
    s = session(clock)
    s.say = said.append
    time_rounds(s, kernels(clock))
    assert [note_text(n) for n in s.assumptions] == [
        "gemm_gflops.fp32 100 GFLOP/s is its kernel's best over the calibration's rounds "
        "(details.calibration_rounds), above the 90 of its own measurement (details.gemm_fp32): "
        "the figure a saved entry, and so analyze, uses, a best over the same span as the "
        "calibration's",
        "bandwidth_gbs.dram 20 GB/s is its kernel's best over the calibration's rounds "
        "(details.calibration_rounds), above the 10 of its own measurement "
        "(bandwidth_stats.dram): the figure a saved entry, and so analyze, uses, a best over "
        "the same span as the calibration's"]
    assert said[-2:] == [
        "  gemm_gflops.fp32 100 GFLOP/s: the rounds' best, above its own measurement's 90",
        "  bandwidth_gbs.dram 20 GB/s: the rounds' best, above its own measurement's 10"]
    # a figure the rounds do not pass is left alone, and unsaid: a peak of 150 GFLOP/s and a
    # DRAM figure of 25 GB/s stay as they are (never lowered)
    clock = Scripted(PER_CALL)
    s = session(clock)
    s.measured.update(gemm_gflops={"fp32": 150.0}, bandwidth_gbs={"dram": 25.0})
    time_rounds(s, kernels(clock))
    assert s.assumptions == []
    assert (s.measured["gemm_gflops"]["fp32"], s.measured["bandwidth_gbs"]["dram"]) == (150.0,
                                                                                        25.0)


def test_the_widest_gap_between_rounds_is_a_ratio_naming_its_kernel():
    # a round preempted at 0.59 s against 1 ms at best: 0.59 / 0.001 = 590x (a percentage wrote
    # it as 58,900%); two rounds 1.0 and 1.3 ms: 1.3x
    from roofline.kernels.timing import BenchResult
    from roofline.probe.calibrate_rounds import spread_text

    preempted = BenchResult((0.001, 0.59), (), 1, round_best_s=(0.001, 0.59))
    assert spread_text("fp64 GEMM 32x32x32", preempted) == (
        "rounds at most 590x apart at their best (fp64 GEMM 32x32x32)")
    steady = BenchResult((0.001, 0.0013), (), 1, round_best_s=(0.001, 0.0013))
    assert spread_text("read stream", steady).startswith("rounds at most 1.3x apart")


def test_a_progress_line_gives_efficiencies_as_percentages_by_size():
    """The calibration's progress line printed Python's dicts, ``{'32': 0.2769, '64':
    0.4522}``; it now reads ``32: 28%, 64: 45%`` (27.69% and 45.22% rounded)."""
    from roofline.probe.calibrate import _shares

    assert _shares({"32": 0.2769, "64": 0.4522}) == "32: 28%, 64: 45%"
    assert _shares({}) == ""
