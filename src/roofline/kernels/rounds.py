"""Round-robin timing: several kernels timed in turns, a few values each per round, over
rounds spread across the whole measurement, so that one slow spell of a shared machine (another
program on a core the BLAS's threads need, the memory's speed moving) slows one round of every
kernel, not every value of one: a kernel's figure is its best over the rounds (``best_s``), and
``BenchResult.round_best_s`` keeps each round's best, whose spread says how much the machine
moved while it was timed.

``RoundRobin`` first calibrates each kernel's loops as ``timing.measure`` does (doubling until
one value lasts ``min_time_s``) and runs its warm-up values; each round then times ``values``
values of every kernel in turn. The kernel timed before has evicted this one's operands from
the caches, where back-to-back values found them warm, so with ``warm`` a round first makes one
untimed call, unless the kernel's values are one call each and there are two or more of them
(the second is then as warm as back-to-back values were, and an extra call of a large kernel
would double its time). ``rounds`` can be called again for more rounds (the calibration's
re-timing). The clock is injectable, so the order and the statistics are tested without real
time passing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .timing import MAX_LOOPS, BenchResult, Clock, _calibrate, time_once

Run = Callable[[int], object]


@dataclass
class _Timed:
    loops: int
    value_s: float  # one value's seconds, as last timed (or the minimum asked for)
    warmups: list[float] = field(default_factory=list)
    samples: list[float] = field(default_factory=list)
    round_best: list[float] = field(default_factory=list)


class RoundRobin:
    """Kernels ``runs`` (each ``run(loops)``) calibrated and warmed up; ``rounds`` times them.

    With ``budget_s`` (seconds from construction) no kernel's loops grow past it, a warm-up
    is not started when the last value's time would take the whole past it, a round is not
    started when the last round's would (the first always is, so every kernel has a value),
    and in a round a kernel whose values would pass it times one, without a warm call."""

    def __init__(self, runs: Sequence[Run], min_time_s: float, warmups: int = 1,
                 clock: Clock = time.perf_counter, warm: bool = True,
                 budget_s: float | None = None) -> None:
        if warmups < 0:
            raise ValueError("warmups must be >= 0")
        self.runs, self.clock, self.warm, self.budget_s = list(runs), clock, warm, budget_s
        self.start, self.rounds_run, self.asked = clock(), 0, 0
        self.timed = [self._begin(run, min_time_s, warmups) for run in self.runs]

    def _left(self) -> float | None:
        return None if self.budget_s is None else self.budget_s - (self.clock() - self.start)

    def _over(self, next_s: float) -> bool:
        left = self._left()
        return left is not None and next_s > left

    def _begin(self, run: Run, min_time_s: float, warmups: int) -> _Timed:
        loops, last = _calibrate(run, min_time_s, self.clock, MAX_LOOPS, self._left())
        state = _Timed(loops, last or min_time_s)
        for _ in range(warmups):
            if self._over(state.value_s):
                break
            state.value_s = time_once(run, loops, self.clock)
            state.warmups.append(state.value_s / loops)
        return state

    def rounds(self, count: int, values: int = 1,
               after_round: Callable[[int], object] | None = None) -> int:
        """Run up to ``count`` rounds of ``values`` values of each kernel in turn (within the
        budget, see the class docstring); the number run. ``after_round(index)`` is called
        after each round (index counts every round this object ran)."""
        if values < 1:
            raise ValueError("values must be >= 1")
        self.asked += count * values
        last, done = 0.0, 0
        while done < count and self.runs:
            if (done or self.rounds_run) and self._over(last):
                break
            began = self.clock()
            for i in range(len(self.runs)):
                self._round(i, values)
            last, done = self.clock() - began, done + 1
            if after_round is not None:
                after_round(self.rounds_run)
            self.rounds_run += 1
        return done

    def _round(self, i: int, values: int) -> None:
        run, state = self.runs[i], self.timed[i]
        if self._over(values * state.value_s):
            values = 1  # past the budget: one value, no warm call
        elif self.warm and (state.loops > 1 or values == 1):
            run(1)
        times = [time_once(run, state.loops, self.clock) for _ in range(values)]
        state.value_s = times[-1]
        times = [t / state.loops for t in times]
        state.samples += times
        state.round_best.append(min(times))

    def result(self, i: int) -> BenchResult:
        """Kernel ``i``'s values over every round it ran in (``repeats_asked`` set when the
        budget left fewer than the rounds asked for)."""
        state = self.timed[i]
        cut = len(state.samples) < self.asked
        return BenchResult(tuple(state.samples), tuple(state.warmups), state.loops,
                           self.asked if cut else None, tuple(state.round_best))

    def results(self) -> list[BenchResult]:
        return [self.result(i) for i in range(len(self.runs))]


def measure_rounds(runs: Sequence[Run], rounds: int, values: int = 1, warmups: int = 1,
                   min_time_s: float = 0.005, clock: Clock = time.perf_counter,
                   budget_s: float | None = None, warm: bool = True) -> list[BenchResult]:
    """Each of ``runs`` timed in ``rounds`` round-robin rounds of ``values`` values (see the
    module docstring and ``RoundRobin``)."""
    timer = RoundRobin(runs, min_time_s, warmups, clock, warm, budget_s)
    timer.rounds(rounds, values)
    return timer.results()
