"""One calibrated timing loop, shared by every probe kernel (the pyperf recipe).

A kernel is ``run(loops)``: it does its work ``loops`` times. ``measure`` first calibrates
``loops`` (doubling) until one timed value lasts ``min_time_s``, keeps ``warmups`` values
apart, then times ``repeats`` values and reports per-call seconds: best, median, MAD, spread.
With a ``budget_s`` no measurement outlasts it by more than one value: calibration stops
doubling, and warm-ups then repeats stop, when the next value would pass it (at least one
value is always timed; ``BenchResult.cut`` says the repeats were cut short). The clock is
injectable, so the statistics are tested without real time passing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]
MAX_LOOPS = 2**24
UNSTABLE_SPREAD = 0.10  # MAD / median above this: "may be unstable" (pyperf: std >= 10%)
UNSTABLE_RANGE = 0.50  # worst value this much slower than the best one


@dataclass(frozen=True)
class BenchResult:
    """Per-call times of one measurement: ``samples_s`` are the timed values, divided by
    ``loops``; ``warmups_s`` were run the same way and are not part of the statistics."""

    samples_s: tuple[float, ...]
    warmups_s: tuple[float, ...]
    loops: int
    repeats_asked: int | None = None  # set when a time budget cut the repeats short
    round_best_s: tuple[float, ...] = ()  # each round's best, when timed in rounds (rounds.py)

    @property
    def cut(self) -> bool:
        """Whether a time budget stopped the repeats before all asked for were timed."""
        return self.repeats_asked is not None and len(self.samples_s) < self.repeats_asked

    def __post_init__(self) -> None:
        if not self.samples_s or min(self.samples_s) <= 0:
            raise ValueError("a measurement needs at least one positive time")

    @property
    def best_s(self) -> float:
        return min(self.samples_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.samples_s)

    @property
    def mad_s(self) -> float:
        """Median absolute deviation from the median, in seconds per call."""
        med = self.median_s
        return statistics.median(abs(s - med) for s in self.samples_s)

    @property
    def spread(self) -> float:
        """MAD relative to the median (0.02 = 2 %)."""
        return self.mad_s / self.median_s

    @property
    def round_spread(self) -> float:
        """The slowest round's best over the fastest one's, less 1 (0.3: one round of the
        kernel ran 30 % slower at its best than another); 0 without two rounds."""
        rounds = self.round_best_s
        return max(rounds) / min(rounds) - 1 if len(rounds) > 1 else 0.0

    @property
    def unstable(self) -> bool:
        """pyperf's checks: MAD >= 10 % of the median, or the worst value 50 % off the best."""
        worst_off = max(self.samples_s) > (1 + UNSTABLE_RANGE) * self.best_s
        return self.spread > UNSTABLE_SPREAD or (len(self.samples_s) > 2 and worst_off)

    def rate(self, work: float) -> tuple[float, float]:
        """(best, median) rate for ``work`` units per call, e.g. FLOP/s or B/s."""
        return work / self.best_s, work / self.median_s

    def to_dict(self, work: float | None = None, unit: str = "", scale: float = 1.0) -> dict:
        """Raw statistics; with ``work``, also best/median rates in ``unit`` (rate / scale)."""
        data: dict[str, float | str] = {
                "best_s": self.best_s, "median_s": self.median_s, "mad_s": self.mad_s,
                "spread": self.spread, "repeats": len(self.samples_s), "loops": self.loops,
                "warmups": len(self.warmups_s), "unstable": self.unstable}
        if work is not None:
            best, median = self.rate(work)
            data.update({"work": work, "unit": unit, "best": best / scale,
                         "median": median / scale})
        return data


def time_once(run: Callable[[int], object], loops: int, clock: Clock) -> float:
    """Seconds one call of ``run(loops)`` takes on ``clock``; a zero or negative time raises."""
    start = clock()
    run(loops)
    elapsed = clock() - start
    if elapsed <= 0:
        raise ValueError(f"the clock did not advance over {loops} loops")
    return elapsed


def calibrate_loops(run: Callable[[int], object], min_time_s: float,
                    clock: Clock = time.perf_counter, max_loops: int = MAX_LOOPS,
                    budget_s: float | None = None) -> int:
    """Double ``loops`` from 1 until one value takes at least ``min_time_s`` (pyperf); with
    ``budget_s``, stop at the loops reached when the next value would end past the budget."""
    return _calibrate(run, min_time_s, clock, max_loops, budget_s)[0]


def _calibrate(run: Callable[[int], object], min_time_s: float, clock: Clock,
               max_loops: int, budget_s: float | None) -> tuple[int, float | None]:
    """(loops, seconds of the last value timed at those loops, or None)."""
    loops, spent, last = 1, 0.0, None
    while loops < max_loops:
        elapsed = time_once(run, loops, clock)
        spent, last = spent + elapsed, elapsed
        if elapsed >= min_time_s:
            break
        # jump to 1.2x the estimated target (at least 2x, at most 16x per step)
        grow = max(2.0, min(16.0, 1.2 * min_time_s / elapsed))
        if budget_s is not None and spent + elapsed * grow > budget_s:
            break
        loops, last = int(loops * grow), None
    return min(loops, max_loops), last


def measure(run: Callable[[int], object], repeats: int = 5, warmups: int = 1,
            min_time_s: float = 0.1, clock: Clock = time.perf_counter,
            loops: int | None = None, budget_s: float | None = None) -> BenchResult:
    """Calibrate (unless ``loops`` is given), run ``warmups`` then ``repeats`` timed values.

    With ``budget_s`` (seconds for the whole measurement, calibration included) a value is not
    started when the last one's time would take it past the budget: the remaining warm-ups
    are skipped and one value is timed if none was, else the repeats stop there."""
    if repeats < 1 or warmups < 0:
        raise ValueError("repeats must be >= 1 and warmups >= 0")
    start, last = clock(), None
    if loops is None:
        loops, last = _calibrate(run, min_time_s, clock, MAX_LOOPS, budget_s)
    warm: list[float] = []
    samples: list[float] = []
    for index in range(warmups + repeats):
        over = budget_s is not None and last is not None and clock() - start + last > budget_s
        if over and samples:
            break
        last = time_once(run, loops, clock)
        (samples if over or index >= warmups else warm).append(last / loops)
        if over:
            break
    cut = budget_s is not None and len(samples) < repeats
    return BenchResult(tuple(samples), tuple(warm), loops, repeats if cut else None)
