"""Numbers as people read them: decimal (SI) prefixes, durations and the 1-2-5 steps an axis
ends on. The one place units are formatted; every renderer and chart uses these. 1 GB = 10^9
B, 1 TFLOP/s = 10^12 FLOP/s."""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))

def si(value: float, unit: str, digits: int = 3) -> str:
    """``si(4.29e9, "FLOP") == "4.29 GFLOP"``: decimal prefixes, ``digits`` significant digits."""
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


def three_digits(value: float) -> str:
    """Three significant digits, as ``.3g``, without its exponent from 1000 up: an H100's fp8
    peak reads ``1979``, not ``1.98e+03`` (below 1000, ``.3g`` as it is: ``0.00338``)."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def seconds(value: float) -> str:
    """A duration with the unit that keeps it readable: s, ms, us, ns."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} s"


def nice_below(value: float) -> float:
    """The largest of 1, 2, 5 x 10^k at or below ``value``."""
    decade = 10.0 ** math.floor(math.log10(value))
    return max(step * decade for step in (1, 2, 5) if step * decade <= value * (1 + 1e-12))


def nice_above(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above ``value``."""
    decade = 10.0 ** math.floor(math.log10(value))
    return min(step * decade for step in (1, 2, 5, 10) if step * decade >= value * (1 - 1e-12))
