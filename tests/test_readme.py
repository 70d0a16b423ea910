"""The README stays true: its hardware table is generated from hwdb/, its quick start is what CI runs."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


def test_readme_hardware_table_is_current():
    expected_readme = runpy.run_path(str(ROOT / "tools" / "update_readme.py"))["expected_readme"]
    text = README.read_text(encoding="utf-8")
    assert expected_readme(text) == text, "run: python tools/update_readme.py"


def test_ci_runs_the_readme_test_command():
    """CI installs as the quick start says, then runs its pytest with -m "" (every group), after
    ruff and mypy; nothing may swallow a failure, pytest's exit 5 (no tests) included."""
    text = README.read_text(encoding="utf-8")
    quick_start = text.split("```sh")[1].split("```")[0]
    lines = [line for line in quick_start.strip().splitlines() if line]
    assert len(lines) == 2
    install, _, test = lines[1].rpartition(" && ")
    assert test == ".venv/bin/pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in ci.splitlines() if line and not line.startswith("#")]
    assert "set -euo pipefail" in commands
    assert install in commands
    ruff, mypy, every_group = (".venv/bin/ruff check src tests benchmarks tools", ".venv/bin/mypy",
                               f'{test} -m ""')
    assert commands.index(install) < commands.index(ruff) < commands.index(mypy) \
        < commands.index(every_group) == len(commands) - 1
    assert not [line for line in commands if "|" in line], "no pipes, no || true"
    assert f"`{every_group}`" in text, "the README says how to run every group"


def test_ci_installs_the_browser_and_fails_without_it():
    """The browser group runs under .ci/run: Debian's chromium installed when missing (never a
    download by playwright), and CI=true, under which a missing browser fails those tests."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in ci.splitlines() if line and not line.startswith("#")]
    assert "export CI=true" in commands
    assert "apt-get install -y chromium" in commands
    assert "playwright install" not in ci
    browser_tests = (ROOT / "tests" / "test_report_browser.py").read_text(encoding="utf-8")
    assert 'executable_path=CHROMIUM' in browser_tests and "pytest.fail(" in browser_tests


def test_the_default_run_leaves_out_the_slow_and_browser_groups():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    options = pyproject["tool"]["pytest"]["ini_options"]
    assert '-m "not slow and not browser"' in options["addopts"]
    assert "--strict-markers" in options["addopts"]
    assert {m.split(":")[0] for m in options["markers"]} == {"slow", "browser"}


def _console_examples():
    """``(command args, printed output)`` of each README console block that runs analyze,
    gemm, compare, sweep or plan."""
    text = README.read_text(encoding="utf-8")
    for block in text.split("```console\n")[1:]:
        body = block.split("```")[0]
        first, _, output = body.partition("\n")
        commands = ("$ roofline analyze", "$ roofline gemm", "$ roofline compare",
                    "$ roofline sweep", "$ roofline plan")
        if first.startswith(commands) and "\\" not in first and "--plot" not in first:
            yield first.removeprefix("$ roofline ").split(), output


def test_readme_analyze_examples_show_real_output(invoke, monkeypatch):
    # a captured module's example (package.module:callable) needs the torch extra, which the
    # quick start's `pip install ".[test]"` leaves out: checked where torch is installed (CI)
    import importlib.util

    from roofline.api import model_framework

    monkeypatch.chdir(ROOT)
    examples = list(_console_examples())
    assert len(examples) >= 2
    assert {args[0] for args, _ in examples} >= {"analyze", "gemm", "compare", "sweep"}
    have_torch = importlib.util.find_spec("torch") is not None
    for args, output in examples:
        if model_framework(args[1]) == "torch" and not have_torch:
            continue
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


def test_changes_has_an_entry_for_the_current_version():
    import roofline

    changes = (ROOT / "CHANGES.md").read_text(encoding="utf-8")
    assert f"\n## {roofline.__version__}: " in changes, "a version move gets a CHANGES.md entry"
    assert "(CHANGES.md)" in README.read_text(encoding="utf-8")


def test_readme_names_the_leading_csv_columns_of_analyze_and_compare(invoke):
    """The README's sentence on CSV names the columns each command's rows start with, as the
    two commands print them with several --hw (analyze's and compare's differ: the contract
    in docs/design.md keeps compare's name, layer, pass, hardware)."""
    import re

    text = " ".join(README.read_text(encoding="utf-8").split())
    said = re.search(r"analyze's CSV is always one table whose rows start with (.*?), so "
                     r".*?compare's CSV, one row per GEMM and device, starts with (.*?) \(", text)
    assert said is not None
    columns = [re.findall(r"`(\w+)`", part) for part in said.groups()]
    model = str(ROOT / "examples" / "mlp-1024-4096-1000.yaml")
    for command, named in zip(("analyze", "compare"), columns):
        out = invoke(command, model, "--hw", "a100", "--hw", "h100", "--format", "csv")
        assert out.exit_code == 0, out.output
        header = out.stdout.splitlines()[0].split(",")
        assert header[:len(named)] == named, command


def test_readme_page_sizes_are_current(invoke):
    """The sizes the README gives for its HTML pages are what its commands print, within 2%
    (a page names the command and version that made it: a few bytes move with them)."""
    import re

    text = " ".join(README.read_text(encoding="utf-8").split())
    said = re.search(r"offline\), (\d+) kB for ResNet-50's training step \(the first command\) "
                     r"and (\d+) kB for Llama-2-7B at `--batch 8 --seq 4096` \((\d+) kB with "
                     r"`--expand`", text)
    assert said is not None
    resnet = ["analyze", ROOT / "examples" / "resnet50.yaml", "--hw", "a100", "--format", "html"]
    assert "roofline " + " ".join(map(str, resnet)).replace(f"{ROOT}/", "") in text
    llama = ["analyze", ROOT / "examples" / "hf" / "llama-2-7b.json", "--hw", "a100", "--batch",
             "8", "--seq", "4096", "--format", "html"]
    for kb, args in zip(said.groups(), (resnet, llama, [*llama, "--expand"])):
        out = invoke(*args)
        assert out.exit_code == 0, out.output
        assert len(out.stdout_bytes) == pytest.approx(int(kb) * 1000, rel=0.02), args
