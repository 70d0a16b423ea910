"""Layer types: each reads itself from model.yaml, expands into GEMMs, and says what each GEMM
dimension means.

A layer type is a small frozen class with:

- ``from_fields(fields, index)``: read and validate its own keys (errors name the field path);
- ``has_weights``: whether it has trainable weights (the data-gradient rule below needs it);
- ``parameters``: its trainable parameter count; ``needs_seq`` (optional, default false):
  whether the model must give ``seq``; ``in_width`` / ``out_width``: the feature
  widths it takes and gives (None where that is not a width, e.g. token ids);
- ``forward(step)`` and ``backward(step, data_grad)`` (``step``: a ``Step`` with batch, seq,
  phase and the activation element size): its GEMMs (``GemmShape``) and non-GEMM ops
  (``roofline.ops.OpShape``) in execution order, the backward list with the data-gradient GEMMs
  (only when ``data_grad``) before the weight-gradient ones. Each GEMM shape carries the roles of
  M, N and K (for alignment messages) and which of them grow with the batch (for batch advice),
  so the rest of the package never asks a layer's type.

Optional, for layers that need them: ``with_input(shape, fields)`` (a layer that reads a feature
map returns itself bound to the previous layer's ``out_shape``: see ``spatial``), ``out_shape``,
``branch`` (a side branch: the chain continues from the layer before it) and
``input_bytes(step)`` (what the step reads as input when the layer comes first).

Memory (optional; ``saved_bytes``, ``live_bytes`` and ``matrix_parameters`` below give the
rule for a layer without them): ``matrix_parameters`` (the weights its GEMMs read as B, which a
weight format stores; default 0), ``kv_cache_bytes(step)`` (default 0), ``saved_bytes(step,
recompute)`` (training: what the forward pass keeps for the backward pass; default the layer's
input) and ``live_bytes(step)`` (inference: the most it holds at once; default its input and
output). Recomputation's time (optional): ``recomputed(step, recompute)`` (training: which of
its forward items the backward pass runs again, a flag per item in order, what its
``saved_bytes`` under ``recompute`` no longer keeps; default none: a layer whose saved bytes do
not change with ``recompute`` recomputes nothing).

``REGISTRY`` maps model.yaml's ``type:`` to the class: a new layer type is one new file here and
one line in ``REGISTRY``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from ..gemm import GemmShape
from .add import Add
from .batchnorm import BatchNorm
from .captured import Captured
from .conv2d import Conv2d
from .embedding import Embedding
from .flatten import Flatten
from .linear import Linear
from .norm import Norm
from .pooling import AvgPool2d, MaxPool2d
from .step import PHASES, Step
from .transformer import Transformer

if TYPE_CHECKING:
    from ...files.fields import Fields

#: A layer model.yaml can name.
FileLayer = Union[Linear, Transformer, Embedding, Norm, Conv2d, MaxPool2d, AvgPool2d, Flatten,
                  BatchNorm, Add]
#: Any layer a Network holds: a file's, or a module's work captured from PyTorch.
Layer = Union[FileLayer, Captured]

REGISTRY: dict[str, type[FileLayer]] = {"linear": Linear, "transformer": Transformer,
                             "embedding": Embedding, "norm": Norm, "conv2d": Conv2d,
                             "maxpool2d": MaxPool2d, "avgpool2d": AvgPool2d,
                             "flatten": Flatten, "batchnorm": BatchNorm, "add": Add}

__all__ = ["PHASES", "idle_parameters", "kv_cache_bytes", "live_bytes", "matrix_parameters",
           "recomputed", "routing_period", "saved_bytes",
           "REGISTRY", "Add", "AvgPool2d", "BatchNorm", "Captured", "Conv2d", "Embedding",
           "Flatten", "GemmShape", "Layer", "Linear", "MaxPool2d", "Norm", "Step", "Transformer",
           "layer_from_fields"]


def layer_from_fields(fields: Fields, index: int) -> Layer:
    """The layer described by one ``layers[i]`` mapping."""
    kind = fields.string("type")
    if kind not in REGISTRY:
        raise fields.fail("type", f"unknown layer type {kind!r} (known: {', '.join(REGISTRY)})")
    return REGISTRY[kind].from_fields(fields, index)


def matrix_parameters(layer: Layer) -> int:
    """The weights ``layer``'s GEMMs read as their B operand (0 for a layer without GEMMs)."""
    return int(getattr(layer, "matrix_parameters", 0))


def idle_parameters(layer: Layer) -> int:
    """The parameters of ``layer`` a token does not run (a mixture of experts' unrouted
    experts; 0 elsewhere)."""
    return int(getattr(layer, "idle_parameters", 0))


def routing_period(layer: Layer) -> int:
    """The batches over which ``layer``'s work grows evenly: a mixture of experts spreads its
    routed rows over every expert it holds, the same number each, at every batch that is a
    multiple of its local experts (``Transformer._expert_rows``); 1 for every other layer."""
    return max(1, int(getattr(layer, "local_experts", 0)))


def kv_cache_bytes(layer: Layer, step: Step) -> int:
    """The KV cache ``layer`` keeps for the step (attention only)."""
    own = getattr(layer, "kv_cache_bytes", None)
    return own(step) if own is not None else 0


def _map_bytes(layer: Layer, step: Step, which: str) -> int | None:
    """A spatial layer's input (``which`` "in") or output map over the batch, or None."""
    shape = getattr(layer, "out_shape", None) if which == "out" else getattr(layer, "shape",
                                                                             None)
    return None if shape is None else step.batch * shape.elements * step.e


def saved_bytes(layer: Layer, step: Step, recompute: str) -> int:
    """Training: what ``layer`` keeps from its forward pass for its backward pass (its own
    rule, else its input: the tensor a weight gradient or an elementwise gradient reads)."""
    own = getattr(layer, "saved_bytes", None)
    if own is not None:
        return int(own(step, recompute))
    if hasattr(layer, "input_bytes"):
        return int(layer.input_bytes(step))
    spatial = _map_bytes(layer, step, "in")
    return spatial if spatial is not None else step.tokens * (layer.in_width or 0) * step.e


def recomputed(layer: Layer, step: Step, recompute: str) -> tuple[bool, ...]:
    """Training: which of ``layer.forward(step)``'s items its backward pass runs again under
    ``recompute``, a flag per item in order (its own rule: a transformer block's whole forward
    under ``full``, its naive attention core under ``selective``; a linear layer's product and
    bias before its activation under ``full``); () where it runs nothing again: ``none``, a
    step outside training, a layer without the rule."""
    own = getattr(layer, "recomputed", None)
    if own is None or recompute == "none" or step.phase != "train":
        return ()
    flags = tuple(own(step, recompute))
    return flags if any(flags) else ()


def live_bytes(layer: Layer, step: Step) -> int:
    """Inference: the most ``layer`` holds at once (its own rule, else its input and its
    output)."""
    own = getattr(layer, "live_bytes", None)
    if own is not None:
        return int(own(step))
    out = _map_bytes(layer, step, "out")
    if out is None:
        out = step.tokens * (layer.out_width or 0) * step.e
    return saved_bytes(layer, step, "none") + out
