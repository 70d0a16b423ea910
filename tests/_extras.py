"""The optional extras a test module needs (``need``): present, or the module skipped where they
are not installed; under CI, which installs them (.ci/run), a missing one is a failure."""

from __future__ import annotations

import importlib
import os

import pytest


def need(*modules: str, extra: str) -> None:
    """Import ``modules`` (the ``extra``'s: ``pip install 'roofline[<extra>]'``), or skip the
    calling test module; under CI re-raise the ImportError."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            if os.environ.get("CI"):
                raise
            pytest.skip(f"{name} is not installed (pip install 'roofline[{extra}]')",
                        allow_module_level=True)
