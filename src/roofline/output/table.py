"""The one table renderer: rows of text cells as an aligned plain-text table or a Markdown one.
Every table the CLI prints (analyze, compare, sweep, hw list) goes through here."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]],
            left: Collection[int]) -> list[str]:
    """``header`` and ``rows`` padded to the widest cell of each column, two spaces apart:
    columns in ``left`` (text) left-aligned, the others (numbers) right-aligned; trailing
    spaces trimmed; a rule of dashes under the header, as long as the header line."""
    return list(aligned_lines(header, rows, left))


def aligned_lines(header: Sequence[str], rows: Sequence[Sequence[str]],
                  left: Collection[int]) -> Iterator[str]:
    """``aligned``'s lines one by one, made as they are read: a table of 300,000 rows is
    never held as 300,000 lines at once (the rows are: the widths need every cell)."""
    blank = ("",) * len(header)  # a short row's missing cells are empty
    widths = [max(len(cell) for cell in column) for column in zip(
        header, *(tuple(row) + blank[len(row):] for row in rows))]
    # one format for every row: a row is one call, not a call per cell (100,000s of rows)
    line = "  ".join(f"{{:{'<' if i in left else '>'}{width}}}"
                     for i, width in enumerate(widths)).format
    first = line(*header).rstrip()
    yield first
    yield "-" * len(first)
    for row in rows:
        yield line(*row, *blank[len(row):]).rstrip()


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]],
             left: Collection[int]) -> list[str]:
    """A Markdown table: columns in ``left`` left-aligned (``---``), the others right-aligned
    (``--:``)."""
    return ["| " + " | ".join(header) + " |",
            "|" + "|".join("---" if i in left else "--:" for i in range(len(header))) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]
