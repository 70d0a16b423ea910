"""hwdb/ ships as package data: it must hold only __init__.py and *.yaml (the wheel's glob)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_hwdb_holds_only_yaml_and_init():
    stray = [p.relative_to(ROOT) for p in (ROOT / "hwdb").rglob("*")
             if p.is_file() and p.suffix != ".yaml" and p.name != "__init__.py"
             and "__pycache__" not in p.parts]
    assert stray == []


def test_bundled_entries_are_reachable_as_package_data():
    files = {p.name for p in (ROOT / "hwdb").rglob("*.yaml")}
    root = resources.files("roofline.hwdb")
    assert (root / "gpu" / "a100-sxm4-80gb.yaml").is_file()
    assert "a100-sxm4-80gb.yaml" in files
