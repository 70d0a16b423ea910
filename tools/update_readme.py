"""Regenerate the README's table of bundled hardware from hwdb/ (run after editing an entry).

    python tools/update_readme.py          # rewrite README.md in place
    python tools/update_readme.py --check  # exit 1 if README.md is stale (what the test does)
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


def main() -> int:
    text = README.read_text(encoding="utf-8")
    new = expected_readme(text)
    if "--check" in sys.argv:
        if new != text:
            print("README.md hardware table is stale: run python tools/update_readme.py")
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
