"""The one table renderer: rows of text cells as an aligned plain-text table or a Markdown one.
Every table the CLI prints (analyze, compare, sweep, hw list) goes through here."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]],
            left: Collection[int]) -> list[str]:
    """``header`` and ``rows`` padded to the widest cell of each column, two spaces apart:
    columns in ``left`` (text) left-aligned, the others (numbers) right-aligned; trailing
    spaces trimmed; a rule of dashes under the header, as long as the header line."""
    table = [list(header), *(list(row) for row in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if i in left else cell.rjust(width)
                       for i, (cell, width) in enumerate(zip(row, widths))).rstrip()
             for row in table]
    lines.insert(1, "-" * len(lines[0]))
    return lines


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]],
             left: Collection[int]) -> list[str]:
    """A Markdown table: columns in ``left`` left-aligned (``---``), the others right-aligned
    (``--:``)."""
    return ["| " + " | ".join(header) + " |",
            "|" + "|".join("---" if i in left else "--:" for i in range(len(header))) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]
