"""JSON text for every command's ``--format json``: one encoder, used by reports, hardware views
and the probe alike. Numbers stay raw (SI units); this module only lays them out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import RooflineError

#: ``json.dumps(value, allow_nan=False)``'s encoder, made once (dumps makes one per call when
#: an option is given: a deep report encodes 300,000 small objects)
_ENCODE = json.JSONEncoder(allow_nan=False).encode
#: a string as JSON, as ``_ENCODE`` writes it (ASCII, escaped)
_STRING = json.encoder.encode_basestring_ascii


def _dumps(value: Any) -> str:
    """One value as JSON; NaN and Infinity are not JSON, so they are refused, never printed."""
    try:
        return _ENCODE(value)
    except ValueError:
        raise RooflineError(f"cannot print JSON: a number is not finite "
                            f"(at {_non_finite(value) or 'the top'})") from None


def _non_finite(value: Any, path: str = "") -> str | None:
    """The path of the first NaN or infinity in ``value``."""
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return path or None
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        found = _non_finite(item, f"{path}[{key}]" if isinstance(key, int) else
                            (f"{path}.{key}" if path else str(key)))
        if found:
            return found
    return None


def to_json(data: Any) -> str:
    """JSON with one line per top-level key and per item of a list of objects.

    Readable, and fast: each line goes through the C encoder, which ``indent=`` would disable
    (a 10,000-layer report took 2.7 s with ``indent=2``).
    """
    if isinstance(data, list):
        return _json_items(data, "")
    if not isinstance(data, dict):
        return _dumps(data)
    parts = []
    for key, value in data.items():
        is_table = isinstance(value, list) and value and isinstance(value[0], dict)
        text = _json_items(value, "  ") if is_table else _dumps(value)
        parts.append(f"  {_dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}"


def _json_items(items: list, indent: str) -> str:
    if not items:
        return "[]"
    inner = ",\n".join(f"{indent}  {_dumps(item)}" for item in items)
    return f"[\n{inner}\n{indent}]"



def write_json(data: dict, write: Callable[[str], Any]) -> None:
    """``to_json(data) + "\\n"`` written piece by piece through ``write``. A value may be an
    iterator of objects (a generator), written one line per item as it comes, so a
    300,000-GEMM report is never held as 300,000 dicts and one giant string at once; an item
    may be a pair of dicts (its own keys, keys it shares with other items: ``analysis.report.
    gemm_objects``), written as one object, the shared part encoded once. Every
    other value is encoded before the first byte is written, so one that cannot be printed
    (a non-finite number) fails without leaving half a document on stdout."""
    def is_rows(value: Any) -> bool:
        return isinstance(value, Iterator) or (isinstance(value, list) and bool(value)
                                               and isinstance(value[0], dict))

    encoded = {key: None if is_rows(value) else _dumps(value) for key, value in data.items()}
    write("{")
    for i, (key, value) in enumerate(data.items()):
        write(("," if i else "") + f"\n  {_dumps(key)}: ")
        text = encoded[key]
        if text is None:
            _write_items(value, write)
        else:
            write(text)
    write("\n}\n")


def _write_items(items: Iterable, write: Callable[[str], Any]) -> None:
    count = 0
    shared: dict[int, tuple[dict, str]] = {}  # id -> (the shared dict, kept alive; its text)
    for item in items:
        text = _joined(item[0], item[1], shared) if isinstance(item, tuple) else _dumps(item)
        write(("," if count else "[") + f"\n    {text}")
        count += 1
    write("\n  ]" if count else "[]")


def _joined(own: dict, rest: dict, shared: dict[int, tuple[dict, str]]) -> str:
    """``_dumps(own | rest)`` (``own``'s keys first, none of them in ``rest``), with ``rest``
    encoded once however many items share it."""
    found = shared.get(id(rest))
    if found is None or found[0] is not rest:
        found = shared[id(rest)] = (rest, _dumps(rest))
    if not own:
        return found[1]
    if not rest:
        return _dumps(own)
    if all(type(value) is str for value in own.values()):  # a name and a layer: at once
        head = ", ".join(f"{_STRING(key)}: {_STRING(value)}" for key, value in own.items())
        return f"{{{head}, {found[1][1:]}"
    return f"{_dumps(own)[:-1]}, {found[1][1:]}"
