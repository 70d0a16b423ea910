"""What a capture's run saw (``_Recorder``): per module, the forward and backward GEMMs and ops
in order, and the state the capture_* modules share while the module runs (its parameters'
shapes, the weights and tables seen, the layout of the latest convolution, the zeros a backward
may scatter into, the dtypes its GEMMs ran in, the optimizer's sums, the values and memory
followed); and the dict where an autograd node keeps the module whose forward made it
(``_metadata``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from .capture_memory import Live
from .capture_values import Values
from .layers.captured import Item


@dataclass
class _Recorder:
    """What the two modes saw: per module, the forward and backward items in order."""

    root: str
    train: bool
    flash: bool
    params: dict[str, list[tuple[int, ...]]]  # module -> its parameters' shapes
    forward: dict[str, list[Item]] = field(default_factory=dict)
    backward: dict[str, list[Item]] = field(default_factory=dict)
    uncosted: dict[str, int] = field(default_factory=dict)
    nchw_convs: int = 0  # forward 16-bit convolutions on NCHW inputs (Network.nchw_convs)
    # whether the latest convolution ran channels last: the layout of the maps after it, which
    # a batch norm is priced by (capture_shapes._norm_shape); its output's strides say it too
    # since capture._laid_out, this flag kept as the batch norm's reading was fitted with it
    conv_nhwc: bool = False
    # the modules whose depthwise 3-D convolutions ran channels last
    # (Network.channels_last_depthwise_3d)
    channels_last_depthwise: dict[str, None] = field(default_factory=dict)
    # the shapes of the inputs a convolution took unbatched, (C, L), (C, H, W) or (C, D, H, W):
    # torch gives them a batch of 1 itself (``capture._batch_of``)
    unbatched: set[tuple[int, ...]] = field(default_factory=set)
    weights: dict[int, Any] = field(default_factory=dict)  # id -> a parameter or a view of one
    zeroed: dict[int, Any] = field(default_factory=dict)  # id -> a tensor of zeros (ZERO_FILLS)
    matrices: set[int] = field(default_factory=set)  # ids of the parameters GEMMs read as B
    tables: set[int] = field(default_factory=set)  # ids of the parameters an embedding gathers
    owned_matrices: dict[str, int] = field(default_factory=dict)  # module -> matrix parameters
    last: str = ""
    failed: bool = False  # an op raised (named last, or the one it ran): the failure is its
    depth: int = 0  # ops being called (an op inside another: a decomposition's)
    module: str = ""
    quiet: int = 0
    updating: bool = False  # recording the optimizer's step
    kind: str = "none"  # the optimizer stepped (OPTIMIZER_KINDS)
    # (aten op, its own dtype) -> flops, elements, other bytes, summed over the parameters
    update: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    gemm_dtypes: dict[str, int] = field(default_factory=dict)  # A's dtype -> GEMMs in it
    in_attention: int = 0  # inside torch's own (math) attention: its upcast GEMMs not counted
    handling: int = 0  # torch functions the function mode is running, itself off inside them
    dtype: str | None = None  # the model's, known before the run (``_scales``)
    loss: bool = False  # training, the module returned a scalar (its loss), backpropagated
    values: Values = field(default_factory=Values)  # meta tensors' values, where known
    live: Live | None = None  # the tensors the run holds at once (capture_memory.py)
    optimizer_states: tuple[int, int] | None = None  # a torch optimizer's, as Live counts

    def add(self, module: str, backward: bool, item: Item) -> None:
        book = self.backward if backward else self.forward
        book.setdefault(module, []).append(item)
        self.forward.setdefault(module, [])


def _metadata(node: Any) -> dict[str, Any]:
    """An autograd node's metadata dict (a property; torch's stubs call it a method)."""
    return cast(dict[str, Any], node.metadata)
