"""Exceptions raised by the library; the CLI turns each into one line on stderr, exit 2."""

from __future__ import annotations

import re
from collections.abc import Callable

# C0 and C1 control characters, line and paragraph separators, bidirectional overrides
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """``text`` with newlines and other control characters escaped (``\\n``), so that a file
    name or key holding them cannot split or disguise a one-line message."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


def control_character(text: str) -> str | None:
    """The first character of ``text`` that a terminal acts on instead of showing (an escape
    that turns the screen red or moves the cursor, a carriage return, a bidirectional
    override), written as ``one_line`` writes it (``\\x1b``); None when there is none. Tab and
    newline are text (a hardware entry's ``notes`` hold them)."""
    found = next((m.group() for m in _UNPRINTABLE.finditer(text) if m.group() not in "\t\n"),
                 None)
    return None if found is None else one_line(found)


def described(given: object) -> str:
    """A library argument of the wrong type as a message names it: its type and its value,
    cut to 40 characters (``list ['a100']``, ``NoneType None``)."""
    shown = repr(given)
    return f"{type(given).__name__} {shown if len(shown) <= 40 else shown[:37] + '...'}"


def a_kind(given: object) -> str:
    """What ``given`` is, with its article, for a message about a value of the wrong kind:
    ``a list``, ``an int64``; an array by its dimensions and shape, ``a 2-d ndarray of shape
    (2, 3)`` (read from its own ``ndim`` and ``shape``: numpy is not imported)."""
    name = type(given).__name__
    ndim, shape = getattr(given, "ndim", None), getattr(given, "shape", None)
    if isinstance(ndim, int) and isinstance(shape, tuple):
        return f"a {ndim}-d {name} of shape {tuple(shape)}"
    return f"{'an' if name[:1].lower() in 'aeio' else 'a'} {name}"  # a uint8, a list


#: An option the user can set, written into a message as ``option("batch")`` or with a value,
#: ``option("hardware", "local")``. A library user reads it as the keyword argument (``batch=``,
#: ``hardware="local"``), the command line as its flag (``--batch``, ``--hw local``): the library
#: never names a flag, and the CLI never names a Python argument. The marks are a control
#: character, which one_line escapes in any user text put in a message, so a file or key name
#: cannot pose as an option.
_OPTION = re.compile("\x1f([a-z_]+)(?:=([^\x1f]*))?\x1f")


def option(name: str, value: str | None = None) -> str:
    """``name`` (a library argument, ``batch``), and a value to give it, marked as a user
    setting in a message."""
    return f"\x1f{name}\x1f" if value is None else f"\x1f{name}={value}\x1f"


def render_options(text: str, spell: Callable[[str, str | None], str]) -> str:
    """``text`` with each marked option written as ``spell(name, value)``."""
    return _OPTION.sub(lambda m: spell(m.group(1), m.group(2)), text)


def keyword(name: str, value: str | None) -> str:
    """How the library spells an option to its users: the keyword argument."""
    if value is None:
        return f"{name}=..."
    return f"{name}={value}" if value in ("True", "False") else f"{name}={value!r}"


class RooflineError(Exception):
    """Base class of every error the library raises for bad input. Options named in the
    message (``option``) read as keyword arguments; ``text(spell)`` writes them otherwise."""

    #: The setting the error is about, when one is: the CLI puts its flag first.
    option: str | None = None

    def text(self, spell: Callable[[str, str | None], str] = keyword) -> str:
        return render_options(super().__str__(), spell)

    def __str__(self) -> str:
        return self.text()


class InputError(RooflineError):
    """A model or hardware file is unreadable or invalid.

    The message names the file and the field path, for example
    ``model.yaml: layers[1].out: expected a positive integer, got -5``.
    """

    def __init__(self, source: str, path: str, problem: str) -> None:
        self.source = source
        self.path = path
        self.problem = problem
        where = f"{one_line(source)}: {one_line(path)}: " if path else f"{one_line(source)}: "
        super().__init__(where + problem)


class UnknownHardwareError(RooflineError):
    """No hardware entry has this name or alias."""


class UnsupportedDtypeError(RooflineError):
    """The dtype is unknown, or the hardware has no peak for it."""


class PlotError(RooflineError):
    """A chart cannot be drawn or written (an unsupported file extension, a missing folder)."""


class ProbeSaveError(RooflineError):
    """A probe result cannot be saved: a bad name, nothing measured, or the entry exists."""


class KernelCheckError(RooflineError):
    """A probe kernel produced a wrong result, so its timings must not be trusted."""


class MissingLibraryError(RooflineError):
    """An optional library a request needs is not installed (``probe --library torch``)."""


class CaptureError(RooflineError):
    """A module cannot be captured: it fails on meta tensors, or the factory is wrong."""
