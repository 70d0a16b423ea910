"""CSV lines as ``csv.writer`` (``lineterminator="\\n"``, minimal quoting) writes them, for the
formats that list a repeat's every copy (compare's and sweep's CSV): a copy's row differs from
its run's others by its names only, so what follows them is written once per stored result
(``csv_line``) and each row is its names (``names_cells``) before it."""

from __future__ import annotations

import csv
import io
from typing import Any

#: The characters that make the writer quote a cell (its delimiter, quote character and line
#: ends): a cell without any of them is written as it is.
_QUOTED = frozenset(',"\r\n')


def csv_line(fields: list[Any]) -> str:
    """``fields`` as one CSV line, its line end included."""
    line = io.StringIO()
    csv.writer(line, lineterminator="\n").writerow(fields)
    return line.getvalue()


def names_cells(*names: str) -> str:
    """Text cells (a GEMM's name, its layer) as the start of a CSV line with more cells after
    them: as they are, or quoted where one needs it (``csv_line``)."""
    for name in names:
        if not _QUOTED.isdisjoint(name):
            return csv_line(list(names))[:-1]
    return ",".join(names)
