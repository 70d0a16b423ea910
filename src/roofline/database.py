"""The hardware database: bundled entries (package data ``roofline.hwdb``) plus user entries.

User entries live in ``$ROOFLINE_HWDB`` if set, else in the platform's user data directory
(``platformdirs.user_data_dir("roofline")/hwdb``). A user entry with the same name as a bundled
one overrides it. Entries are read on first use and cached; ``clear_cache()`` forgets them.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import InputError, UnknownHardwareError
from .fields import load_yaml_file
from .hardware import HardwareSpec

ENV_VAR = "ROOFLINE_HWDB"


def user_hwdb_dir() -> Path:
    """Where user and probe-saved entries live: ``$ROOFLINE_HWDB`` or the user data dir."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("roofline")) / "hwdb"


@dataclass(frozen=True)
class Catalog:
    """Every known entry by name, and every alias mapped to its entry's name."""

    entries: dict[str, HardwareSpec]
    aliases: dict[str, str]

    def resolve(self, name: str) -> HardwareSpec:
        key = name.lower()
        key = self.aliases.get(key, key)
        if key in self.entries:
            return self.entries[key]
        raise UnknownHardwareError(_unknown_message(name, self))


def load_entry_file(path: Path, location: str, require_stem: bool = True) -> HardwareSpec:
    """Read and validate one entry file; with ``require_stem`` its name must equal the stem."""
    spec = HardwareSpec.from_dict(load_yaml_file(path), str(path), location)
    if require_stem and spec.name != path.stem:
        raise InputError(str(path), "name", f"must equal the file name stem {path.stem!r}, "
                                            f"got {spec.name!r}")
    return spec


def _bundled_files() -> list[tuple[Path, str]]:
    root = resources.files("roofline.hwdb")
    return [(Path(str(p)), "bundled") for p in _walk_yaml(root)]


def _walk_yaml(folder) -> list:
    found = []
    for child in sorted(folder.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            found += _walk_yaml(child)
        elif child.name.endswith(".yaml"):
            found.append(child)
    return found


def _user_files(folder: Path) -> list[tuple[Path, str]]:
    if not folder.is_dir():
        return []
    return [(p, f"user ({folder})") for p in sorted(folder.rglob("*.yaml"))]


@lru_cache(maxsize=4)
def _catalog(user_dir: str) -> Catalog:
    entries: dict[str, HardwareSpec] = {}
    aliases: dict[str, str] = {}
    for path, location in _bundled_files() + _user_files(Path(user_dir)):
        spec = load_entry_file(path, location)
        entries[spec.name] = spec  # user entries come last and override bundled ones
        aliases.update(dict.fromkeys(spec.aliases, spec.name))  # an override keeps old aliases
    return Catalog(entries, {a: n for a, n in aliases.items() if a not in entries})


def catalog() -> Catalog:
    """The bundled and user entries, loaded once per user directory."""
    return _catalog(str(user_hwdb_dir()))


def clear_cache() -> None:
    """Forget loaded entries (after saving a new one, or changing ``$ROOFLINE_HWDB``)."""
    _catalog.cache_clear()


def list_hardware(kind: str | None = None) -> list[HardwareSpec]:
    """All entries, sorted by kind then name; ``kind`` ("gpu" or "cpu") filters."""
    specs = sorted(catalog().entries.values(), key=lambda s: (s.kind, s.name))
    return [s for s in specs if kind is None or s.kind == kind]


def load_hardware(name_or_path: str | os.PathLike) -> HardwareSpec:
    """An entry by name or alias (case-insensitive), or a YAML file given by path."""
    text = os.fspath(name_or_path)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        return load_entry_file(Path(text), f"file ({text})", require_stem=False)
    return catalog().resolve(text)


def _unknown_message(name: str, cat: Catalog) -> str:
    known = sorted(cat.entries)
    close = difflib.get_close_matches(name.lower(), known + sorted(cat.aliases), n=3, cutoff=0.6)
    close = list(dict.fromkeys(cat.aliases.get(c, c) for c in close))
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"unknown hardware {name!r}{hint} (known: {', '.join(known)})"
