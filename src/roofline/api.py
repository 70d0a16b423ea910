"""One-call entry points for scripts and notebooks: names or paths in, a Report out."""

from __future__ import annotations

import os

from .analysis.report import Report, analyze
from .hardware.catalog import load_hardware
from .hardware.spec import HardwareSpec
from .model.capture import capture_network, is_factory, load_factory
from .model.network import Network, load_network


def analyze_model(model: Network | str | os.PathLike[str], hardware: HardwareSpec | str,
                  batch: int | None = None, dtype: str | None = None,
                  mode: str | None = None, output_dtype: str | None = None,
                  grad_accumulation: str | None = None, seq: int | None = None,
                  phase: str | None = None, quantization: bool = False,
                  attention: str | None = None, optimizer: str | None = None) -> Report:
    """Analyze ``model`` (a Network, a model.yaml path, a Hugging Face config.json path, or
    ``package.module:callable`` returning a torch module and its example inputs, captured by
    ``roofline.torch``) on ``hardware`` (a spec, name or path).

    ``batch``, ``dtype``, ``mode``, ``output_dtype``, ``grad_accumulation`` (a dtype, or
    ``"none"``), ``seq``, ``phase`` (inference: ``"prefill"`` or ``"decode"``) and ``attention``
    (``"flash"`` or ``"naive"``, every transformer block) and ``optimizer`` (``"none"``,
    ``"sgd"``, ``"adam"``: the update a training step counts) override the model's own
    settings when given.
    """
    if isinstance(model, Network):
        network = model
    elif is_factory(str(model)) and not os.path.exists(model):  # package.module:callable
        module, inputs = load_factory(str(model))
        network = capture_network(module, inputs, mode or "train", dtype, attention or "flash",
                                  optimizer or "none")
    else:
        network = load_network(model)
    network = network.with_overrides(batch=batch, dtype=dtype, mode=mode,
                                      output_dtype=output_dtype,
                                      grad_accumulation=grad_accumulation, seq=seq,
                                      phase=phase, attention=attention,
                                      optimizer=optimizer)
    spec = hardware if isinstance(hardware, HardwareSpec) else load_hardware(hardware)
    return analyze(network, spec, quantization)
