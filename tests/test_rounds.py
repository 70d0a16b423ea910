"""Round-robin timing (kernels.rounds) and other programs' load (kernels.load), driven by fake
clocks and a fake /proc/stat: no real time passes, no timing asserted. Every figure below is
worked by hand from the scripted per-call times."""

from __future__ import annotations

import pytest

from roofline.kernels import load as load_mod
from roofline.kernels.load import LoadMeter, busy_seconds
from roofline.kernels.rounds import RoundRobin, measure_rounds
from roofline.kernels.timing import BenchResult, measure


class Machine:
    """A fake clock and kernels: kernel ``name`` costs ``per_call[name]`` seconds a call,
    times ``slow`` while the clock is inside the slow spell ``[spell)``; ``calls`` logs
    ``(name, loops)``."""

    def __init__(self, per_call, spell=(0.0, 0.0), slow=1.0):
        self.now, self.per_call, self.spell, self.slow = 0.0, dict(per_call), spell, slow
        self.calls = []

    def __call__(self):
        return self.now

    def kernel(self, name):
        def run(loops):
            self.calls.append((name, loops))
            inside = self.spell[0] <= self.now < self.spell[1]
            self.now += loops * self.per_call[name] * (self.slow if inside else 1.0)

        return run


def test_rounds_take_turns_and_warm_each_kernel_before_its_values():
    # a: 1 ms a call, min_time 2 ms: calibration 1 loop (1 ms) -> 2 loops (2 ms); b: 5 ms,
    # 1 loop. Each round: a's warm call (its values are 2 calls), a's two values, then b's two
    # values with no warm call (one call each: the second value is warm)
    m = Machine({"a": 1e-3, "b": 5e-3})
    timer = RoundRobin([m.kernel("a"), m.kernel("b")], 2e-3, warmups=1, clock=m)
    assert m.calls == [("a", 1), ("a", 2), ("a", 2), ("b", 1), ("b", 1)]
    m.calls.clear()
    assert timer.rounds(2, values=2) == 2
    one_round = [("a", 1), ("a", 2), ("a", 2), ("b", 1), ("b", 1)]
    assert m.calls == one_round * 2
    a, b = timer.results()
    assert a.loops == 2 and a.samples_s == pytest.approx((1e-3,) * 4)
    assert b.warmups_s == pytest.approx((5e-3,)) and len(b.samples_s) == 4
    assert a.round_best_s == pytest.approx((1e-3, 1e-3)) and a.round_spread == 0


def test_one_value_a_round_gets_a_warm_call_whatever_its_loops():
    m = Machine({"b": 5e-3})
    timer = RoundRobin([m.kernel("b")], 2e-3, warmups=0, clock=m)
    m.calls.clear()
    timer.rounds(1, values=1)
    assert m.calls == [("b", 1), ("b", 1)]
    timer = RoundRobin([m.kernel("b")], 2e-3, warmups=0, clock=m, warm=False)
    m.calls.clear()
    timer.rounds(1, values=1)
    assert m.calls == [("b", 1)]


def test_a_slow_spell_slows_a_round_not_the_figure():
    # two 10 ms kernels (one loop a value); a call started from 95 to 155 ms runs 3x slower.
    # The setup (calibration and warm-up of each: 4 calls) takes 0-40 ms, then rounds of a, a,
    # b, b: round 1 40-80 ms; round 2 a 80-100 ms, b from 100 ms inside the spell (30 ms a
    # value, to 160 ms); round 3 160-200 ms, fast again. Each best is 10 ms; b's rounds 3x apart
    m = Machine({"a": 0.01, "b": 0.01}, spell=(0.095, 0.155), slow=3.0)
    a, b = measure_rounds([m.kernel("a"), m.kernel("b")], rounds=3, values=2,
                          min_time_s=0.005, clock=m)
    assert a.best_s == pytest.approx(0.01) and b.best_s == pytest.approx(0.01)
    assert a.round_best_s == pytest.approx((0.01, 0.01, 0.01))
    assert b.round_best_s == pytest.approx((0.01, 0.03, 0.01))
    assert b.round_spread == pytest.approx(2.0)
    # the same kind of spell over a kernel timed back to back (timing.measure: calibration,
    # warm-up, 4 values) covers all its values: its figure is the spell's 30 ms
    m = Machine({"a": 0.01}, spell=(0.10, 1.0), slow=3.0)
    m.now = 0.10
    assert measure(m.kernel("a"), repeats=4, warmups=1, min_time_s=0.005,
                   clock=m).best_s == pytest.approx(0.03)


