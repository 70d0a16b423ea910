"""A network's layers grouped alike: a layer's fields but its name as a key (``_fields_key``;
two layers with one key give the same GEMMs and ops, named for each), and the layers grouped by
it (``layer_groups``, ``Network.layer_groups``), so that a figure over the layers, or the step's
GEMMs and ops (``network_parts``), is worked out once per distinct layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .layers import Layer
from .repeats import Layers

if TYPE_CHECKING:
    from .network import Network

#: a layer type -> (how many fields, a getter of every field but the name, as a tuple)
_KEY_OF: dict[type, tuple[int, Callable[[Any], tuple[Any, ...]]]] = {}


def _one_field(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A getter of at most one field, as a tuple (``attrgetter`` gives a bare value)."""
    if not names:
        return lambda layer: ()
    at = attrgetter(names[0])
    return lambda layer: (at(layer),)


def _fields_key(layer: Any) -> tuple[Any, ...] | None:
    """A layer's fields but its name, as a key (None when a field cannot be hashed): two
    layers with one key give the same GEMMs and ops, named for each. Read through one getter
    per type (a deep model asks 200,000 times)."""
    kind = type(layer)
    found = _KEY_OF.get(kind)
    if found is None:
        names = [f.name for f in dataclass_fields(kind) if f.name != "name"]
        getter = attrgetter(*names) if len(names) > 1 else _one_field(names)
        found = _KEY_OF[kind] = (len(names) + 1, getter)
    count, getter = found
    if len(layer.__dict__) != count:
        return None  # something beside the fields (a cached value): not a key
    key = (kind, getter(layer))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def layer_groups(network: Network, but_last: bool = False) -> list[tuple[int, Layer]]:
    """The layers (``but_last``: all but the last run) grouped by their fields but their
    name (``_fields_key``; a layer whose fields make no key is a group of its own), as
    (copies, a layer of the group) in order of first appearance: what a figure summed or
    maximized over the layers needs, once per distinct layer (a 100,000-layer MLP of seven
    widths has seven). The same at every batch: made once for these layers."""
    assert isinstance(network.layers, Layers)
    layers = network.layers

    def make() -> list[tuple[int, Layer]]:
        groups: dict[Any, list[Any]] = {}
        runs = layers.runs[:-1] if but_last else layers.runs
        for i, run in enumerate(runs):
            key = layers.key_of(run.layer, _fields_key)
            found = groups.setdefault(i if key is None else key, [0, run.layer])
            found[0] += run.count
        return [(count, layer) for count, layer in groups.values()]

    return layers.cached(("layer_groups", but_last), make)
