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


class Members:
    """A JSON object written as it is read (``json_chunks``): its (key, value) pairs, text
    keys, in order, never held as a dict (sweep's ``transitions``: a value per GEMM name, a
    repeat's every copy's). Written inline, ``{"k": v, ...}``: the text ``_dumps`` writes of
    the dict they make."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: Iterable[tuple[str, Any]]) -> None:
        self.pairs = pairs

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self.pairs)


#: The most shared parts (``_joined``) and rows' tails (``Bounded``) a streamed document keeps
#: encoded at once: a repeat's copies reuse their few within a copy's rows, so this bounds the
#: memory of a document whose rows are all distinct (a 100,000-layer MLP) without re-encoding
#: a repeat's.
KEPT = 2**14


class Bounded(dict[Any, Any]):
    """A cache of at most ``KEPT`` entries, emptied when full (``keep``): what a streamed
    listing remembers of the rows before (a row's tail made once per stored result) stays
    bounded whatever the row count."""

    def keep(self, key: Any, value: Any) -> Any:
        if len(self) >= KEPT:
            self.clear()
        self[key] = value
        return value


def json_chunks(data: dict) -> Iterator[str]:
    """``to_json(data) + "\\n"`` in pieces, made as they are written, so a document of
    millions of rows is never held as dicts or as one string. A value may be lazy: an
    iterator (a JSON array; at the top level one line per item, as ``to_json`` lays out a
    list of objects, else inline), ``Members`` (a JSON object, inline), or a dict or list
    holding one (a sweep's point, its GEMMs an iterator); an array's item may be a pair of
    dicts (its own keys, keys it shares with other items: ``analysis.report.gemm_objects``),
    written as one object, the shared part encoded once. Every top-level value that is not
    lazy is encoded before the first piece is given, so one that cannot be printed (a
    non-finite number) fails without leaving half a document; a lazy one is encoded as it
    comes."""
    def is_rows(value: Any) -> bool:
        return isinstance(value, Iterator) or (isinstance(value, list) and bool(value)
                                               and isinstance(value[0], dict))

    shared = Bounded()
    encoded = {key: None if is_rows(value) else _text(value) for key, value in data.items()}
    yield "{"
    for i, (key, value) in enumerate(data.items()):
        yield ("," if i else "") + f"\n  {_dumps(key)}: "
        text = encoded[key]
        if text is not None:
            yield text
        elif is_rows(value):
            yield from _rows(value, shared)
        else:
            yield from _inline(value, shared)
    yield "\n}\n"


def write_json(data: dict, write: Callable[[str], Any]) -> None:
    """``json_chunks(data)`` written piece by piece through ``write``."""
    for chunk in json_chunks(data):
        write(chunk)


def _rows(items: Iterable, shared: Bounded) -> Iterator[str]:
    """A top-level array, one line per item (``to_json``'s ``_json_items``)."""
    count = 0
    for item in items:
        head = ("," if count else "[") + "\n    "
        text = _joined(item[0], item[1], shared) if isinstance(item, tuple) else _text(item)
        if text is None:
            yield head
            yield from _inline(item, shared)
        else:
            yield head + text
        count += 1
    yield "\n  ]" if count else "[]"


def _text(value: Any) -> str | None:
    """``value`` as JSON (``_dumps``); None where it holds a lazy part (``json_chunks``)."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is int:
        return int.__repr__(value)  # what the encoder writes of an int
    if kind is str:
        return _STRING(value)
    if isinstance(value, (Iterator, Members)):
        return None
    try:
        return _dumps(value)
    except TypeError:  # a lazy part inside (the encoder takes no iterator)
        return None


def _inline(value: Any, shared: Bounded) -> Iterator[str]:
    """A value holding a lazy part on one line, as ``_dumps`` writes the value it stands for
    (``", "`` between items, ``": "`` after a key)."""
    if isinstance(value, (Members, dict)):
        pairs = iter(value) if isinstance(value, Members) else iter(value.items())
        opened = False
        for key, item in pairs:
            head = (", " if opened else "{") + _STRING(key) + ": "
            opened = True
            text = _text(item)
            if text is None:
                yield head
                yield from _inline(item, shared)
            else:
                yield head + text
        yield "}" if opened else "{}"
        return
    opened = False
    for item in value:  # an iterator or a list
        head = ", " if opened else "["
        opened = True
        text = _joined(item[0], item[1], shared) if isinstance(item, tuple) else _text(item)
        if text is None:
            yield head
            yield from _inline(item, shared)
        else:
            yield head + text
    yield "]" if opened else "[]"


def _joined(own: dict, rest: dict, shared: Bounded) -> str:
    """``_dumps(own | rest)`` (``own``'s keys first, none of them in ``rest``), with ``rest``
    encoded once however many items share it."""
    found = shared.get(id(rest))
    if found is None or found[0] is not rest:
        found = shared.keep(id(rest), (rest, _dumps(rest)))  # (kept alive: its id stays its)
    if not own:
        return found[1]
    if not rest:
        return _dumps(own)
    head = []
    for key, value in own.items():  # a name and a layer: at once, without the encoder
        if type(value) is not str:
            return f"{_dumps(own)[:-1]}, {found[1][1:]}"
        head.append(f"{_STRING(key)}: {_STRING(value)}")
    return f"{{{', '.join(head)}, {found[1][1:]}"
