"""Safe YAML reading and typed field access that names the file and field path on error.

Both model files and hardware entries are read through here, so every bad-input message has
the same shape: ``<file>: <field path>: <problem>``.
"""

from __future__ import annotations

import enum
import math
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, overload

from ..errors import InputError, a_kind, one_line
from .numbers import MAX_INT, describe_int, int_digits, int_range_problem, integer

_T = TypeVar("_T")


class _Missing(enum.Enum):
    """The default of a required field (a type of its own, so overloads can tell it apart)."""

    MISSING = 0


_MISSING: Final = _Missing.MISSING


def load_yaml_file(path: str | os.PathLike[str]) -> Any:
    """Read ``path`` (a regular file of at most 16 MiB) and parse it with ``load_yaml_text``."""
    from .safe_yaml import read_text  # PyYAML only when a file is read: --help stays fast

    return load_yaml_text(read_text(path), str(path))


def load_yaml_text(text: str, source: str) -> Any:
    """Parse YAML ``text`` safely (roofline.files.safe_yaml: no Python objects, bounded depth and
    aliases, unique keys); ``source`` names it in error messages. Empty text is an error."""
    from .safe_yaml import parse

    data = parse(text, source)
    if data is None:
        raise InputError(source, "", "file is empty")
    return data


class Fields:
    """A mapping read field by field, each failure naming ``source`` and the field path."""

    def __init__(self, data: Any, source: str, path: str = "") -> None:
        if not isinstance(data, Mapping):
            raise InputError(source, path, f"expected a mapping, got {_describe(data)}")
        self.data = data
        self.source = source
        self.path = path

    def where(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str | int, problem: str) -> InputError:
        return InputError(self.source, self.where(key), problem)

    def has(self, key: str) -> bool:
        return key in self.data

    def absent(self, key: str, default: object) -> bool:
        """True if ``key`` is missing and has a default; raise if missing and required."""
        if key in self.data:
            return False
        if default is _MISSING:
            raise self.fail(key, "missing required field")
        return True

    def get(self, key: str, default: object = _MISSING) -> Any:
        """The raw value (any YAML value: the caller checks its type)."""
        return default if self.absent(key, default) else self.data[key]

    def reject_unknown(self, allowed: set[str] | frozenset[str]) -> None:
        for key in self.data:
            if key not in allowed:
                choices = ", ".join(sorted(allowed))
                raise self.fail(str(key), f"unknown field (expected one of: {choices})")

    @overload
    def positive_int(self, key: str) -> int: ...
    @overload
    def positive_int(self, key: str, default: _T) -> int | _T: ...
    def positive_int(self, key: str, default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        return positive_int(self.data[key], self.fail, key)

    @overload
    def positive_number(self, key: str) -> float: ...
    @overload
    def positive_number(self, key: str, default: _T) -> float | _T: ...
    def positive_number(self, key: str, default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        value = self.data[key]
        return positive_number(value, self.fail, key, self.source)

    @overload
    def string(self, key: str) -> str: ...
    @overload
    def string(self, key: str, default: _T) -> str | _T: ...
    def string(self, key: str, default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"expected a non-empty string, got {_describe(value)}")
        return value

    @overload
    def boolean(self, key: str) -> bool: ...
    @overload
    def boolean(self, key: str, default: _T) -> bool | _T: ...
    def boolean(self, key: str, default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        value = self.data[key]
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {_describe(value)}")
        return value

    @overload
    def choice(self, key: str, choices: tuple[str, ...]) -> str: ...
    @overload
    def choice(self, key: str, choices: tuple[str, ...], default: _T) -> str | _T: ...
    def choice(self, key: str, choices: tuple[str, ...], default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        value = self.string(key)
        if value not in choices:
            raise self.fail(key, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    @overload
    def sub(self, key: str) -> Fields: ...
    @overload
    def sub(self, key: str, default: _T) -> Fields | _T: ...
    def sub(self, key: str, default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        value = self.data[key]
        return Fields(value, self.source, self.where(key))

    @overload
    def items(self, key: str) -> list[Any]: ...
    @overload
    def items(self, key: str, default: _T) -> list[Any] | _T: ...
    def items(self, key: str, default: object = _MISSING) -> object:
        if self.absent(key, default):
            return default
        value = self.data[key]
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {_describe(value)}")
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        values = self.items(key, [])
        for i, value in enumerate(values):
            if not isinstance(value, str) or not value:
                raise InputError(self.source, f"{self.where(key)}[{i}]",
                                 f"expected a non-empty string, got {_describe(value)}")
        return tuple(values)


def int_fields(obj: object, keys: tuple[str, ...], fail: Callable[[Any, str], Exception]
               ) -> None:
    """Set each of the fields ``keys`` of the frozen dataclass ``obj`` (a Network, a layer
    built in Python, not read from a file) that holds an integer of another type (numpy's:
    ``files.numbers.integer``) to it as an int, so that no product wraps at 2**63 and JSON
    prints it; raise ``fail(key, ...)`` for one that holds no integer (a bool, a float). None
    stays (not given). Its range is the step's to check, as a file's fields' is."""
    for key in keys:
        value = getattr(obj, key)
        if value is not None and type(value) is not int:
            number = integer(value)
            if number is None:
                raise fail(key, f"expected an integer, got {_describe(value)}")
            object.__setattr__(obj, key, number)


def positive_int(value: Any, fail: Callable[[Any, str], Exception], key: Any,
                 minimum: int = 1) -> int:
    """``value`` as an int if it is an integer (``files.numbers.integer``: numpy's too, never a
    bool or a float) in ``minimum`` .. ``MAX_INT``, else raise ``fail(key, ...)`` (the bounds
    of ``files.numbers``)."""
    number = integer(value)
    if number is None:
        expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise fail(key, f"expected {expected}, got {_describe(value)}")
    problem = int_range_problem(number, minimum)
    if problem:
        raise fail(key, problem)
    return number


def positive_ints(given: Any, fail: Callable[[Any, str], Exception], key: Any
                  ) -> tuple[int, ...]:
    """The items of ``given``, a flat sequence (a list, a tuple, a range, a 1-d numpy array or
    tensor), each a ``positive_int``, in order; else raise ``fail(key, ...)``: an item that is
    not one, or an array of another shape (a 0-d one is one number, a 2-d one a table: neither
    is a list of them)."""
    ndim = getattr(given, "ndim", 1)
    if ndim != 1 or isinstance(given, (str, bytes, Mapping)):
        raise fail(key, f"expected a list of positive integers, got {_describe(given)}")
    try:
        items = tuple(given)
    except TypeError:  # not iterable
        raise fail(key, f"expected a list of positive integers, got {_describe(given)}") from None
    values = []
    for item in items:
        number = integer(item)
        if number is None or number < 1:
            shown = _describe(item) if number is None else describe_int(number)
            raise fail(key, f"expected positive integers, got {shown}")
        problem = int_range_problem(number)
        if problem:
            raise fail(key, problem)
        values.append(number)
    return tuple(values)


def positive_number(value: Any, fail: Callable[[Any, str], Exception], key: Any,
                    source: str = "") -> float:
    """``value`` as a float if it is a positive finite number, else raise ``fail(key, ...)``;
    text that is a number to Python but not to YAML 1.1 is named so, from a YAML ``source``
    (``yaml_number_hint``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise fail(key, f"expected a positive number, got {_describe(value)}"
                        f"{yaml_number_hint(value, source)}")
    if isinstance(value, int) and value > MAX_INT ** 2:
        raise fail(key, f"{_describe(value)} is out of range")
    if value == float("inf"):
        raise fail(key, "expected a finite number, got inf")
    return float(value)


#: A number in exponent form as Python's float() reads it (``2.0e13``, ``1E3``, ``.5e-3``)
_EXPONENT = re.compile(r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eE])([-+]?)([0-9]+)")


def yaml_number_hint(value: Any, source: str) -> str:
    """Why a number in exponent form read as text, and how to write it, for a YAML ``source``:
    PyYAML follows YAML 1.1, whose floats have a dot in the mantissa and a sign on the
    exponent, so ``2.0e13`` and ``1e3`` are text where ``2.0e+13`` and ``1.0e+3`` are numbers.
    Empty for anything else, and for a ``.json`` file, whose numbers are read as JSON's."""
    from .safe_yaml import is_json  # the error path only: PyYAML is loaded by then

    found = _EXPONENT.fullmatch(value) if isinstance(value, str) else None
    if found is None or is_json(source):
        return ""
    mantissa, e, sign, exponent = found.groups()
    written = f"{mantissa}{'' if '.' in mantissa else '.0'}{e}{sign or '+'}{exponent}"
    if written == value:  # YAML 1.1 reads it as a number: the text was quoted
        return f" (quoted: write {written} without quotes)"
    return f" (text to YAML 1.1: write {written})"


def check_plain(value: Any, fail: Callable[[Any, str], Exception], key: Any) -> None:
    """Refuse what JSON cannot print in a free-form block (``measured:``, ``nvlink:``): sets,
    binary, non-finite numbers, non-string keys. Depth and size are bounded by the loader."""
    stack = [(value, key)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for k, v in item.items():
                if not isinstance(k, str):
                    raise fail(where, f"keys must be strings, got {_describe(k)}")
                stack.append((v, f"{where}.{k}"))
        elif isinstance(item, list):
            stack += [(v, f"{where}[{i}]") for i, v in enumerate(item)]
        elif isinstance(item, float) and not math.isfinite(item):
            raise fail(where, f"expected a finite number, got {item!r}")
        elif not isinstance(item, (str, int, float, bool)) and item is not None:
            raise fail(where, f"expected plain data (text, numbers, lists, mappings), "
                              f"got {_describe(item)}")


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else f"{value[:40]!r}... ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        return f"an integer of {int_digits(value):,} digits"
    if isinstance(value, (bool, int, float)) or value is None:
        return f"{value!r}" if value is not None else "nothing (null)"
    shown = one_line(repr(value))  # another library's number, by its value: np.float64(8.0)
    if getattr(value, "ndim", 0) == 0 and hasattr(value, "__float__") and len(shown) <= 40:
        return shown
    return a_kind(value)  # a list, an ndarray of shape (2, 3)

