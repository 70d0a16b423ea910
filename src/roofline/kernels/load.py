"""What other programs took of the CPUs while something was timed: the busy time Linux counts
for all CPUs (``/proc/stat``: user, nice, system, irq, softirq and steal, the hypervisor's
share), less this process's own CPU time (``own_seconds``: every thread of it, and the children
it has waited for, such as py-cpuinfo's subprocess), over the wall time, in CPUs (1.0: one CPU
kept busy by others on average).

On a 2-vCPU machine one other busy program is enough to slow a 2-thread BLAS call 2-20x (the
BLAS's second thread waits for a CPU: a 5 ms GEMM took 104 ms), so a figure timed under such
load describes the load, not the machine; ``LoadMeter`` lets a measurement say so. None where
``/proc/stat`` cannot be read (not Linux). Only the standard library is used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

PROC_STAT = "/proc/stat"
#: Other programs' load (CPUs, averaged over an interval) above which that interval counts as
#: shared: the /proc/stat tick (10 ms a CPU) and this process's own accounting leave about
#: +-0.05 CPU of noise over a second.
BUSY_CPUS = 0.15


def busy_seconds(path: str = PROC_STAT) -> float | None:
    """Seconds of busy CPU time all CPUs have counted since boot, or None."""
    try:
        with open(path, encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
        tick = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    if len(fields) < 8 or tick <= 0:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / tick


def own_seconds() -> float:
    """This process's CPU time (``time.process_time``) and its waited-for children's."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


class LoadMeter:
    """``lap()``: the CPUs other programs kept busy on average since the last lap (or since
    the meter was made); None where the busy time cannot be read. ``total()``: the same since
    the meter was made."""

    def __init__(self, busy: Callable[[], float | None] = busy_seconds,
                 own: Callable[[], float] = own_seconds,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.busy, self.own, self.clock = busy, own, clock
        self.laps: list[float] = []
        self._first = self._last = self._read()

    def _read(self) -> tuple[float | None, float, float]:
        return self.busy(), self.own(), self.clock()

    @staticmethod
    def _between(a: tuple[float | None, float, float],
                 b: tuple[float | None, float, float]) -> float | None:
        if a[0] is None or b[0] is None or b[2] <= a[2]:
            return None
        return max(0.0, ((b[0] - a[0]) - (b[1] - a[1])) / (b[2] - a[2]))

    def lap(self) -> float | None:
        now = self._read()
        value = self._between(self._last, now)
        self._last = now
        if value is not None:
            self.laps.append(value)
        return value

    def total(self) -> float | None:
        return self._between(self._first, self._read())
