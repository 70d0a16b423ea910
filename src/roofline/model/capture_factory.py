"""The factory a command line names a PyTorch module by, ``package.module:callable``
(``is_factory``, ``names_factory``; a Python file's path spelled as one,
``python_file_spec``), imported and called for the module and its example inputs
(``load_factory``), each way it can fail one line (``CaptureError``), and captured
(``capture_factory``: analyze's and compare's capture, and sweep's, once a batch, of a factory
that takes one, ``takes_batch``)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeGuard

from ..errors import CaptureError, a_kind

if TYPE_CHECKING:
    from .network import Network

_FACTORY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def is_factory(text: str) -> bool:
    """Whether ``text`` reads as ``package.module:callable``."""
    return bool(_FACTORY.match(text))


def python_file_spec(path: str) -> tuple[str, str] | None:
    """Where ``path`` names a Python file (``examples/torch_mlp.py``, or with a callable after
    it, ``examples/torch_mlp.py:make``), the factory spelling that captures it and the folder
    to run from: ``examples.torch_mlp:make`` from the current folder where the file is under
    it, else the file's own (``<callable>`` where none was given); else None. The file is not
    imported: this only spells what was typed."""
    text, _, name = path.rpartition(":") if ":" in path else (path, "", "")
    if not text.lower().endswith(".py") or not os.path.isfile(text) or (
            name and not re.fullmatch(r"[A-Za-z_]\w*", name)):
        return None
    folder, relative = os.curdir, os.path.relpath(text)
    if relative.startswith(os.pardir):  # not under the current folder: from the file's own
        folder, relative = os.path.split(os.path.abspath(text))
    module = relative[:-3].replace(os.sep, ".")
    if not is_factory(f"{module}:x"):
        return None
    return f"{module}:{name or '<callable>'}", folder


def names_factory(model: object) -> TypeGuard[str | os.PathLike[str]]:
    """Whether ``model``, a library call's or a command line's MODEL, names a factory to
    capture: text (or a path) that reads as ``package.module:callable`` and is no file."""
    return (isinstance(model, (str, os.PathLike)) and is_factory(os.fspath(model))
            and not os.path.exists(model))


def takes_batch(spec: str) -> bool:
    """Whether the factory ``spec`` names has a ``batch`` parameter (``load_factory`` calls it
    with the batch asked for): imported and looked up, not called (each way that fails is
    ``load_factory``'s line)."""
    with _as_run(spec):
        return _takes_batch(_factory(spec))


def _takes_batch(factory: Callable[..., Any]) -> bool:
    import inspect

    try:
        return "batch" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def capture_factory(spec: str, batch: int | None = None, mode: str | None = None,
                    dtype: str | None = None, attention: str | None = None,
                    optimizer: str | None = None, *,
                    progress: Callable[[str], None] | None = None, point: str = "") -> Network:
    """The factory ``spec`` called (with ``batch`` where it takes one: ``load_factory``) and
    its module captured (``capture.capture_network``) in ``mode``, ``dtype``, ``attention``
    and ``optimizer`` (train, the module's own dtype, flash and none unless given).
    ``progress``, when given, is told as the factory is called and as the capture starts (a
    large model's takes tens of seconds), or, given a ``point`` (sweep's ``" at batch 8 (2 of
    3)"``), once as both start."""
    from .capture import capture_network  # it imports this module

    mode = mode or "train"
    if progress is not None:  # its imports (torch, transformers) can take seconds
        progress(f"capturing {spec}{point} on the meta device, {mode} (the factory called "
                 f"for its module and inputs) ..." if point else
                 f"importing {spec} and calling it for its module and inputs ...")
    module, inputs = load_factory(spec, batch)  # a batch keyword: made at batch
    if progress is not None and not point:
        progress(f"capturing {spec} ({type(module).__name__}) on the meta device, "
                 f"{mode}...")
    with _as_run(spec):  # its forward's print()s too
        return capture_network(module, inputs, mode, dtype, attention or "flash",
                               optimizer or "none")


def load_factory(spec: str, batch: int | None = None) -> tuple[Any, tuple[Any, ...]]:
    """``package.module:callable`` imported and called: it returns ``(module, inputs)`` where
    ``inputs`` is one tensor or a tuple of them. Given a ``batch``, a callable with a ``batch``
    parameter is called with it (its inputs then have that batch); one without is called as is,
    and its capture refuses another batch than its inputs' (``Captured``). The module is looked
    up in the current directory first, as ``python -c`` would (an installed console script's
    ``sys.path`` lacks it), then on ``sys.path``. Each way it can fail is one line
    (``CaptureError``) that says which: the module not found; found, but its import raising
    (a ``SyntaxError``, an import-time ``1/0``, an ``AttributeError`` or a failed import of its
    own: the error, its file and line); imported, but without the callable; its import or the
    factory calling ``sys.exit`` (a training script's ``argparse`` on a command line not its
    own: ``sys.argv`` is ``[spec]`` while they run, ``_as_run``). ``KeyboardInterrupt`` passes
    through. The batch is checked first, as the
    model's override is (``network_settings.int_override``: numpy's integers given as ints)."""
    if batch is not None:
        from .network_settings import int_override  # its layers: not at --help's import

        batch = int_override("batch", batch)
    with _as_run(spec):
        return _load_factory(spec, batch)


@contextmanager
def _as_run(spec: str) -> Iterator[None]:
    """While the user's code runs inside (its import, the factory, the capture): the current
    directory first on ``sys.path``, unless it is there already; ``sys.argv`` ``[spec]``, so a
    script that parses its command line as it is imported reads none of roofline's options
    (``python -c`` gives ``['-c']``); and ``sys.stdout`` is ``sys.stderr``, so what it prints
    never mixes into the report on stdout (``--format json`` stays JSON)."""
    import sys
    from contextlib import redirect_stdout

    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    argv, sys.argv = sys.argv, [spec]
    try:
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.argv = argv
        if added and cwd in sys.path:
            sys.path.remove(cwd)


def _factory(spec: str) -> Callable[..., Any]:
    """The callable ``spec`` names, imported and looked up (CaptureError naming each way that
    fails)."""
    import importlib

    path, _, attr = spec.partition(":")
    try:
        found = importlib.import_module(path)
    except SystemExit as exc:
        raise CaptureError(f"{spec}: importing {path} {_exited(exc)}") from None
    except Exception as exc:  # the module's own code failing; KeyboardInterrupt passes
        if _not_found(exc, path):
            raise CaptureError(f"{spec}: cannot import {path} ({exc}; looked in the current "
                               f"directory and on sys.path)") from None
        raise CaptureError(f"{spec}: importing {path} failed: {_raised(exc)}") from None
    if not hasattr(found, attr):  # looked up apart: the import's errors are its own
        raise CaptureError(f"{spec}: {path} has no {attr}")
    factory = getattr(found, attr)
    if not callable(factory):
        raise CaptureError(f"{spec}: {attr} is not callable")
    return factory


def _load_factory(spec: str, batch: int | None) -> tuple[Any, tuple[Any, ...]]:
    factory = _factory(spec)
    try:
        made = (factory(batch=batch) if batch is not None and _takes_batch(factory)
                else factory())
    except SystemExit as exc:
        raise CaptureError(f"{spec}: the factory {_exited(exc)}") from None
    except Exception as exc:
        raise CaptureError(f"{spec}: the factory raised {type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:300]}") from None
    if not (isinstance(made, tuple) and len(made) == 2):
        got = (f"a tuple of {len(made)}" if isinstance(made, tuple)
               else a_kind(made))
        raise CaptureError(f"{spec}: the factory must return a 2-tuple (module, example_inputs), "
                           f"example_inputs one tensor or a tuple of them; got {got}")
    module, inputs = made
    return module, inputs if isinstance(inputs, tuple) else (inputs,)


def _not_found(exc: Exception, path: str) -> bool:
    """Whether ``exc`` says that ``path`` itself (or a package above it) is nowhere to be
    found, rather than that the module, found, failed as it ran (a ``SyntaxError``, an
    import-time ``1/0``, an ``AttributeError``, or an import of its own that failed)."""
    name = getattr(exc, "name", None)
    return (isinstance(exc, ModuleNotFoundError) and name is not None
            and (path == name or path.startswith(f"{name}.")))


def _exited(exc: SystemExit) -> str:
    """What a ``sys.exit`` in the user's code reads as: where it was called from (the outermost
    frame of theirs: a script's ``parser.parse_args()`` line, not argparse's own ``exit``)."""
    import importlib
    import traceback

    skipped = ("<frozen ", os.path.dirname(os.path.dirname(__file__)) + os.sep,  # roofline's
               os.path.dirname(importlib.__file__ or "") + os.sep)  # a folder, not a prefix
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(skipped)]
    where = f" ({frames[0].filename}, line {frames[0].lineno})" if frames else ""
    return (f"called sys.exit({exc.code!r}){where}: a script that exits or parses its command "
            f"line as it runs cannot give a module; keep that under `if __name__ == "
            f"'__main__':`")


def _raised(exc: BaseException) -> str:
    """``exc`` as one line for a message: its type, its text and where it was raised (the
    file and line: a ``SyntaxError``'s own, else the innermost frame outside importlib's)."""
    import traceback

    if isinstance(exc, SyntaxError):
        text, file, line = exc.msg, exc.filename, exc.lineno
    else:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if not f.filename.startswith("<frozen ")]
        text = str(exc)
        file, line = (frames[-1].filename, frames[-1].lineno) if frames else (None, None)
    where = f" ({file}, line {line})" if file else ""
    return f"{type(exc).__name__}: {' '.join(text.split())[:300]}{where}"
