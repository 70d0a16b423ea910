"""What the two XLA table extractions share (``extract_xla_matmul.py``,
``extract_xla_collectives.py``): XLA's performance tables are text protos with one top-level
``entries { key: DEVICE value { ... } }`` per device; the extractions read the devices they
know and write one CSV."""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Callable, Collection, Iterator
from typing import Any

_DEVICE = re.compile(r'^  key: "([^"]+)"', re.M)


def device_sections(text: str, keys: Collection[str]) -> Iterator[tuple[str, str]]:
    """(device key, its section's text) for each top-level device entry whose key is in
    ``keys``, in the file's order."""
    starts = [(m.start(), m.group(1)) for m in _DEVICE.finditer(text)] + [(len(text), "")]
    for (start, key), (end, _) in zip(starts, starts[1:]):
        if key in keys:
            yield key, text[start:end]


def write_rows(path: str, rows: Callable[[str], list[tuple]], keys: Collection[str],
               header: tuple[str, ...], order: Callable[[Any], Any]) -> None:
    """Read the table at ``path``, take its ``rows`` and write them to stdout as CSV under
    ``header``, sorted by ``order``; one line and exit 1 when no device of ``keys`` is in it."""
    with open(path, encoding="utf-8") as f:
        found = rows(f.read())
    if not found:
        raise SystemExit(f"{path}: no entry of {', '.join(sorted(keys))}")
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(header)
    out.writerows(sorted(found, key=order))
