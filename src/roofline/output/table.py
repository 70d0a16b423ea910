"""The one table renderer: rows of text cells as an aligned plain-text table or a Markdown one.
Every table the CLI prints (analyze, compare, sweep, hw list) goes through here."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]],
            left: Collection[int]) -> list[str]:
    """``header`` and ``rows`` padded to the widest cell of each column, two spaces apart:
    columns in ``left`` (text) left-aligned, the others (numbers) right-aligned; trailing
    spaces trimmed; a rule of dashes under the header, as long as the header line."""
    return list(aligned_lines(header, rows, left))


def aligned_lines(header: Sequence[str], rows: Sequence[Sequence[str]],
                  left: Collection[int]) -> Iterator[str]:
    """``aligned``'s lines one by one, made as they are read: a table of 300,000 rows is
    never held as 300,000 lines at once (the rows are: the widths need every cell; a deep
    model's GEMM table goes through ``aligned_shared``, which needs no row twice)."""
    blank = ("",) * len(header)  # a short row's missing cells are empty
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, tuple(row) + blank)]
    # one format for every row: a row is one call, not a call per cell (100,000s of rows)
    line = "  ".join(f"{{:{'<' if i in left else '>'}{width}}}"
                     for i, width in enumerate(widths)).format
    first = line(*header).rstrip()
    yield first
    yield "-" * len(first)
    for row in rows:
        yield line(*row, *blank[len(row):]).rstrip()


def aligned_shared(header: Sequence[str], rows: Iterable[Sequence[Any]],
                   tails: Mapping[Any, Sequence[str]], left: Collection[int],
                   widths: Sequence[int]) -> Iterator[str]:
    """``aligned_lines`` for a table whose rows end in cells that many rows share (a deep
    model's GEMMs: a name and a layer each, then one of a few shapes' figures): a row is its
    own leading cells, then the key of its trailing ones in ``tails`` (the keys the rows use,
    no other: every tail sets its columns' widths); ``widths`` are the widest leading cells.
    Each distinct tail is padded once, so a row costs one short format (the lines are
    ``aligned_lines``'s, character for character)."""
    lead = len(widths)
    blank = ("",) * (len(header) - lead)
    width = [max([len(h)] + [len(cells[i]) for cells in tails.values() if i < len(cells)])
             for i, h in enumerate(header[lead:])]

    def pad(cells: Sequence[str]) -> str:
        return "  ".join(f"{c:<{w}}" if lead + i in left else f"{c:>{w}}"
                         for i, (c, w) in enumerate(zip((*cells, *blank[len(cells):]), width)))

    padded = {key: pad(cells).rstrip() for key, cells in tails.items()}
    line = "  ".join([*(f"{{:{'<' if i in left else '>'}{max(w, len(h))}}}"
                        for i, (w, h) in enumerate(zip(widths, header))), "{}"]).format
    first = line(*header[:lead], pad(header[lead:])).rstrip()
    yield first
    yield "-" * len(first)
    if all(padded.values()):  # a row ends in its tail, already trimmed: one format a row
        if lead == 1:
            yield from (line(cell, padded[key]) for cell, key in rows)
            return
        if lead == 2:
            yield from (line(one, two, padded[key]) for one, two, key in rows)
            return
    yield from (line(*row[:-1], padded[row[-1]]).rstrip() for row in rows)


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]],
             left: Collection[int]) -> list[str]:
    """A Markdown table: columns in ``left`` left-aligned (``---``), the others right-aligned
    (``--:``)."""
    return list(markdown_lines(header, rows, left))


def markdown_lines(header: Sequence[str], rows: Iterable[Sequence[str]],
                   left: Collection[int]) -> Iterator[str]:
    """``markdown``'s lines one by one, made as they are read (a deep model's 300,000 rows)."""
    yield "| " + " | ".join(header) + " |"
    yield "|" + "|".join("---" if i in left else "--:" for i in range(len(header))) + "|"
    yield from ("| " + " | ".join(row) + " |" for row in rows)
