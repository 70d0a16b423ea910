"""Numbers as people read them: decimal (SI) prefixes, durations and the 1-2-5 steps an axis
ends on. The one place units are formatted; every renderer and chart uses these. 1 GB = 10^9
B, 1 TFLOP/s = 10^12 FLOP/s."""

from __future__ import annotations

import math

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))

def si(value: float, unit: str, digits: int = 3) -> str:
    """``si(4.29e9, "FLOP") == "4.29 GFLOP"``: decimal prefixes, ``digits`` significant digits
    (rounded before the prefix is chosen: 999.9996e6 reads ``1 GB``, not ``1e+03 MB``)."""
    value = float(f"{value:.{digits}g}")
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{_plain(value / scale, digits)} {prefix}{unit}"
    return f"{_plain(value, digits)} {unit}"


def _plain(value: float, digits: int) -> str:
    """``digits`` significant digits, without an exponent from 1000 up (``three_digits``)."""
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.{digits}g}"


def three_digits(value: float) -> str:
    """Three significant digits, as ``.3g``, without its exponent from 1000 up: an H100's fp8
    peak reads ``1979``, not ``1.98e+03`` (below 1000, ``.3g`` as it is: ``0.00338``)."""
    return _plain(value, 3)


def seconds(value: float) -> str:
    """A duration with the unit that keeps it readable: s, ms, us, ns, ps (three significant
    digits, rounded before the unit is chosen: 0.9999996 ms reads ``1 ms``, not ``1e+03 us``;
    1500 s reads ``1500 s``; a 1 x 1 x 1 GEMM's roofline time, 2.94 ps)."""
    value = float(f"{value:.3g}")
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"), (1e-12, "ps")):
        if value >= scale:
            return f"{three_digits(value / scale)} {unit}"
    return f"{value:.3g} s"


def times(ratio: float) -> str:
    """A ratio as ``2.87x``: two decimals from 0.1 to 100, else three significant digits, so
    that a CPU against a GPU reads ``0.000608x`` (not ``0.00x``) and ``1644x`` (not
    ``1643.84x``)."""
    if 0.1 <= abs(ratio) < 100:
        return f"{ratio:.2f}x"
    return f"{three_digits(ratio)}x"


def count(n: int, noun: str, plural: str = "") -> str:
    """``count(1, "GPU") == "1 GPU"``, ``count(8, "GPU") == "8 GPUs"`` (``plural``: the noun's
    plural where it is not noun + s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def nice_below(value: float) -> float:
    """The largest of 1, 2, 5 x 10^k at or below ``value``."""
    decade = 10.0 ** math.floor(math.log10(value))
    return max(step * decade for step in (1, 2, 5) if step * decade <= value * (1 + 1e-12))


def nice_above(value: float) -> float:
    """The smallest of 1, 2, 5 x 10^k at or above ``value``."""
    decade = 10.0 ** math.floor(math.log10(value))
    return min(step * decade for step in (1, 2, 5, 10) if step * decade >= value * (1 - 1e-12))
