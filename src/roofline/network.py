"""A network described by model.yaml, and its expansion into GEMMs.

model.yaml (the contract in DESIGN.md)::

    name: mlp-1024-4096-1000    # optional; defaults to the file stem
    batch: 512                  # positive int
    dtype: fp16                 # fp64 | fp32 | tf32 | fp16 | bf16 | int8 | fp8
    mode: train                 # train (forward + backward GEMMs) | inference (forward only)
    layers:
      - {type: linear, in: 1024, out: 4096, name: fc1}   # name optional (default fc<i>)
      - {type: linear, in: 4096, out: 1000}

or ``mlp: [1024, 4096, 1000]`` in place of ``layers``.

GEMMs of a linear layer with ``in`` inputs, ``out`` outputs and batch B (M x N x K):

- forward          Y  = X . W        M = B,   N = out, K = in
- backward-data    dX = dY . W^T     M = B,   N = in,  K = out   (not for the first layer)
- backward-weight  dW = X^T . dY     M = in,  N = out, K = B

Numbering: forward GEMMs first in layer order (MM1..MMn), then the backward pass in reverse
layer order, each layer's data-gradient GEMM before its weight-gradient GEMM. Training an
n-layer MLP therefore takes 3n - 1 GEMMs; inference takes n.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .dtypes import DTYPES
from .errors import InputError
from .fields import Fields, load_yaml_file, load_yaml_text, positive_int
from .gemm import Gemm

MODES = ("train", "inference")
LAYER_TYPES = ("linear",)
_TOP_KEYS = frozenset({"name", "batch", "dtype", "mode", "layers", "mlp"})
_LINEAR_KEYS = frozenset({"type", "in", "out", "name"})


@dataclass(frozen=True)
class Linear:
    """A fully connected layer: ``in_features`` inputs, ``out_features`` outputs."""

    name: str
    in_features: int
    out_features: int

    def forward(self, batch: int) -> tuple[str, int, int, int]:
        return ("forward", batch, self.out_features, self.in_features)

    def backward(self, batch: int, first: bool) -> list[tuple[str, int, int, int]]:
        weight = ("backward-weight", self.in_features, self.out_features, batch)
        if first:
            return [weight]
        return [("backward-data", batch, self.in_features, self.out_features), weight]


@dataclass(frozen=True)
class Network:
    """A model to analyze: its layers and the batch, dtype and mode it runs with."""

    name: str
    batch: int
    dtype: str
    mode: str
    layers: tuple[Linear, ...]

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
        shapes = [(layer, layer.forward(self.batch)) for layer in self.layers]
        if self.mode == "train":
            for index in range(len(self.layers) - 1, -1, -1):
                layer = self.layers[index]
                shapes += [(layer, s) for s in layer.backward(self.batch, first=index == 0)]
        return tuple(
            Gemm(f"MM{i}", layer.name, pass_, m, n, k, self.dtype)
            for i, (layer, (pass_, m, n, k)) in enumerate(shapes, start=1)
        )


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
        batch=top.positive_int("batch"),
        dtype=top.choice("dtype", DTYPES),
        mode=top.choice("mode", MODES, "train"),
        layers=_layers(top),
    )


def _layers(top: Fields) -> tuple[Linear, ...]:
    if top.has("layers") == top.has("mlp"):
        raise InputError(top.source, "layers", "give exactly one of 'layers' or 'mlp'")
    if top.has("mlp"):
        return _mlp_layers(top)
    entries = top.items("layers")
    if not entries:
        raise top.fail("layers", "expected at least one layer")
    return tuple(_layer(Fields(entry, top.source, top.where("layers") + f"[{i}]"), i)
                 for i, entry in enumerate(entries))


def _layer(fields: Fields, index: int) -> Linear:
    kind = fields.string("type")
    if kind not in LAYER_TYPES:
        raise fields.fail("type", f"unknown layer type {kind!r} (known: {', '.join(LAYER_TYPES)})")
    fields.reject_unknown(_LINEAR_KEYS)
    return Linear(
        name=fields.string("name", f"fc{index + 1}"),
        in_features=fields.positive_int("in"),
        out_features=fields.positive_int("out"),
    )


def _mlp_layers(top: Fields) -> tuple[Linear, ...]:
    widths = top.items("mlp")
    if len(widths) < 2:
        raise top.fail("mlp", "expected at least two widths (inputs, outputs)")
    for i, width in enumerate(widths):
        positive_int(width, lambda key, problem: InputError(top.source, f"mlp[{key}]", problem), i)
    return tuple(Linear(f"fc{i + 1}", a, b) for i, (a, b) in enumerate(zip(widths, widths[1:])))
