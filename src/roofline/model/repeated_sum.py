"""A float figure added once per copy of a repeat, in time that does not grow with the copies,
to the last bit of the loop that adds it copy by copy (``repeated_sum``, ``run_sum``).

A loop ``for _ in range(n): for v in values: s = s + v`` rounds after every addition, so its
result is not ``s + n * sum(values)``. But between two powers of two (a binade of s, where the
doubles lie ``u`` apart) each addition of v moves s by the same whole number of ``u``: v / u
rounded to the nearest, or, where v / u ends in exactly one half (a tie), to whichever makes
s's last bit even. Without a tie, every period of the loop moves s by the same steps until s
leaves the binade, so the periods that stay in it are added at once (their count from how far
the binade's end is); a period that crosses a binade's end is added as the loop adds it. The
work grows with the binades s crosses (a few dozen at most), not with ``n``. Where a tie is,
each addition's rounding depends on s's last bit: one value alone settles it after one
addition (it then moves s by the same even step each time); a tie in a period of several
values has the periods that stay in the binade added one by one, as the loop does (in C).
Any value that is not a finite float of 0 or more, a few additions (``FEW``), or a sum too
small for its binade's spacing to be uniform (below 2**-1021) or so large that its binade ends
past the largest double, is added by the loop itself (in C). The same result, bit for bit:
``tests/test_repeated_sum.py`` holds it to the loop on values from every part of a binade,
ties included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from itertools import chain, repeat

_SPAN = 2**53  # a binade [2^e, 2^(e+1)) holds s = m u for 2^52 <= m < 2^53
_SMALLEST = 2.0**-1021  # below, subnormal spacings are near: added by the loop
_LARGEST = 2.0**1022  # above, a binade's end is past the largest double: added by the loop
#: additions the loop makes sooner than the binades are stepped through (a C loop adds a value
#: in about 10 ns; a binade's steps take a few microseconds)
FEW = 256


def repeated_sum(start: float, values: Sequence[float], times: int) -> float:
    """``start`` + each of ``values`` in order, ``times`` over, rounded after every addition
    as a Python loop adds them (module docstring); ``start`` itself (an int 0 stays an int)
    when nothing is added."""
    s = start
    if not values or times <= 0:
        return s
    if times * len(values) <= FEW or not all(type(v) is float and 0.0 <= v < math.inf
                                              for v in values):
        return _loop(s, values, times)
    while times > 0:
        for v in values:  # one period as the loop adds it (across a binade's end, or the first)
            s = s + v
        times -= 1
        if times and not any(values):
            return s  # adds nothing
        if times and not _SMALLEST <= s < _LARGEST:
            return _loop(s, values, times)
        if times:
            s, done = _in_binade(s, values, times)
            times -= done
    return s


def _in_binade(s: float, values: Sequence[float], times: int) -> tuple[float, int]:
    """The periods (at most ``times``) that keep s in its binade, added: (s after them, how
    many); none where the next one crosses the binade's end (the caller's loop adds it)."""
    u = math.ulp(s)
    m = int(s / u)  # s = m u, 2^52 <= m < 2^53 (exact: u is a power of two)
    steps, reach, tie = _steps(values, u)
    if tie and len(values) == 1:  # half-way: rounds to the even one of m + whole and the
        whole = steps[0] - 1      # next, which leaves m + whole even or odd as whole is,
        if (m + whole) % 2 != whole % 2:  # each time after the first: a step of whole + 1
            return s, 0  # (whole odd) or whole; this one rounds otherwise: the loop's
        steps, tie = [whole + whole % 2], False
    room = _SPAN - 1 - reach - m  # periods stay in the binade while m <= _SPAN - 1 - reach
    if room < 0:
        return s, 0  # the next period crosses the binade's end
    step = sum(steps)
    k = min(times, room // step + 1) if step else times
    if tie:  # each rounding by s's last bit: the loop's own additions, for the periods that
        return _loop(s, values, k), k  # stay in the binade
    return (m + k * step) * u, k  # (exact: at most 2^53 u, a double)


def _steps(values: Sequence[float], u: float) -> tuple[list[int], int, bool]:
    """In a binade of spacing ``u``: how many u each addition moves s (without a tie; with
    one, the most it could: rounded up), the furthest any addition of a period reaches past
    the period's start before rounding (the steps before it and its own whole u), and whether
    any addition is a tie."""
    steps: list[int] = []
    reach = moved = 0
    tie = False
    for v in values:
        t = v / u  # exact: u is a power of two
        whole = int(math.floor(t))
        half = t - whole  # exact
        tie = tie or half == 0.5
        reach = max(reach, moved + whole)
        step = whole + (half >= 0.5)
        steps.append(step)
        moved += step
    return steps, reach, tie


def _loop(s: float, values: Sequence[float], times: int) -> float:
    """The loop itself, in C: ``sum`` adds one value after another as ``s = s + v`` does."""
    return sum(chain.from_iterable(repeat(values, times)), s)


def run_sum(pieces: Iterable[tuple[float, int]], start: float = 0) -> float:
    """Pieces of (a value, how many times in a row) added in order one value at a time
    (``repeated_sum``): what ``sum`` gives over the values written out, ``start`` (0) where
    there are none."""
    s = start
    for value, count in pieces:
        s = repeated_sum(s, (value,), count)
    return s