def test_a_budget_stops_the_rounds_after_the_first():
    # one 1 s kernel, 2 values a round, budget 4.5 s: calibration 1 s, warm-up to 2 s; round 1
    # (2 values, to 4 s); round 2 would take 2 s more, past 4.5 s: not started
    m = Machine({"a": 1.0})
    (a,) = measure_rounds([m.kernel("a")], rounds=3, values=2, min_time_s=0.1, clock=m,
                          budget_s=4.5)
    assert m.now == 4.0 and len(a.samples_s) == 2
    assert a.cut and a.repeats_asked == 6


def test_bad_arguments():
    m = Machine({"a": 1.0})
    with pytest.raises(ValueError):
        RoundRobin([m.kernel("a")], 0.1, warmups=-1, clock=m)
    with pytest.raises(ValueError):
        RoundRobin([m.kernel("a")], 0.1, clock=m).rounds(1, values=0)


def test_round_spread_by_hand():
    result = BenchResult((1.0, 1.2, 1.5), (), 1, round_best_s=(1.0, 1.5, 1.2))
    assert result.round_spread == pytest.approx(0.5)
    assert BenchResult((1.0,), (), 1).round_spread == 0.0


class Counters:
    """A fake /proc/stat busy counter, this process's CPU time and a clock, set by hand."""

    def __init__(self):
        self.busy, self.own, self.now = 100.0, 5.0, 0.0


def test_other_programs_load_is_the_busy_time_not_ours():
    c = Counters()
    meter = LoadMeter(lambda: c.busy, lambda: c.own, lambda: c.now)
    # 2 s: the CPUs counted 3 s busy, 1.8 s of it ours: others kept 1.2 / 2 = 0.6 CPUs busy
    c.busy, c.own, c.now = 103.0, 6.8, 2.0
    assert meter.lap() == pytest.approx(0.6)
    # 1 s more, all of the busy time ours: 0 (and never below, whatever the rounding)
    c.busy, c.own, c.now = 104.9, 8.8, 3.0
    assert meter.lap() == 0.0
    # since the start: (4.9 - 3.8) / 3 s
    assert meter.total() == pytest.approx(1.1 / 3)
    assert meter.laps == pytest.approx([0.6, 0.0])


def test_our_children_count_as_ours(monkeypatch):
    # 2 s of process time, and 1.5 s of a child's user and 0.5 s of its system time: 4 s
    monkeypatch.setattr(load_mod.time, "process_time", lambda: 2.0)
    monkeypatch.setattr(load_mod.os, "times", lambda: load_mod.os.times_result(
        (0.0, 0.0, 1.5, 0.5, 0.0)))
    assert load_mod.own_seconds() == pytest.approx(4.0)


def test_no_busy_counter_no_load():
    meter = LoadMeter(lambda: None, lambda: 0.0, lambda: 1.0)
    assert meter.lap() is None and meter.total() is None and meter.laps == []


def test_busy_seconds_reads_proc_stat(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal: busy = 100+2+30+1+2+5 = 140 ticks
    stat.write_text("cpu  100 2 30 5000 7 1 2 5 0 0\ncpu0 50 1 15 2500 3 0 1 2 0 0\n")
    monkeypatch.setattr(load_mod.os, "sysconf", lambda name: 100)
    assert busy_seconds(str(stat)) == pytest.approx(1.4)
    assert busy_seconds(str(tmp_path / "missing")) is None
    stat.write_text("cpu  1 2\n")
    assert busy_seconds(str(stat)) is None
