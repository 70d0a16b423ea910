"""Numbers as people read them: decimal (SI) prefixes, durations and the 1-2-5 steps an axis
ends on. The one place units are formatted; every renderer and chart uses these. 1 GB = 10^9
B, 1 TFLOP/s = 10^12 FLOP/s. A figure past what its prefixes reach (above 999 Y, a duration
of a million seconds and more) is written with an exponent, ``8.52e21 s``: the inputs allow
dimensions up to 2**40, whose products a fixed-point form would print as 22 digits of which
the last are float noise."""

from __future__ import annotations

import math

_PREFIXES = ((1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"),
             (1e6, "M"), (1e3, "k"), (1.0, ""))

def rate_unit(dtype: str) -> str:
    """The unit a peak or rate in ``dtype`` is written in: ``TOPS`` for an integer dtype (int8,
    as vendors and ``hw list`` quote it), else ``TFLOP/s``; the same 10^12 operations a second,
    a multiply-add counting 2 either way (so JSON's ``*_tflops`` fields hold both)."""
    return "TOPS" if dtype.startswith("int") else "TFLOP/s"


def si(value: float, unit: str, digits: int = 3) -> str:
    """``si(4.29e9, "FLOP") == "4.29 GFLOP"``: decimal prefixes up to Y (10^24), ``digits``
    significant digits (rounded before the prefix is chosen: 999.9996e6 reads ``1 GB``, not
    ``1e+03 MB``); from 1000 Y on, an exponent on the bare unit (``5.32e36 FLOP``)."""
    value = float(f"{value:.{digits}g}")
    if abs(value) >= 1000 * _PREFIXES[0][0]:  # past yotta: no prefix reads better than 1e27
        return f"{_exponent(value, digits)} {unit}"
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{_plain(value / scale, digits)} {prefix}{unit}"
    return f"{_plain(value, digits)} {unit}"


def _plain(value: float, digits: int) -> str:
    """``digits`` significant digits, without an exponent from 1000 up to six digits
    (``three_digits``); seven digits and more with one (``_exponent``)."""
    if abs(value) < 1000:
        return f"{value:.{digits}g}"
    whole = f"{value:.0f}"
    return whole if len(whole.lstrip("-")) <= 6 else _exponent(value, digits)


def _exponent(value: float, digits: int) -> str:
    """``digits`` significant digits and a power of ten, written short: ``8.52e21``, ``1e7``
    (not ``8.52e+21``, ``1.00e+07``)."""
    mantissa, power = f"{value:.{digits - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(power)}"


def three_digits(value: float) -> str:
    """Three significant digits, as ``.3g``, without its exponent from 1000 up to six digits:
    an H100's fp8 peak reads ``1979``, not ``1.98e+03`` (below 1000, ``.3g`` as it is:
    ``0.00338``); from a million, ``1.23e6``, where whole digits would print float noise."""
    return _plain(value, 3)


def seconds(value: float) -> str:
    """A duration with the unit that keeps it readable: s, ms, us, ns, ps (three significant
    digits, rounded before the unit is chosen: 0.9999996 ms reads ``1 ms``, not ``1e+03 us``;
    1500 s reads ``1500 s``; a 1 x 1 x 1 GEMM's roofline time, 2.94 ps). No prefix above the
    second (ks, Ms read as nothing anyone times with): from a million seconds (11.6 days), an
    exponent, ``8.52e21 s``."""
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


#: The mantissas a log axis labels, coarsest first: decades, 1-2-5, then finer.
LOG_STEPS = ((1,), (1, 2, 5), (1, 2, 3, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9))


def log_ticks(low: float, high: float, least: int = 3) -> list[float]:
    """The values a log axis from ``low`` to ``high`` labels: the coarsest steps of
    ``LOG_STEPS`` that put ``least`` labels on it (the finest where none does). Decades alone
    leave an axis under a decade one label or none (a sweep's intensity from 200 to 6000
    read "1000" only); ``log_ticks(200, 6000) == [200, 500, 1000, 2000, 5000]``. An axis too
    narrow for two of even the finest (1100 to 1900) is labelled at its ends, rounded inwards
    to the fewest digits that keep them apart (``[1100, 1900]``)."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    inside: list[float] = []
    for steps in LOG_STEPS:
        # a mantissa times 10^e as 10^e writes it: 3e-1 is 0.3, not 0.30000000000000004
        values = [float(f"{step}e{e}") for e in range(first, last + 1) for step in steps]
        inside = [v for v in values if low * (1 - 1e-9) <= v <= high * (1 + 1e-9)]
        if len(inside) >= least:
            return inside
    if len(inside) >= 2:
        return inside
    for digits in range(2, 16):
        unit = 10.0 ** (math.floor(math.log10(high)) + 1 - digits)
        ends = (math.ceil(low / unit * (1 - 1e-12)) * unit,
                math.floor(high / unit * (1 + 1e-12)) * unit)
        if ends[0] < ends[1]:
            return sorted({float(f"{v:.{digits}g}") for v in (*ends, *inside)})
    return inside
