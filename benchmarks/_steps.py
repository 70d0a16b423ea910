"""One PyTorch step of a module, as the step benchmarks time it (bench_torch_steps.py on a CPU,
gpu_measure.py on a GPU) and as ``roofline.torch.capture`` counts it. Only torch is imported,
and only when a step is built, so gpu_measure.py runs where roofline is not installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def step_function(module: Any, inputs: tuple[Any, ...], mode: str,
                  optimizer: str) -> Callable[[], None]:
    """One step of ``module``: inference, a forward under no_grad; train, the gradients set to
    None, a forward, a backward from an all-ones output gradient (what capture runs: no loss)
    and, with ``optimizer`` sgd, ``torch.optim.SGD``'s update."""
    import torch

    if mode == "inference":
        module.eval()

        def infer() -> None:
            with torch.no_grad():
                module(*inputs)
        return infer
    module.train()
    opt = torch.optim.SGD(module.parameters(), lr=1e-4) if optimizer == "sgd" else None
    with torch.no_grad():
        grad = torch.ones_like(module(*inputs))

    def train() -> None:
        module.zero_grad(set_to_none=True)
        module(*inputs).backward(grad)
        if opt is not None:
            opt.step()
    return train
