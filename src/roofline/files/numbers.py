"""The bounds of every number a user can give, and the one parser of integers written as text.

Integers (a dimension, a batch, a count, a size) come from YAML and JSON files, from
command-line options and arguments, and from the keys of saved tables. Every one written as
text goes through ``parse_int``: ASCII digits only (``str.isdigit`` is true for ``'²'`` and
``'٣'``, and ``int`` refuses the first and reads the second as 3), ``_`` between digits allowed
(``1_024``), at most ``MAX_INT_DIGITS`` characters (Python will not even convert 4,301), and
at most ``MAX_INT``, the bound the file reader applies too.

Figures with a unit (a peak, a bandwidth, a clock, a latency) from a hardware entry, a link or
a command-line option go through ``plausible``: one table of ranges, far wider than any real
device, which catches typos in units and absurd values (``1e-320`` GB/s, ``1e308`` TFLOP/s)
that would overflow a time or print ``Infinity`` in JSON.

Integers given to the library as objects (``batch=``, ``batches=``, a GEMM's M) are read by
``integer``: what an integer argument is, for every integer parameter of the library.
"""

from __future__ import annotations

import math
import operator
import re
from typing import Final

#: The largest dimension, batch or count a user may give: 2**40 (about 1.1e12). No layer width
#: or batch comes near it (a 2**40-element fp8 matrix is already 1 TB), and with every dimension
#: below it a GEMM's 2MNK stays under 2**122, so FLOPs, bytes, times and batch advice stay far
#: inside float64's range.
MAX_INT: Final = 2**40

#: The longest integer literal read (files and options alike): 40 characters.
MAX_INT_DIGITS: Final = 40


def integer(value: object) -> int | None:
    """``value`` as a Python int where the library takes it as an integer: an ``int``, or any
    object that says it is one through ``__index__`` (``operator.index``: numpy's integer
    scalars and 0-d arrays, torch's integer tensors of one value: a notebook's numbers); None
    for anything else: a bool, numpy's or torch's bool too (a ``dtype`` named bool), a float
    even when whole (``8.0``, ``np.float64(8)``), text. Its range is the caller's to check
    (``int_range_problem``). numpy is never imported: the test is the object's own."""
    if type(value) is int:  # the common case, first: a deep model's GEMMs pass here
        return value
    if isinstance(value, bool) or str(getattr(value, "dtype", "")).rpartition(".")[2] in (
            "bool", "bool_"):
        return None  # True is no batch of 1 (operator.index(True) is 1; torch's too)
    try:
        return operator.index(value)  # type: ignore[arg-type]  # TypeError: no __index__
    except TypeError:
        return None


class OutOfRange(ValueError):
    """An integer written correctly but above its bound (``parse_int``)."""


_INT_TEXT = re.compile(r"[0-9]+(?:_[0-9]+)*", re.ASCII)


def quoted(text: str) -> str:
    """``text`` in quotes for a message, shortened when long."""
    return repr(text) if len(text) <= 60 else f"{text[:40]!r}... ({len(text):,} characters)"


def int_digits(value: int) -> int:
    """How many decimal digits ``value`` has (estimated beyond Python's int-to-text limit)."""
    try:
        return len(str(abs(value)))
    except ValueError:
        return int(value.bit_length() * math.log10(2)) + 1


def describe_int(value: int) -> str:
    """``value`` for a message: itself, or ``an integer of N digits`` when huge."""
    return f"an integer of {int_digits(value):,} digits" if abs(value) >= 10**20 else str(value)


def int_range_problem(value: int, low: int = 1, high: int = MAX_INT) -> str | None:
    """What is wrong with the integer ``value`` as one in ``low`` .. ``high``; None if nothing."""
    if value < low:
        return f"expected {_expected(low)}, got {describe_int(value)}"
    if value > high:
        limit = "2**40 = " + str(MAX_INT) if high == MAX_INT else str(high)
        return f"{describe_int(value)} is out of range (at most {limit})"
    return None


def _expected(low: int) -> str:
    return "a positive integer" if low == 1 else f"an integer >= {low}"


