"""The one table renderer: rows of text cells as an aligned plain-text table or a Markdown one.
Every table the CLI prints (analyze, compare, sweep, hw list) goes through here."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]],
            left: Collection[int]) -> list[str]:
    """``header`` and ``rows`` padded to the widest cell of each column, two spaces apart:
    columns in ``left`` (text) left-aligned, the others (numbers) right-aligned; trailing
    spaces trimmed; a rule of dashes under the header, as long as the header line."""
    blank = ("",) * len(header)  # a short row's missing cells are empty
    table = [tuple(header), *(tuple(row) + blank[len(row):] for row in rows)]
    widths = [max(map(len, column)) for column in zip(*table)]
    # one format for every row: a row is one call, not a call per cell (100,000s of rows)
    line = "  ".join(f"{{:{'<' if i in left else '>'}{width}}}"
                     for i, width in enumerate(widths)).format
    lines = [line(*row).rstrip() for row in table]
    lines.insert(1, "-" * len(lines[0]))
    return lines


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]],
             left: Collection[int]) -> list[str]:
    """A Markdown table: columns in ``left`` left-aligned (``---``), the others right-aligned
    (``--:``)."""
    return ["| " + " | ".join(header) + " |",
            "|" + "|".join("---" if i in left else "--:" for i in range(len(header))) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]
