"""The shared timing loop, driven by a fake clock: no real time passes, no timing asserted."""

from __future__ import annotations

import pytest

from roofline.kernels.timing import BenchResult, calibrate_loops, measure
from roofline.output.probe_notes import note_text
from roofline.probe.runner import instability_note


class FakeClock:
    """Each ``run(loops)`` advances the clock by loops x the next per-call time."""

    def __init__(self, per_call_s):
        self.now = 0.0
        self.per_call = list(per_call_s)
        self.calls = []

    def __call__(self):
        return self.now

    def run(self, loops):
        self.calls.append(loops)
        self.now += loops * (self.per_call.pop(0) if len(self.per_call) > 1 else self.per_call[0])


def test_calibrate_jumps_to_the_target_then_stops():
    clock = FakeClock([1e-3])
    # 1 loop: 1 ms -> x16 (capped; 1.2 x 0.1 / 0.001 = 120) -> 16 loops: 16 ms
    # -> x7.5 -> 120 loops: 120 ms >= 100 ms, done
    assert calibrate_loops(clock.run, 0.1, clock) == 120
    assert clock.calls == [1, 16, 120]


def test_calibrate_keeps_one_loop_for_a_slow_kernel():
    clock = FakeClock([0.5])
    assert calibrate_loops(clock.run, 0.1, clock) == 1


def test_measure_keeps_warmups_apart_and_reports_per_call_statistics():
    # warmup 9 ms, then per-call 1, 2, 3, 4, 10 ms
    clock = FakeClock([9e-3, 1e-3, 2e-3, 3e-3, 4e-3, 10e-3])
    result = measure(clock.run, repeats=5, warmups=1, clock=clock, loops=1)
    assert result.warmups_s == pytest.approx((9e-3,))
    assert result.best_s == pytest.approx(1e-3)
    assert result.median_s == pytest.approx(3e-3)
    # |1-3|, |2-3|, 0, |4-3|, |10-3| -> median of (2, 1, 0, 1, 7) ms = 1 ms
    assert result.mad_s == pytest.approx(1e-3)
    assert result.spread == pytest.approx(1 / 3)
    assert result.unstable
    assert note_text(instability_note("fp32 GEMM", result)) == (
        "fp32 GEMM may be unstable: spread (MAD/median) 33%, best 1 ms, median 3 ms, "
        "worst 10 ms per call over 5 values; close other programs and rerun `roofline probe` "
        "(the full probe repeats more)")


def test_rates_and_dict():
    result = BenchResult((2e-3, 2e-3, 2e-3), (), loops=10)
    # 2 * 100^3 = 2e6 FLOP per call in 2 ms = 1e9 FLOP/s = 1 GFLOP/s
    data = result.to_dict(2e6, "FLOP", 1e9)
    assert data["best"] == pytest.approx(1.0)
    assert data["median"] == pytest.approx(1.0)
    assert (data["repeats"], data["loops"], data["spread"], data["unstable"]) == (3, 10, 0, False)
    assert instability_note("x", result) is None


def test_zero_time_is_rejected():
    with pytest.raises(ValueError, match="did not advance"):
        measure(lambda loops: None, clock=lambda: 1.0, loops=1)
    with pytest.raises(ValueError):
        BenchResult((), (), 1)


def test_bad_repeats():
    with pytest.raises(ValueError):
        measure(lambda loops: None, repeats=0)


def test_a_budget_stops_the_repeats_one_value_past_it_at_most():
    # a 1 s kernel, budget 2.5 s: calibration times 1 value (1 s >= 0.1 s: loops = 1); the
    # warm-up starts at 1 s (1 + 1 <= 2.5) and ends at 2 s; the next value would end at 3 s >
    # 2.5 s, so only the one value every measurement has is timed: 3 s in all
    clock = FakeClock([1.0])
    result = measure(clock.run, repeats=5, warmups=1, min_time_s=0.1, clock=clock,
                     budget_s=2.5)
    assert clock.calls == [1, 1, 1]
    assert result.warmups_s == (1.0,) and result.samples_s == (1.0,)
    assert result.cut and result.repeats_asked == 5
    assert clock.now == 3.0


def test_a_budget_shorter_than_one_value_skips_the_warmups():
    # calibration's 1 s value already spends a 0.5 s budget: no warm-up, one timed value
    clock = FakeClock([1.0])
    result = measure(clock.run, repeats=5, warmups=2, min_time_s=0.1, clock=clock,
                     budget_s=0.5)
    assert clock.calls == [1, 1]
    assert result.warmups_s == () and result.samples_s == (1.0,) and result.cut


def test_a_budget_stops_the_calibration_doubling():
    # 1 ms per call, target 0.1 s, budget 0.05 s: 1 loop (1 ms) -> x16 (16 ms, 17 ms spent);
    # x7.5 next would end at 17 + 120 = 137 ms > 50 ms: stay at 16 loops
    clock = FakeClock([1e-3])
    assert calibrate_loops(clock.run, 0.1, clock, budget_s=0.05) == 16
    assert clock.calls == [1, 16]


def test_within_the_budget_nothing_changes():
    clock = FakeClock([1e-3])
    result = measure(clock.run, repeats=5, warmups=1, min_time_s=0.1, clock=clock,
                     budget_s=10.0)
    assert clock.calls == [1, 16, 120] + [120] * 6
    assert not result.cut and result.repeats_asked is None and len(result.samples_s) == 5
