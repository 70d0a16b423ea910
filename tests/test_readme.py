"""The README stays true: its hardware table is generated from hwdb/, its quick start is what CI runs."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


def test_readme_hardware_table_is_current():
    expected_readme = runpy.run_path(str(ROOT / "tools" / "update_readme.py"))["expected_readme"]
    text = README.read_text(encoding="utf-8")
    assert expected_readme(text) == text, "run: python tools/update_readme.py"


def test_ci_runs_the_readme_test_command():
    quick_start = README.read_text(encoding="utf-8").split("```sh")[1].split("```")[0]
    lines = [line for line in quick_start.strip().splitlines() if line]
    assert len(lines) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert lines[1] in ci


def _console_examples():
    """``(command args, printed output)`` of each README console block that runs analyze,
    gemm, compare or sweep."""
    text = README.read_text(encoding="utf-8")
    for block in text.split("```console\n")[1:]:
        body = block.split("```")[0]
        first, _, output = body.partition("\n")
        commands = ("$ roofline analyze", "$ roofline gemm", "$ roofline compare",
                    "$ roofline sweep")
        if first.startswith(commands) and "\\" not in first and "--plot" not in first:
            yield first.removeprefix("$ roofline ").split(), output


def test_readme_analyze_examples_show_real_output(invoke, monkeypatch):
    monkeypatch.chdir(ROOT)
    examples = list(_console_examples())
    assert len(examples) >= 2
    assert {args[0] for args, _ in examples} >= {"analyze", "gemm", "compare", "sweep"}
    for args, output in examples:
        assert invoke(*args).stdout == output, " ".join(args)


def _text_files():
    for folder in ("docs", "src", "tests", "examples", "notebooks", "tools", "benchmarks", "hwdb"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".md", ".py", ".ipynb", ".yaml", ".json"}:
                yield path
    yield README


def test_the_project_points_at_nothing_outside_it():
    for path in _text_files():
        text = path.read_text(encoding="utf-8")
        for outside in ("DESIGN" + ".md", "../" + "shared", "shared" + "/reference"):
            assert outside not in text, f"{path.relative_to(ROOT)} mentions {outside}"


def test_relative_links_in_markdown_resolve():
    import re

    for path in [README, *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#\s]+)\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_readme_links_the_design_doc():
    assert "(docs/design.md)" in README.read_text(encoding="utf-8")
