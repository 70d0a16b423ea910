"""The one table renderer: rows of text cells as an aligned plain-text table or a Markdown one.
Every table the CLI prints (analyze, compare, sweep, hw list) goes through here, and every line
of Markdown prose through ``markdown_text``: the one place Markdown is escaped."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

#: What a cut cell starts with in place of what it lost (ASCII, as every text output is).
ELLIPSIS = "..."
#: A column cut to fit a terminal keeps at least this many characters, the ellipsis included:
#: the longest layer name of the bundled config.json models (``blk.28.expert_down``, 18) whole,
#: a captured one's block and module (``...er.h.11.mlp.c_proj``). Narrower, the lines run past
#: the terminal's edge rather than lose what tells the rows apart.
CUT_FLOOR = 20


class Fit(NamedTuple):
    """A plain-text table fit into ``width`` characters by cutting the cells of ``column`` (a
    name: the one column that can lose characters and still be read), as far as
    ``CUT_FLOOR``."""

    width: int
    column: int


def cut_end(text: str, width: int) -> str:
    """``text`` in ``width`` characters: whole where it fits, else ``ELLIPSIS`` and its end
    (``...er.h.11.mlp.c_proj``). The end is kept: a layer's name says last what it is (the
    projection, the expert) and which copy (the block's number), and first the model's prefix
    that many rows share (``transformer.h.``); a cut start leaves rows that differ at the end
    told apart, where a cut end made ``blk.1.expert_up`` and ``blk.1.expert_down`` one."""
    if len(text) <= width:
        return text
    return ELLIPSIS + text[len(text) - width + len(ELLIPSIS):]


def fitted_width(widths: Sequence[int], fit: Fit | None) -> int | None:
    """The width ``fit.column`` keeps in a table of columns ``widths`` wide (two spaces apart):
    None where it needs no cut (no ``fit``, or the table fits in ``fit.width``), else what the
    other columns leave it, never under ``CUT_FLOOR`` (nor cut where it is narrower)."""
    if fit is None:
        return None
    own = widths[fit.column]
    over = sum(widths) + 2 * (len(widths) - 1) - fit.width
    if over <= 0 or own <= CUT_FLOOR:
        return None
    return max(CUT_FLOOR, own - over)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]],
            left: Collection[int], fit: Fit | None = None) -> list[str]:
    """``header`` and ``rows`` padded to the widest cell of each column, two spaces apart:
    columns in ``left`` (text) left-aligned, the others (numbers) right-aligned; trailing
    spaces trimmed; a rule of dashes under the header, as long as the header line. With
    ``fit``, a table wider than ``fit.width`` has the cells of ``fit.column`` cut to their
    ends (``cut_end``, ``fitted_width``); without, every cell is whole."""
    return list(aligned_lines(header, rows, left, fit))


def aligned_lines(header: Sequence[str], rows: Sequence[Sequence[str]],
                  left: Collection[int], fit: Fit | None = None) -> Iterator[str]:
    """``aligned``'s lines one by one, made as they are read: a table of 300,000 rows is
    never held as 300,000 lines at once (the rows are: the widths need every cell; a deep
    model's GEMM table goes through ``aligned_shared``, which needs no row twice)."""
    blank = ("",) * len(header)  # a short row's missing cells are empty
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, tuple(row) + blank)]
    keep = fitted_width(widths, fit)
    if keep is not None and fit is not None:
        widths[fit.column] = keep
        rows = [_cut(row, fit.column, keep) for row in rows]
    # one format for every row: a row is one call, not a call per cell (100,000s of rows)
    line = "  ".join(f"{{:{'<' if i in left else '>'}{width}}}"
                     for i, width in enumerate(widths)).format
    first = line(*header).rstrip()
    yield first
    yield "-" * len(first)
    for row in rows:
        yield line(*row, *blank[len(row):]).rstrip()


def _cut(row: Sequence[Any], column: int, width: int) -> Sequence[Any]:
    """``row`` with its cell in ``column`` cut to ``width`` (``cut_end``)."""
    if column >= len(row) or len(row[column]) <= width:
        return row
    return (*row[:column], cut_end(row[column], width), *row[column + 1:])


def aligned_shared(header: Sequence[str], rows: Iterable[Sequence[Any]],
                   tails: Mapping[Any, Sequence[str]], left: Collection[int],
                   widths: Sequence[int], fit: Fit | None = None) -> Iterator[str]:
    """``aligned_lines`` for a table whose rows end in cells that many rows share (a deep
    model's GEMMs: a name and a layer each, then one of a few shapes' figures): a row is its
    own leading cells, then the key of its trailing ones in ``tails`` (the keys the rows use,
    no other: every tail sets its columns' widths); ``widths`` are the widest leading cells.
    Each distinct tail is padded once, so a row costs one short format (the lines are
    ``aligned_lines``'s, character for character). ``fit`` as ``aligned``'s, its column one of
    the leading cells."""
    lead = len(widths)
    blank = ("",) * (len(header) - lead)
    width = [max([len(h)] + [len(cells[i]) for cells in tails.values() if i < len(cells)])
             for i, h in enumerate(header[lead:])]
    leading = [max(w, len(h)) for w, h in zip(widths, header)]
    keep = fitted_width(leading + width, fit)
    if keep is not None and fit is not None:
        column = fit.column
        widths = [keep if i == column else w for i, w in enumerate(widths)]
        rows = (_cut(row, column, keep) for row in rows)

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


_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_CELL = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|"})
_MARKUP = re.compile("[&<>]")


def markdown_text(text: str) -> str:
    """``text`` as a line of Markdown shows it: ``&``, ``<`` and ``>`` written as HTML entities.
    Markdown passes HTML through, so a model named ``<script>...</script>`` or a layer
    ``fc<2>`` would be markup on the rendered page (run, or swallowed as an unknown tag);
    escaped, it reads as typed. Not for a fenced code block, whose text is shown as it is
    (an entity there would read ``&lt;``)."""
    return text.translate(_ENTITIES)


def markdown_cell(text: str) -> str:
    """``text`` as a Markdown table's cell: ``markdown_text``, and ``|`` as ``\\|``, which
    would end the cell (a layer ``fc|1`` split its row into one cell more than the header)."""
    return text.translate(_CELL)


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]],
             left: Collection[int]) -> list[str]:
    """A Markdown table: columns in ``left`` left-aligned (``---``), the others right-aligned
    (``--:``); every cell escaped (``markdown_cell``)."""
    return list(markdown_lines(header, rows, left))


def markdown_lines(header: Sequence[str], rows: Iterable[Sequence[str]],
                   left: Collection[int]) -> Iterator[str]:
    """``markdown``'s lines one by one, made as they are read (a deep model's 300,000 rows:
    a row whose cells hold nothing to escape, nearly every one, is joined once and checked
    whole, not cell by cell)."""
    yield "| " + " | ".join(map(markdown_cell, header)) + " |"
    yield "|" + "|".join("---" if i in left else "--:" for i in range(len(header))) + "|"
    for row in rows:
        joined = " | ".join(row)
        if joined.count("|") != len(row) - 1 or _MARKUP.search(joined):
            joined = " | ".join(map(markdown_cell, row))
        yield f"| {joined} |"
