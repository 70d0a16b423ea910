"""The hardware database: bundled entries (package data ``roofline.hwdb``) plus user entries.

User entries live in ``$ROOFLINE_HWDB`` if set, else in the platform's user data directory
(``platformdirs.user_data_dir("roofline")/hwdb``). A user entry with the same name as a bundled
one overrides it (and says so in ``HardwareSpec.overrides``). Entries are read on first use and
cached; ``clear_cache()`` forgets them.

A user file that cannot be read or validated is skipped with a ``HwdbWarning`` (its message is
the usual ``file: field: problem``) and listed in ``catalog().problems``; it is an error only
when it is the entry asked for.
"""

from __future__ import annotations

import difflib
import os
import re
import warnings
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, UnknownHardwareError, described
from ..files.fields import load_yaml_file
from .sanity import doubts
from .spec import HardwareSpec

if TYPE_CHECKING:
    from importlib.abc import Traversable

ENV_VAR = "ROOFLINE_HWDB"


def user_hwdb_dir() -> Path:
    """Where user and probe-saved entries live: ``$ROOFLINE_HWDB`` or the user data dir."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("roofline")) / "hwdb"


class HwdbWarning(UserWarning):
    """A user hardware file was skipped because it cannot be read or is invalid; or an entry
    loaded holds a figure that looks wrong (``hardware.sanity.doubts``), or an alias that
    clashes with another entry's name or alias (which one ``--hw NAME`` picks is said)."""


@dataclass(frozen=True)
class Catalog:
    """Every known entry by name, and every alias mapped to its entry's name; ``broken`` holds
    the error of each skipped user file by its stem, ``problems`` their one-line messages."""

    entries: dict[str, HardwareSpec]
    aliases: dict[str, str]
    broken: dict[str, InputError] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def resolve(self, name: str) -> HardwareSpec:
        asked = name.lower()
        key = self.aliases.get(asked, asked)
        for stem in (asked, key):  # the entry asked for is a skipped file: now it is an error
            if stem in self.broken:
                raise self.broken[stem]
        if key in self.entries:
            return self.entries[key]
        raise UnknownHardwareError(_unknown_message(name, self))


def load_entry_file(path: Path, location: str, require_stem: bool = True) -> HardwareSpec:
    """Read and validate one entry file; with ``require_stem`` its name must equal the stem."""
    spec = HardwareSpec.from_dict(load_yaml_file(path), str(path), location)
    if require_stem and spec.name != path.stem:
        raise InputError(str(path), "name", f"must equal the file name stem {path.stem!r}, "
                                            f"got {spec.name!r}")
    for key, why in doubts(spec):  # loaded all the same: a warning each, never silence
        warnings.warn(HwdbWarning(str(InputError(str(path), key, why))), stacklevel=2)
    return spec


def _bundled_files() -> list[tuple[Path, str]]:
    """Bundled entries are ours: an invalid one is a bug, raised, never skipped."""
    root = resources.files("roofline.hwdb")
    return [(Path(str(p)), "bundled") for p in _walk_yaml(root)]


