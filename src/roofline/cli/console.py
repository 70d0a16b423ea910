"""What the commands write to and read of the terminal: progress lines on stderr, the width of
a table's line, the command line an HTML page names, large outputs written in chunks."""

from __future__ import annotations

import sys

import click

#: Where ``group.RooflineGroup.parse_args`` keeps the command line's words (``ctx.meta``) for
#: ``_command``.
_ARGV = "roofline.argv"


def _command() -> str:
    """The command line being run, quoted for a shell: ``roofline analyze m.yaml --hw a100``."""
    import shlex

    return shlex.join(["roofline", *click.get_current_context().meta.get(_ARGV, [])])


def _terminal_width() -> int | None:
    """The characters a line of a plain-text table has: ``$COLUMNS`` where it is set to a
    positive number (asked for, a pipe included), else the width of the terminal stdout writes
    to; None where stdout is no terminal (a pipe, a file: nothing is cut, a reader there has
    no edge and may want every name whole, ``grep`` the full layer name)."""
    import os
    import shutil

    given = os.environ.get("COLUMNS", "")
    if given.isascii() and given.isdigit() and int(given) > 0:
        return int(given)
    try:
        terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced by something without it, or closed
        return None
    return shutil.get_terminal_size().columns if terminal else None


def _render(formats: dict, fmt: str, result) -> str:
    """A compare or sweep result in ``fmt``; an HTML page also names the command."""
    return formats[fmt](result, command=_command()) if fmt == "html" else formats[fmt](result)


class _Chunked:
    """Text for stdout gathered into writes of about 1 MB: a 600,000-line table is a few dozen
    writes, not one system call a line when stdout is unbuffered (``PYTHONUNBUFFERED``, set in
    many containers). ``sys.stdout`` at each write: what click.echo and CliRunner use too."""

    LIMIT = 2**20

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._size = 0

    def write(self, text: str) -> None:
        self._pieces.append(text)
        self._size += len(text)
        if self._size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        sys.stdout.write("".join(self._pieces))
        self._pieces, self._size = [], 0

    def __enter__(self) -> _Chunked:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:  # an error leaves what was not yet written unwritten
            self.flush()
            sys.stdout.flush()


def _progress(message: str) -> None:
    click.echo(message, err=True)
