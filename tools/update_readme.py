"""Regenerate the README's table of bundled hardware from hwdb/ (run after editing an entry),
and the printed output of its analyze / gemm / compare / sweep / plan console examples (run after
changing what those commands print; tests/test_readme.py checks both).

    python tools/update_readme.py          # rewrite README.md in place
    python tools/update_readme.py --check  # exit 1 if the hardware table is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def expected_readme(text: str) -> str:
    from roofline.hardware.catalog import list_hardware
    from roofline.output.hardware import README_END, README_START, hardware_markdown_table

    bundled = [s for s in list_hardware() if s.location == "bundled"]
    start, end = text.index(README_START), text.index(README_END) + len(README_END)
    return text[:start] + hardware_markdown_table(bundled) + text[end:]


EXAMPLE_COMMANDS = ("$ roofline analyze", "$ roofline gemm", "$ roofline compare",
                    "$ roofline sweep", "$ roofline plan")


def with_example_outputs(text: str) -> str:
    """``text`` with each runnable console example's output printed afresh (from the
    repository root, as a reader would run it)."""
    import os

    from click.testing import CliRunner

    from roofline.cli import cli

    os.chdir(README.parent)
    pieces = text.split("```console\n")
    for i, block in enumerate(pieces[1:], 1):
        body, fence, rest = block.partition("```")
        first, _, _ = body.partition("\n")
        if first.startswith(EXAMPLE_COMMANDS) and "\\" not in first and "--plot" not in first:
            args = first.removeprefix("$ roofline ").split()
            # no $COLUMNS: a table's layer names whole, as the tests read them
            output = CliRunner().invoke(cli, args, env={"COLUMNS": None},
                                        catch_exceptions=False).stdout
            pieces[i] = f"{first}\n{output}{fence}{rest}"
    return "```console\n".join(pieces)


def main() -> int:
    text = README.read_text(encoding="utf-8")
    new = expected_readme(text)
    if "--check" in sys.argv:
        if new != text:
            print("README.md hardware table is stale: run python tools/update_readme.py")
            return 1
        return 0
    from roofline.files.atomic import write_atomic

    write_atomic(README, with_example_outputs(new))  # whole or not at all
    return 0


if __name__ == "__main__":
    sys.exit(main())
