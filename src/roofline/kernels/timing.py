"""One calibrated timing loop, shared by every probe kernel (the pyperf recipe).

A kernel is ``run(loops)``: it does its work ``loops`` times. ``measure`` first calibrates
``loops`` (doubling) until one timed value lasts ``min_time_s``, keeps ``warmups`` values
apart, then times ``repeats`` values and reports per-call seconds: best, median, MAD, spread.
The clock is injectable, so the statistics are tested without real time passing.
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
                    clock: Clock = time.perf_counter, max_loops: int = MAX_LOOPS) -> int:
    """Double ``loops`` from 1 until one value takes at least ``min_time_s`` (pyperf)."""
    loops = 1
    while loops < max_loops:
        elapsed = time_once(run, loops, clock)
        if elapsed >= min_time_s:
            break
        # jump to 1.2x the estimated target (at least 2x, at most 16x per step)
        loops = int(loops * max(2.0, min(16.0, 1.2 * min_time_s / elapsed)))
    return min(loops, max_loops)


def measure(run: Callable[[int], object], repeats: int = 5, warmups: int = 1,
            min_time_s: float = 0.1, clock: Clock = time.perf_counter,
            loops: int | None = None) -> BenchResult:
    """Calibrate (unless ``loops`` is given), run ``warmups`` then ``repeats`` timed values."""
    if repeats < 1 or warmups < 0:
        raise ValueError("repeats must be >= 1 and warmups >= 0")
    if loops is None:
        loops = calibrate_loops(run, min_time_s, clock)
    warm = tuple(time_once(run, loops, clock) / loops for _ in range(warmups))
    samples = tuple(time_once(run, loops, clock) / loops for _ in range(repeats))
    return BenchResult(samples, warm, loops)
