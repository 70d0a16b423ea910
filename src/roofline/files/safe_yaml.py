"""Reading model and hardware files without trusting them: regular files only, a size cap,
bounded nesting and alias expansion, unique keys, bounded integers, no Python objects.

Every refusal is an InputError naming the file and, where there is one, the field path. The
limits (docs/design.md, "Limits"):

- a file must be a regular file (not a FIFO, device or directory) of at most 16 MiB;
- collections nest at most ``MAX_DEPTH`` deep (libyaml's composer recurses in C: 100,000 levels
  crash the interpreter);
- aliases (``*name``) may add at most ``MAX_ALIAS_NODES`` nodes in all (a "billion laughs"
  file stays small on disk but explodes when printed);
- a key appears at most once per mapping (YAML and JSON require it; PyYAML keeps the last
  silently);
- an integer literal has at most ``MAX_INT_CHARS`` characters (Python refuses to convert
  4,300-digit strings, and no figure or dimension needs more than 13 digits);
- timestamps stay strings (``date: 2024-05-01`` is text in an entry, and JSON has no dates);
- a ``.json`` file's numbers are read as JSON reads them: ``1e30`` is a number (YAML 1.1 reads
  it as text), so a config's ``"hidden_size": 1e30`` is refused as a number, not as a string;
- text holds no control character but tab and newline (``errors.control_character``): a name
  written ``"a\\x1b[31mred"`` (YAML's and JSON's escapes both make the byte) reached the
  terminal raw from every text format, so it is refused here, once for every file the tool
  reads (models, configs, hardware entries, links), keys included.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import yaml

from ..errors import InputError, control_character
from .numbers import MAX_INT_DIGITS

MAX_FILE_BYTES = 16 * 2**20
MAX_DEPTH = 100
MAX_ALIAS_NODES = 10_000
MAX_INT_CHARS = MAX_INT_DIGITS  # the one bound of integer literals, files and options alike

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
#: A JSON number with a fraction or an exponent (RFC 8259's grammar). An integer, signed or not,
#: is left to YAML's int rule, which reads it as JSON does: ``-1`` an int, not the float -1.0 (a
#: message then echoes it as written)
_JSON_REAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)",
                        re.ASCII)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def read_text(path: str | os.PathLike[str]) -> str:
    """The UTF-8 text of ``path``, refusing anything but a regular file of at most 16 MiB.

    The type is checked before opening (opening a FIFO blocks until a writer comes) and again
    on the open descriptor, which is non-blocking, so a file swapped in between cannot hang.
    """
    source = str(path)
    try:
        _check_regular(os.stat(path).st_mode, source)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            _check_regular(os.fstat(handle.fileno()).st_mode, source)
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(source, "", f"cannot read file: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(source, "", "file is larger than 16 MiB (the limit for model and "
                                     "hardware files)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(source, "", f"cannot read file: not UTF-8 text ({exc.reason} at "
                                     f"byte {exc.start})") from None


def _check_regular(mode: int, source: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise InputError(source, "", f"cannot read file: {kind}, not a regular file")


def parse(text: str, source: str) -> Any:
    """Parse YAML ``text`` within the limits above; ``source`` names it in error messages."""
    if len(text) > MAX_FILE_BYTES:
        raise InputError(source, "", "text is larger than 16 MiB (the limit for model and "
                                     "hardware files)")
    try:
        check_structure(text, source)
        loader = StrictLoader(text)
        loader.source = source
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        kind = "JSON (read as YAML, which holds JSON)" if is_json(source) else "YAML"
        raise InputError(source, "", f"invalid {kind}: {where}{problem}") from None


def is_json(source: str) -> bool:
    """Whether ``source`` names a JSON file (by its extension): its numbers are read as JSON
    writes them and its messages say JSON."""
    return source.lower().endswith(".json")


def check_structure(text: str, source: str) -> None:
    """Walk the parser's events (libyaml's parser is iterative, so this cannot overflow the C
    stack) and refuse deep nesting and alias bombs before anything is composed."""
    depth, added = 0, 0
    sizes: dict[str, int] = {}  # anchor -> nodes in its subtree
    starts: list[tuple[str | None, int]] = []  # open collections: (anchor, node count at start)
    nodes = 0
    for index, event in enumerate(yaml.parse(text, Loader=_BASE)):
        kind = type(event)
        anchor: str | None = getattr(event, "anchor", None)  # node and alias events have one
        if kind is yaml.ScalarEvent:
            nodes += 1
            if anchor:
                sizes[anchor] = 1
        elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
            depth += 1
            if depth > MAX_DEPTH:
                raise _structure_error(text, source, index, f"nested deeper than {MAX_DEPTH} "
                                                            f"levels")
            starts.append((anchor, nodes))
            nodes += 1
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            depth -= 1
            opened, start = starts.pop()
            if opened:
                sizes[opened] = nodes - start
        elif kind is yaml.AliasEvent:
            size = sizes.get(anchor or "", 1)
            nodes, added = nodes + size, added + size
            if added > MAX_ALIAS_NODES:
                raise _structure_error(text, source, index, f"aliases expand to more than "
                                                            f"{MAX_ALIAS_NODES:,} nodes")


def _structure_error(text: str, source: str, index: int, problem: str) -> InputError:
    path, mark = _event_path(text, index)
    if len(path) > 80:
        path = path[:60] + "..."
    return InputError(source, path, f"{problem} (line {mark.line + 1}, column {mark.column + 1})")


def _event_path(text: str, target: int) -> tuple[str, Any]:
    """The field path of the node that event number ``target`` starts, and its mark. Walks the
    events again keeping the path (only on error: check_structure stays cheap)."""
    frames: list[list[Any]] = []  # per open collection: [is mapping, children so far, path]
    for index, event in enumerate(yaml.parse(text, Loader=_BASE)):
        if isinstance(event, yaml.CollectionEndEvent):
            frames.pop()
            if frames:
                frames[-1][1] += 1
            continue
        if not isinstance(event, yaml.NodeEvent):
            continue
        path = _child_path(frames)
        if index == target:
            return path, event.start_mark
        if isinstance(event, yaml.CollectionStartEvent):
            frames.append([isinstance(event, yaml.MappingStartEvent), 0, path])
        elif frames:
            if frames[-1][0] and frames[-1][1] % 2 == 0 and isinstance(event, yaml.ScalarEvent):
                frames[-1].append(event.value)  # the key of the value that follows
            frames[-1][1] += 1
    return "", None


def _child_path(frames: list[list[Any]]) -> str:
    if not frames:
        return ""
    is_map, count, path = frames[-1][:3]
    if not is_map:
        return f"{path}[{count}]"
    key = str(frames[-1][-1]) if count % 2 and len(frames[-1]) > 3 else "?"
    return f"{path}.{key}" if path else key


class StrictLoader(_BASE):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml's C one when present), refusing duplicate keys and overlong
    integers with the field path, and keeping timestamps as strings."""

    source = "<yaml>"
    _root: Any = None

    def construct_document(self, node: Any) -> Any:
        self._root = node
        return super().construct_document(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # unhashable: the base class says so
                continue
            if duplicate:
                kind = "JSON" if is_json(self.source) else "YAML"
                raise self.fail(key_node, f"duplicate key {str(key)!r} ({kind} keys must be "
                                          f"unique; the file gives it twice)", as_key=True)
        return super().construct_mapping(node, deep)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """A plain decimal integer (a 100,000-width ``mlp:`` list) resolved at once, to the
        int tag YAML 1.1's rule gives it; in a JSON file, a number with a fraction or an
        exponent (``1e30``, ``1e-05``) to a float, as JSON reads it (YAML 1.1 wants a dot and a
        signed exponent, and made ``1e30`` the string '1e30'); everything else as the base
        loader does."""
        if kind is yaml.ScalarNode and implicit[0] and _plain_decimal(value):
            return _INT_TAG
        if (kind is yaml.ScalarNode and implicit[0] and is_json(self.source)
                and _JSON_REAL.fullmatch(value)):
            return _FLOAT_TAG
        return super().resolve(kind, value, implicit)

    def construct_sequence(self, node: Any, deep: bool = False) -> Any:
        """The items, a plain decimal integer read at once (``construct_bounded_int``'s value
        for it); the rest as the base loader does."""
        return [int(child.value) if child.tag == _INT_TAG and type(child) is yaml.ScalarNode
                and _plain_decimal(child.value) and not child.style
                else self.construct_object(child, deep=deep) for child in node.value]

    def construct_bounded_int(self, node: Any) -> int:
        if len(node.value) > MAX_INT_CHARS:
            digits = sum(c.isdigit() for c in node.value)
            raise self.fail(node, f"an integer of {digits:,} digits is out of range")
        return yaml.SafeLoader.construct_yaml_int(self, node)

    def construct_text(self, node: Any) -> str:
        """A string (a value or a key), refused if it holds a control character."""
        value: str = yaml.SafeLoader.construct_yaml_str(self, node)
        found = control_character(value)
        if found is not None:
            raise self.fail(node, f"text holds the control character {found}, which a terminal "
                                  f"would act on instead of showing: remove it")
        return value

    def fail(self, node: Any, problem: str, as_key: bool = False) -> InputError:
        return InputError(self.source, node_path(self._root, node, as_key), problem)


StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_bounded_int)
StrictLoader.add_constructor("tag:yaml.org,2002:str", StrictLoader.construct_text)
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def _plain_decimal(value: str) -> bool:
    """ASCII digits without a leading zero (YAML 1.1 reads ``012`` as octal), within the
    digits any integer may have."""
    return (value.isascii() and value.isdigit() and len(value) <= MAX_INT_CHARS
            and (value[0] != "0" or len(value) == 1))


def node_path(root: Any, target: Any, as_key: bool = False) -> str:
    """The field path (``layers[1].in``) of ``target`` under ``root``; a mapping key's path is
    the path of the value it names. Only called on error, so a plain search is fine."""
    stack = [(root, "")]
    seen: set[int] = set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack += [(child, f"{path}[{i}]") for i, child in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                child = f"{path}.{name}" if path else str(name)
                if key is target and as_key:
                    return child
                stack += [(key, child), (value, child)]
        elif node is target:
            return path
    return ""
