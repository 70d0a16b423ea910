"""The memory a captured step holds at once beyond its parameters: its activations.

A capture's run allocates every tensor torch's ops make (on the meta device, sizes without
memory) and frees each as torch would, when the last reference goes: autograd's saved tensors at
the backward node that reads them, a layer's temporaries as its forward returns, the gradients
never (they stay on the parameters). ``Live`` follows those tensors' storages (a view shares its
base's) and keeps the most they held at once, the step's peak, with the parameters and buffers
left out (memory counts them as weights): what the step needs for its activations, its
temporaries and, training, its gradients, as torch's caching allocator sees them on a GPU
(``torch.cuda.max_memory_allocated`` past the weights, allocator rounding aside).

The peak is kept as the elements of the model's dtype and the bytes of every other tensor
(an fp32 upcast, an int64 index, a boolean mask) at that moment, so a ``--dtype`` override
scales the first as it scales the step's ops (``capture_tensors._scales``).

What it cannot see: memory torch's CUDA kernels take beyond their outputs (cuBLAS and attention
workspaces: the workspace allowance, ``analysis.memory.WORKSPACE_BYTES``), and a fused kernel's
saved state the meta device does not make (the capture's fused attention saves Q, K, V, its
output and, training, the log-sum-exp, as torch's kernels do).
"""

from __future__ import annotations

import weakref
from typing import Any


class Live:
    """Bytes of the storages a run holds, and their peak as (model-dtype elements, other
    bytes)."""

    def __init__(self, model_dtype: Any, state: list[Any], inputs: tuple[Any, ...]) -> None:
        """``state``: the parameters and buffers, never counted (memory's weights);
        ``inputs``: the example inputs, held from the start."""
        import torch
        from torch.utils.weak import WeakIdKeyDictionary

        self.model_dtype = model_dtype
        self.model_size = int(torch.empty((), dtype=model_dtype, device="meta").element_size())
        self.known: Any = WeakIdKeyDictionary()  # storage -> (model elements, other bytes)
        self.elements = self.other = 0
        self.peak_bytes = -1
        self.peak: tuple[int, int] = (0, 0)
        self.on = True
        for tensor in state:
            storage = storage_of(tensor)
            if storage is not None:
                self.known[storage] = (0, 0)
        self.made(inputs)

    def made(self, out: Any) -> None:
        """An op's output (a tensor, or a list or tuple of them): each new storage counted."""
        import torch

        if isinstance(out, (list, tuple)):
            for item in out:
                self.made(item)
        elif isinstance(out, torch.Tensor):
            self.add(out)

    def kept(self, run: Any) -> tuple[int, int]:
        """What ``run()`` leaves held (an optimizer's first step: its states), counted apart
        from the peak, as (model-dtype elements, other bytes)."""
        on, peak = self.on, (self.peak_bytes, self.peak)
        before = (self.elements, self.other)
        self.on = True
        try:
            run()
        finally:
            self.on = on
        self.peak_bytes, self.peak = peak
        return self.elements - before[0], self.other - before[1]

    def add(self, tensor: Any) -> None:
        """A tensor an op made: its storage counted until it is freed."""
        if not self.on or not tensor.is_meta:
            return
        storage = storage_of(tensor)
        if storage is None or storage in self.known:
            return
        nbytes = storage.nbytes()
        share = ((nbytes // tensor.element_size(), 0) if tensor.dtype == self.model_dtype
                 else (0, nbytes))
        self.known[storage] = share
        self.elements += share[0]
        self.other += share[1]
        weakref.finalize(storage, self._free, *share)
        size = self.elements * self.model_size + self.other
        if size > self.peak_bytes:
            self.peak_bytes, self.peak = size, (self.elements, self.other)

    def _free(self, elements: int, other: int) -> None:
        self.elements -= elements
        self.other -= other


def storage_of(tensor: Any) -> Any:
    """``tensor``'s storage (a view shares its base's), or None for one without its own (a
    sparse tensor, a subclass): such a tensor is not counted here, nor its values followed
    (capture_values.py)."""
    import torch

    if tensor.layout != torch.strided:
        return None
    try:
        return tensor.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return None
