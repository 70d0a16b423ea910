"""Writing a file whole or not at all: every file the tool writes (a saved hardware entry, a
chart) goes through ``write_atomic``.

The content goes to a temporary file in the destination's directory, is flushed and fsynced,
then moved into place with one rename (``os.replace``), so a full disk, a crash or Ctrl-C
leaves either the old file untouched or the new one whole, never a truncated or partial file,
and no temporary file behind.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomic(path: str | os.PathLike[str], content: str | bytes | Callable[[BinaryIO], object],
                 force: bool = True) -> Path:
    """Write ``content`` to ``path`` atomically: text (UTF-8), bytes, or a function that writes
    into the binary file handle it is given (a chart's ``savefig``). Returns the path.

    With ``force`` (the default) an existing ``path`` is replaced, in one rename; without it an
    existing ``path`` is never replaced (``os.link`` refuses to): FileExistsError. Missing
    parent directories are made. An exception at any point (OSError for a full disk) leaves
    ``path`` as it was and no temporary file behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; what we write is an ordinary file
        with os.fdopen(fd, "wb") as handle:
            if isinstance(content, str):
                handle.write(content.encode("utf-8"))
            elif isinstance(content, bytes):
                handle.write(content)
            else:
                content(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if force:
            os.replace(tmp, path)
            return path
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        except OSError:  # no hard links here (some network/FAT file systems)
            if path.exists():
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
            os.replace(tmp, path)
        return path
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
