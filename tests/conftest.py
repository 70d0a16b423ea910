"""Shared fixtures: a CLI runner, and a private user hwdb directory for every test."""

from __future__ import annotations

import importlib.util

import pytest
from click.testing import CliRunner

from roofline.hardware import catalog as database


def pytest_configure(config):
    if importlib.util.find_spec("roofline.hwdb") is None:
        raise pytest.UsageError(
            "roofline.hwdb (the bundled hardware entries) is not importable: install the package "
            "first (README: pip install \".[test]\"), then run the venv's pytest.")


@pytest.fixture(autouse=True)
def isolated_user_hwdb(tmp_path, monkeypatch):
    """Point $ROOFLINE_HWDB at an empty temp dir so the user's own entries never leak in."""
    folder = tmp_path / "user-hwdb"
    folder.mkdir()
    monkeypatch.setenv(database.ENV_VAR, str(folder))
    database.clear_cache()
    yield folder
    database.clear_cache()


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def invoke(runner):
    """Run the ``roofline`` CLI in-process: ``invoke("analyze", path, "--hw", "v100")``."""
    from roofline.cli import cli

    def run(*args):
        return runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)

    return run
