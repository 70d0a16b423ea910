"""Analyze the module you already have: ``capture(module, *example_inputs)`` runs it on the
meta device (no memory, no arithmetic) and returns the Network that model.yaml would describe,
every GEMM and op with its module's name, or, given ``hw=``, its Report on that device.

    from roofline.torch import capture
    report = capture(model, torch.zeros(8, 3, 224, 224), mode="train", hw="h100")

torch is an optional extra: ``pip install "roofline[torch]"``. How ops are recorded, and what a
capture cannot do (another batch than the example's; data-dependent control flow), is in
``roofline.model.capture``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import CaptureError
from .model.capture import capture_network
from .model.capture_factory import load_factory

if TYPE_CHECKING:
    from .analysis.report import Report
    from .hardware.spec import HardwareSpec
    from .model.network import Network


def capture(module: Any, *example_inputs: Any, mode: str = "train", dtype: str | None = None,
            attention: str = "flash", optimizer: Any = "none", name: str | None = None,
            hw: HardwareSpec | str | None = None,
            example_kwargs: dict[str, Any] | None = None) -> Network | Report:
    """``module`` run on ``example_inputs`` and ``example_kwargs``, its keyword inputs
    (``module(*example_inputs, **example_kwargs)``: ``example_kwargs={"input_ids": ids,
    "attention_mask": mask}``; only their shapes and dtypes matter, and the values of integer
    ones; the batch is the first input's leading dimension) in ``mode`` ("train": forward and
    backward; "inference": forward), as a Network, or as a Report on ``hw`` when it is given.
    ``dtype`` (fp32, fp16, bf16, fp64) casts the floating-point parameters and inputs first
    (without it, the model's dtype is its first floating parameter's, buffer's or input's, else
    the one most of its GEMMs ran in; a GEMM or op that ran in another, an upcast or a quantized
    GEMM, is priced in its own and keeps it under a dtype override); ``attention`` "flash"
    counts ``scaled_dot_product_attention`` as one fused op, "naive" as the batched GEMMs torch
    runs on the meta device; ``optimizer`` (none, sgd, adam) adds the update a training step
    makes as one fused op, or, given a torch optimizer (a class such as ``torch.optim.AdamW``, a
    callable of the parameters such as ``functools.partial(torch.optim.SGD, lr=0.1,
    momentum=0.9)``, or an instance, rebuilt from its class and defaults), records its step as
    torch runs it: the second step on the meta parameters (the first creates its state), each
    aten op summed over the parameters (SGD, Adam and AdamW)."""
    network = capture_network(module, example_inputs, mode, dtype, attention, optimizer, name,
                              example_kwargs)
    if hw is None:
        return network
    from .api import analyze_model

    return analyze_model(network, hw)


__all__ = ["CaptureError", "capture", "load_factory"]
