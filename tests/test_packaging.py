"""What a user gets: the wheel's contents, and the package used from the repository root.

hwdb/ ships as package data (``roofline.hwdb``) through an explicit ``packages`` list in
pyproject.toml: a package missing from that list silently drops out of the wheel, so the wheel
itself is built and listed here. The source lives under src/, so a checkout's root holds no
``roofline/`` folder to shadow the installed package.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
    """Build the wheel from a copy of the sources (the checkout is never written to)."""
    tree = tmp_path_factory.mktemp("tree")
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / item, tree / item)
    for folder in ("src", "hwdb"):
        shutil.copytree(ROOT / folder, tree / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(out), str(tree)],
                   check=True, capture_output=True, text=True)
    (wheel,) = out.glob("roofline-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


@pytest.mark.slow  # builds the wheel (once per module)
def test_wheel_holds_every_package_of_the_source_tree(wheel_names):
    packages = {p.parent.relative_to(ROOT / "src").as_posix()
                for p in (ROOT / "src").rglob("__init__.py") if "__pycache__" not in p.parts}
    assert "roofline/probe" in packages
    for package in packages:
        assert f"{package}/__init__.py" in wheel_names, f"{package} missing from the wheel"
    modules = {p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules <= wheel_names


@pytest.mark.slow  # builds the wheel (once per module)
def test_wheel_holds_the_html_reports_stylesheet_and_script(wheel_names):
    # package data beside roofline/output/html: without them --format html cannot build a page
    assert {"roofline/output/html/page.css", "roofline/output/html/page.js"} <= wheel_names


@pytest.mark.slow  # builds the wheel (once per module)
def test_wheel_holds_every_bundled_entry_and_nothing_else_from_hwdb(wheel_names):
    entries = {f"roofline/hwdb/{p.relative_to(ROOT / 'hwdb').as_posix()}"
               for p in (ROOT / "hwdb").rglob("*.yaml")}
    shipped = {n for n in wheel_names if n.startswith("roofline/hwdb/")}
    assert "roofline/hwdb/gpu/a100-sxm4-80gb.yaml" in entries
    assert shipped == entries | {"roofline/hwdb/__init__.py"}


def test_hwdb_folder_holds_only_yaml_and_init():
    # the wheel ships only *.yaml (and __init__.py); an editable install would show the rest
    stray = [p.relative_to(ROOT) for p in (ROOT / "hwdb").rglob("*")
             if p.is_file() and p.suffix != ".yaml" and p.name != "__init__.py"
             and "__pycache__" not in p.parts]
    assert stray == []


def test_python_dash_m_from_the_repository_root():
    out = subprocess.run([sys.executable, "-m", "roofline", "analyze",
                          "examples/mlp-1024-4096-1000.yaml", "--hw", "v100", "--format", "json"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert '"hardware": "v100-sxm2-16gb"' in out.stdout


def _readme_python_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [block.split("```")[0] for block in text.split("```python\n")[1:]]


def test_readme_python_snippets_run_from_the_repository_root():
    blocks = _readme_python_blocks()
    assert blocks, "the README shows library use"
    # a block that uses the torch extra runs where torch is (CI installs it: there it must run)
    has_torch = importlib.util.find_spec("torch") is not None or bool(os.environ.get("CI"))
    runnable = [b for b in blocks if has_torch or "import torch" not in b]
    assert runnable, "the README shows library use without torch"
    before = set(ROOT.iterdir())
    try:
        for block in runnable:
            code = "import matplotlib\nmatplotlib.use('Agg')\n" + block
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 cwd=ROOT)
            assert out.returncode == 0, f"{block}\n{out.stderr}"
    finally:  # the snippets save a chart where they stand; leave the checkout as it was
        for path in set(ROOT.iterdir()) - before:
            path.unlink()


@pytest.mark.slow  # builds the wheel (once per module)
def test_wheel_holds_the_named_links(wheel_names):
    assert "roofline/hardware/links.yaml" in wheel_names
