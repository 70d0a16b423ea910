"""The batches and sequence lengths a sweep is given: ``--batch`` and ``--seq`` text, a comma
list or a range a..b (``parse_batches``), or a library call's list or one int (``_values``)."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InputError, described
from ..files.fields import positive_ints
from ..files.numbers import OutOfRange, parse_int, quoted, span


def parse_batches(text: str, what: str = "batches") -> tuple[int, ...]:
    """``--batch`` (or ``--seq``, ``what="seqs"``): a comma list (``1,8,64,512``) or a range
    ``a..b``: a, every power of two strictly between, and b (the ends the user typed are
    points, powers of two or not: ``3..100`` is 3, 4, 8, 16, 32, 64, 100; ``1..16`` is 1, 2,
    4, 8, 16; ``5..7`` is 5, 7; ``1..1`` is 1). Sorted, duplicates dropped; InputError for
    anything else."""
    spec = str(text).strip()

    def fail(problem: str, got: bool = True) -> InputError:
        return InputError(what, "", f"{problem}{f', got {quoted(spec)}' if got else ''} (use e.g. "
                                    f"1,8,64,512 or 3..100: 3, the powers of two between, 100)")

    if ".." in spec:
        low, _, high = spec.partition("..")
        try:
            a, b = parse_int(low, low=0), parse_int(high, low=0)
        except OutOfRange as exc:
            raise fail(f"in the range {quoted(spec)}: {exc}", got=False) from None
        except ValueError:
            raise fail("expected a range a..b of positive integers") from None
        if a <= 0 or b < a:
            raise fail("expected 1 <= a <= b in a..b")
        return span(a, b)
    try:
        values = {parse_int(piece) for piece in spec.split(",")}
    except OutOfRange as exc:
        raise fail(f"in {quoted(spec)}: {exc}", got=False) from None
    except ValueError:
        raise fail("expected positive integers separated by commas") from None
    return tuple(sorted(values))


def _values(given: str | int | Iterable[int], what: str) -> tuple[int, ...]:
    """The batches or seqs a sweep is given: ``parse_batches`` text, a list (a numpy array
    too: ``files.fields.positive_ints``), or one integer (one point: ``batches=64`` reads as
    naturally as ``batch=64``; numpy's too, ``files.numbers.integer``)."""
    if isinstance(given, str):
        return parse_batches(given, what)

    def fail(_: str, problem: str) -> InputError:
        return InputError(what, "", problem)

    if not hasattr(given, "__iter__"):  # one integer (a 0-d array, iterable, is no list)
        if not hasattr(given, "__index__"):  # a bool has one: True is no batch of 1, below
            raise InputError(what, "", f"expected an integer, a list of them or text (1,8,64 "
                                       f"or 1..512), got {described(given)}")
        return positive_ints((given,), fail, what)
    values = positive_ints(given, fail, what)
    if not values:
        raise InputError(what, "", "expected at least one value")
    return tuple(sorted(set(values)))
