"""A network described by model.yaml, and its expansion into GEMMs.

model.yaml (the contract in docs/design.md)::

    name: mlp-1024-4096-1000    # optional; defaults to the file stem
    batch: 512                  # positive int
    dtype: fp16                 # fp64 | fp32 | tf32 | fp16 | bf16 | int8 | fp8
    mode: train                 # train (forward + backward GEMMs) | inference (forward only)
    layers:
      - {type: linear, in: 1024, out: 4096, name: fc1}   # name optional (default fc<i>)
      - {type: linear, in: 4096, out: 1000}

or ``mlp: [1024, 4096, 1000]`` in place of ``layers``. Each layer type (roofline.layers) reads
its own fields and gives its own GEMMs; this module orders and numbers them.

Numbering: forward GEMMs first in layer order (MM1..MMn), then the backward pass in reverse
layer order, each layer's data-gradient GEMMs before its weight-gradient GEMMs. A layer computes
its data gradient only when an earlier layer has trainable weights (the first weighted layer has
none). Training an n-layer MLP therefore takes 3n - 1 GEMMs; inference takes n.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .dtypes import DTYPES
from .errors import InputError
from .fields import Fields, load_yaml_file, load_yaml_text, positive_int
from .gemm import Gemm, GemmShape
from .layers import Linear, layer_from_fields  # noqa: F401 - Linear: the mlp shorthand

MODES = ("train", "inference")
_TOP_KEYS = frozenset({"name", "batch", "dtype", "mode", "layers", "mlp"})


@dataclass(frozen=True)
class Network:
    """A model to analyze: its layers and the batch, dtype and mode it runs with."""

    name: str
    batch: int | None  # None until --batch gives it, when the file has none
    dtype: str
    mode: str
    layers: tuple[Any, ...]  # roofline.layers classes
    source: str = field(default="<model>", compare=False)

    def with_overrides(self, batch: int | None = None, dtype: str | None = None,
                       mode: str | None = None) -> Network:
        """A copy with the given settings replaced (the CLI's --batch/--dtype/--mode)."""
        changes: dict[str, Any] = {}
        given = {"batch": batch, "dtype": dtype, "mode": mode}
        changes = {key: value for key, value in given.items() if value is not None}
        fields = Fields(changes, "overrides")
        if batch is not None:
            fields.positive_int("batch")
        if dtype is not None:
            fields.choice("dtype", DTYPES)
        if mode is not None:
            fields.choice("mode", MODES)
        return replace(self, **changes)

    def gemms(self) -> tuple[Gemm, ...]:
        """Every GEMM of one step, numbered MM1..MMk as the module docstring describes."""
        if self.batch is None:
            raise InputError(self.source, "batch", "missing required field (give it in the "
                                                   "model file or with --batch)")
        shapes: list[GemmShape] = []
        for layer in self.layers:
            shapes += layer.forward(self.batch)
        if self.mode == "train":
            shapes += self._backward()
        return tuple(
            Gemm(f"MM{i}", s.layer, s.pass_, s.m, s.n, s.k, self.dtype, s.roles, s.batch_dims)
            for i, s in enumerate(shapes, start=1)
        )

    def _backward(self) -> list[GemmShape]:
        weighted_before = [False]  # weighted_before[i]: does any layer before i have weights?
        for layer in self.layers[:-1]:
            weighted_before.append(weighted_before[-1] or layer.has_weights)
        shapes: list[GemmShape] = []
        for index in range(len(self.layers) - 1, -1, -1):
            shapes += self.layers[index].backward(self.batch, data_grad=weighted_before[index])
        return shapes


def load_network(path: str | Path) -> Network:
    """Read a model.yaml file into a Network; bad input raises InputError naming file and field."""
    return network_from_dict(load_yaml_file(path), str(path), default_name=Path(path).stem)


def network_from_yaml(text: str, source: str = "<model>") -> Network:
    """Parse model.yaml text (for notebooks and tests)."""
    return network_from_dict(load_yaml_text(text, source), source, default_name=source)


def network_from_dict(data: Any, source: str, default_name: str = "model") -> Network:
    """Validate a parsed model.yaml mapping and build the Network."""
    top = Fields(data, source)
    top.reject_unknown(_TOP_KEYS)
    return Network(
        name=top.string("name", default_name),
        batch=top.positive_int("batch", None),
        dtype=top.choice("dtype", DTYPES),
        mode=top.choice("mode", MODES, "train"),
        layers=_check_widths(_layers(top), top),
        source=source,
    )


def _layers(top: Fields) -> tuple[Any, ...]:
    if top.has("layers") == top.has("mlp"):
        raise InputError(top.source, "layers", "give exactly one of 'layers' or 'mlp'")
    if top.has("mlp"):
        return _mlp_layers(top)
    entries = top.items("layers")
    if not entries:
        raise top.fail("layers", "expected at least one layer")
    return tuple(layer_from_fields(Fields(entry, top.source, top.where("layers") + f"[{i}]"), i)
                 for i, entry in enumerate(entries))


def _check_widths(layers: tuple[Any, ...], top: Fields) -> tuple[Any, ...]:
    """Consecutive layers must fit: a layer's inputs are the previous layer's outputs."""
    for i in range(1, len(layers)):
        width = getattr(layers[i - 1], "out_features", None)
        wanted = getattr(layers[i], "in_features", None)
        if width is not None and wanted is not None and width != wanted:
            raise InputError(top.source, f"layers[{i}].in",
                             f"layer {layers[i].name!r} takes {wanted} inputs but the previous "
                             f"layer {layers[i - 1].name!r} (layers[{i - 1}]) gives {width} "
                             f"outputs")
    return layers


def _mlp_layers(top: Fields) -> tuple[Linear, ...]:
    widths = top.items("mlp")
    if len(widths) < 2:
        raise top.fail("mlp", "expected at least two widths (inputs, outputs)")
    for i, width in enumerate(widths):
        positive_int(width, lambda key, problem: InputError(top.source, f"mlp[{key}]", problem), i)
    return tuple(Linear(f"fc{i + 1}", a, b) for i, (a, b) in enumerate(zip(widths, widths[1:])))
