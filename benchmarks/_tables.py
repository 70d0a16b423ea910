"""The one way the benchmarks print a table: plain text (each column padded to its widest
cell, two spaces apart) or Markdown (``--markdown``: what the README's tables are pasted
from)."""

from __future__ import annotations

from collections.abc import Sequence


def table_lines(header: Sequence[str], body: Sequence[Sequence[str]],
                markdown: bool = False) -> list[str]:
    """``header`` and ``body`` as text lines, Markdown when ``markdown``."""
    if markdown:
        return ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|",
                *("| " + " | ".join(line) + " |" for line in body)]
    widths = [max(len(x[i]) for x in [header, *body]) for i in range(len(header))]
    return ["  ".join(x.ljust(w) for x, w in zip(line, widths)) for line in [header, *body]]
