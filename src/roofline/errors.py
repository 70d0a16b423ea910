"""Exceptions raised by the library; the CLI turns each into one line on stderr, exit 2."""

from __future__ import annotations

import re

# C0 and C1 control characters, line and paragraph separators, bidirectional overrides
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """``text`` with newlines and other control characters escaped (``\\n``), so that a file
    name or key holding them cannot split or disguise a one-line message."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


class RooflineError(Exception):
    """Base class of every error the library raises for bad input."""


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