def _walk_yaml(folder: Traversable) -> list[Traversable]:
    found = []
    for child in sorted(folder.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            found += _walk_yaml(child)
        elif child.name.endswith(".yaml"):
            found.append(child)
    return found


def _user_files(folder: Path) -> tuple[list[Path], list[str]]:
    if not folder.exists():
        return [], []
    if not folder.is_dir():
        return [], [f"{folder}: not a directory (${ENV_VAR} or the user data dir); "
                    f"no user entries read"]
    return sorted(folder.rglob("*.yaml")), []


@lru_cache(maxsize=1)
def _bundled() -> Catalog:
    entries: dict[str, HardwareSpec] = {}
    aliases: dict[str, str] = {}
    for path, location in _bundled_files():
        spec = load_entry_file(path, location)
        entries[spec.name] = spec
        aliases.update(dict.fromkeys(spec.aliases, spec.name))
    return Catalog(entries, aliases)


def bundled_names() -> dict[str, str]:
    """Every bundled entry name and alias, mapped to the bundled entry's name."""
    bundled = _bundled()
    return dict(bundled.aliases) | {name: name for name in bundled.entries}


@lru_cache(maxsize=4)
def _catalog(user_dir: str) -> Catalog:
    entries, aliases = dict(_bundled().entries), dict(_bundled().aliases)
    taken = bundled_names()
    paths, problems = _user_files(Path(user_dir))
    broken: dict[str, InputError] = {}
    declared = {alias: (name, "bundled") for alias, name in aliases.items()}
    files: dict[str, str] = {}  # each user entry's file, by name
    for path in paths:
        try:
            spec = load_entry_file(path, f"user ({path})")  # the file, not only its folder
        except InputError as exc:
            broken[path.stem.lower()] = exc
            problems.append(f"{exc}; entry skipped")
            continue
        shadowed = tuple(n for n in (spec.name, *spec.aliases) if n in taken)
        files[spec.name] = str(path)
        entries[spec.name] = replace(spec, overrides=shadowed) if shadowed else spec
        for i, alias in enumerate(spec.aliases):  # an override keeps the old aliases
            problems += _alias_taken(alias, declared.get(alias), spec, path, i)
            declared[alias] = (spec.name, str(path))
            aliases[alias] = spec.name
    problems += _aliases_named(declared, entries, files)
    for problem in problems:
        warnings.warn(HwdbWarning(problem), stacklevel=3)
    aliases = {a: n for a, n in aliases.items() if a not in entries}
    return Catalog(entries, aliases, broken, tuple(problems))


def _alias_taken(alias: str, before: tuple[str, str] | None, spec: HardwareSpec, path: Path,
                 index: int) -> list[str]:
    """A user entry's alias that another entry declared first: the later file takes it (a
    user entry may override a bundled one), said in one line naming both files."""
    if before is None or before[0] == spec.name:
        return []
    owner, where = before
    first = "bundled" if where == "bundled" else f"{where}'s"
    return [str(InputError(str(path), f"aliases[{index}]", (
        f"{alias!r} is also {first} {owner}'s alias; the name {alias} now picks this entry, "
        f"{spec.name} (rename the alias to keep {owner})")))]


def _aliases_named(declared: dict[str, tuple[str, str]], entries: dict[str, HardwareSpec],
                   files: dict[str, str]) -> list[str]:
    """An alias that is another entry's name: the name wins (that name picks the entry it
    names), the alias is dropped; said in one line naming both, in the user's file."""
    out = []
    for alias, (owner, where) in declared.items():
        named = entries.get(alias)
        if named is None or owner == alias or alias not in files and where == "bundled":
            continue
        if where == "bundled":  # a user entry named as a bundled alias
            out.append(str(InputError(files[alias], "name", (
                f"{alias!r} is also bundled {owner}'s alias; the name {alias} now picks this "
                f"entry, not {owner}"))))
        else:
            other = files.get(alias, "bundled")
            out.append(str(InputError(where, "aliases", (
                f"{alias!r} is the name of the entry {alias} ({other}); the name picks that "
                f"entry, not {owner}: this alias is ignored"))))
    return out


def catalog() -> Catalog:
    """The bundled and user entries, loaded once per user directory."""
    return _catalog(str(user_hwdb_dir()))


def clear_cache(bundled: bool = True) -> None:
    """Forget loaded entries (after saving a new one, or changing ``$ROOFLINE_HWDB``); with
    ``bundled=False`` keep the bundled ones, which do not change while a process runs."""
    _catalog.cache_clear()
    if bundled:
        _bundled.cache_clear()


def list_hardware(kind: str | None = None) -> list[HardwareSpec]:
    """All entries, sorted by kind then name; ``kind`` ("gpu" or "cpu") filters."""
    specs = sorted(catalog().entries.values(), key=lambda s: (s.kind, s.name))
    return [s for s in specs if kind is None or s.kind == kind]


def load_hardware(name_or_path: str | os.PathLike) -> HardwareSpec:
    """An entry by name or alias (case-insensitive), or a YAML file given by path."""
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise _not_hardware(name_or_path, "an entry's name or a YAML file's path")
    text = os.fspath(name_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        return load_entry_file(Path(text), f"file ({text})", require_stem=False)
    return catalog().resolve(text)


def hardware_spec(hardware: HardwareSpec | str | os.PathLike) -> HardwareSpec:
    """The ``hardware`` argument of every library call as a spec: a HardwareSpec as it is, a
    name or path loaded (``load_hardware``). The one place that argument is checked, so that
    ``None``, a number or a list is refused in one line naming it, not deep inside a path
    function."""
    if isinstance(hardware, HardwareSpec):
        return hardware
    if not isinstance(hardware, (str, os.PathLike)):
        raise _not_hardware(hardware, "a HardwareSpec, an entry's name or a YAML file's path")
    return load_hardware(hardware)


def _not_hardware(given: object, expected: str) -> InputError:
    # a list is the one mistake with a likely cause: several devices are compare's
    hint = "; several devices are compare's" if isinstance(given, (list, tuple)) else ""
    return InputError("hardware", "", f"expected {expected}, got {described(given)}{hint}")


#: Vendor and brand words a user may put before a device's own name (``nvidia-l4``,
#: ``NVIDIA Tesla V100``), tried without them for the suggestion.
_BRANDS = re.compile(r"^((nvidia|amd|intel|tesla|geforce|quadro|rtx|xeon|epyc)[-_ ]+)+")


def _unknown_message(name: str, cat: Catalog) -> str:
    known = sorted(cat.entries)
    names = known + sorted(cat.aliases)
    given = name.lower().strip()
    bare = _BRANDS.sub("", given).replace(" ", "-")
    close = [bare] if bare in names else difflib.get_close_matches(given, names, n=3,
                                                                   cutoff=0.6)
    if not close and bare != given:
        close = difflib.get_close_matches(bare, names, n=3, cutoff=0.6)
    close = list(dict.fromkeys(cat.aliases.get(c, c) for c in close))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown hardware {name!r}{hint} (known: {', '.join(known)})"
