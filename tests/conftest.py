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


def _forget_user_entries() -> None:
    """Forget the catalogues built with user directories, keep the bundled entries: hwdb/ does
    not change during a run, and reading its files again for each of ~700 tests (~40 ms each
    time) cost ~15 s. A test that saves an entry still clears everything (the library does)."""
    database.clear_cache(bundled=False)


@pytest.fixture(autouse=True)
def isolated_user_hwdb(tmp_path, monkeypatch):
    """Point $ROOFLINE_HWDB at an empty temp dir so the user's own entries never leak in; and
    no $COLUMNS, which cuts a table's layer names to the width it gives (an exported one would
    change what the tests read)."""
    folder = tmp_path / "user-hwdb"
    folder.mkdir()
    monkeypatch.setenv(database.ENV_VAR, str(folder))
    monkeypatch.delenv("COLUMNS", raising=False)
    _forget_user_entries()
    yield folder
    _forget_user_entries()


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def invoke(runner):
    """Run the ``roofline`` CLI in-process: ``invoke("analyze", path, "--hw", "v100")``."""
    from roofline.cli import cli

    def run(*args):
        return runner.invoke(cli, [str(a) for a in args], prog_name="roofline",
                             catch_exceptions=False)

    return run


@pytest.fixture
def stable_probe(monkeypatch):
    """The probe's own checks pass whatever was measured: the tiny preset's figures are
    meaningless (a 4x4 GEMM "beats" the peak), and a test that saves one is about the save."""
    from roofline.probe import checks

    monkeypatch.setattr(checks, "failed_checks", lambda result: [])  # unstable_reasons' too


@pytest.fixture
def fake_gpu(monkeypatch):
    """A GPU as the probe sees it, faked at the boundary: torch (CUDA), pynvml and this test
    machine's CPU (tests/_probe_fakes.py); cupy absent. Returns the fake torch module."""
    import sys

    from _probe_fakes import CPUINFO, fake_pynvml, fake_torch

    from roofline.probe import identify

    torch = fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    monkeypatch.setattr(identify, "cpuinfo_dict", lambda: dict(CPUINFO))
    return torch