def parse_int(text: str, low: int = 1, high: int = MAX_INT) -> int:
    """The integer ``text`` writes (ASCII digits, ``_`` between them, spaces around), in
    ``low`` .. ``high``; ValueError whose message is the whole problem otherwise
    (``expected a positive integer, got '²'``), OutOfRange (a ValueError) above ``high``."""
    stripped = str(text).strip()
    if not _INT_TEXT.fullmatch(stripped):
        raise ValueError(f"expected {_expected(low)}, got {quoted(str(text))}")
    if len(stripped) > MAX_INT_DIGITS:
        digits = len(stripped.replace("_", "").lstrip("0")) or 1
        raise OutOfRange(f"an integer of {digits:,} digits is out of range (at most 2**40 = "
                         f"{MAX_INT})")
    value = int(stripped)
    if value < low:  # named as written: '0', '-0'
        raise ValueError(f"expected {_expected(low)}, got {quoted(str(text))}")
    problem = int_range_problem(value, low, high)
    if problem:
        raise OutOfRange(problem)
    return value


_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


def span(low: int, high: int) -> tuple[int, ...]:
    """A range ``low..high`` as the commands read one: ``low``, every power of two strictly
    between, and ``high`` (the ends typed are points, powers of two or not: 3..100 is 3, 4, 8,
    16, 32, 64, 100; 1..16 is 1, 2, 4, 8, 16); ``1 <= low <= high`` is the caller's check."""
    between = {2**i for i in range(high.bit_length()) if low < 2**i < high}
    return tuple(sorted(between | {low, high}))


def parse_number(text: str) -> float:
    """The number ``text`` writes in ASCII (``25``, ``12.5``, ``1e-3``; spaces around); not
    ``inf``, ``nan`` or other scripts' digits, which ``float`` takes. ValueError otherwise.
    Its range is the caller's to check (``plausible``)."""
    stripped = str(text).strip()
    if len(stripped) > 100 or not _NUMBER_TEXT.fullmatch(stripped):
        raise ValueError(f"expected a number, got {quoted(str(text))}")
    return float(stripped)


#: Plausible ranges of every figure with a unit, by field name: (low, high, unit). Far wider
#: than any device (an NVL72 rack is 3.6e5 dense fp8 TFLOP/s and 5.8e5 GB/s; the slowest link
#: in links.yaml, 10 GbE, is 1.25 GB/s): they catch typos in units and absurd figures (1e308,
#: 1e-320) that would overflow the ridge or a time and print Infinity, not real hardware.
PLAUSIBLE: Final[dict[str, tuple[float, float, str]]] = {
    "peak_tflops": (1e-6, 1e7, "TFLOP/s"), "vector_tflops": (1e-6, 1e7, "TFLOP/s"),
    "sparse_tflops": (1e-6, 1e7, "TFLOP/s"), "bandwidth_gbs": (1e-3, 1e7, "GB/s"),
    "llc_mb": (1e-3, 1e7, "MB"), "tdp_w": (1e-3, 1e7, "W"),
    "clock_ghz": (1e-3, 100, "GHz"), "boost_clock_ghz": (1e-3, 100, "GHz"),
    "sustained_clock_ghz": (1e-3, 100, "GHz"), "vector_clock_ghz": (1e-3, 100, "GHz"),
    "sms": (1, 1e6, "SMs"), "sockets": (1, 1e4, "sockets"),
    "cores_per_socket": (1, 1e6, "cores"), "simd_bits": (1, 1e5, "bits"),
    "fma_units": (1, 1e3, "units"), "capacity_gb": (1e-6, 1e9, "GB"),
    "reported_bytes": (1e3, 1e18, "B"),
    "latency_us": (0, 1e6, "us"),
    "op_rate_gbs": (1e-6, 1e7, "GB/s")}  # an op class's rate (calibration.ops): far below DRAM


def plausible(value: float, key: str, text: str | None = None) -> str | None:
    """What is wrong with ``value`` as the figure ``key`` (a key of ``PLAUSIBLE``); None when
    it lies in its range. NaN and infinities are never plausible. ``text``: how the user wrote
    the value (``1e-320``, which prints as 9.99989e-321 once read)."""
    low, high, unit = PLAUSIBLE[key]
    if low <= value <= high:
        return None
    if text is not None:
        shown = quoted(text.strip()).strip("'")
    else:
        shown = describe_int(value) if isinstance(value, int) else f"{value:g}"
    return f"{shown} {unit} is implausible (expected {low:g} to {high:g})"
