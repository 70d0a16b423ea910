"""One-call entry points for scripts and notebooks: names or paths in, a Report out."""

from __future__ import annotations

import os

from .analysis.report import Report, analyze
from .hardware.catalog import load_hardware
from .hardware.spec import HardwareSpec
from .model.network import Network, load_network


def analyze_model(model: Network | str | os.PathLike[str], hardware: HardwareSpec | str,
                  batch: int | None = None, dtype: str | None = None,
                  mode: str | None = None, output_dtype: str | None = None,
                  grad_accumulation: str | None = None, seq: int | None = None,
                  phase: str | None = None, quantization: bool = False,
                  attention: str | None = None, optimizer: str | None = None,
                  recompute: str | None = None, weights: str | None = None,
                  activations: str | None = None, kv_cache: str | None = None,
                  group_size: int | None = None) -> Report:
    """Analyze ``model`` (a Network, a model.yaml path or a Hugging Face config.json path) on
    ``hardware`` (a spec, name or path).

    ``batch``, ``dtype``, ``mode``, ``output_dtype``, ``grad_accumulation`` (a dtype, or
    ``"none"``), ``seq``, ``phase`` (inference: ``"prefill"`` or ``"decode"``) and ``attention``
    (``"flash"`` or ``"naive"``, every transformer block) and ``optimizer`` (``"none"``,
    ``"sgd"``, ``"adam"``: the update a training step counts) and ``recompute`` (``"none"``,
    ``"selective"``, ``"full"``: activation recomputation, for the memory count), ``weights``
    (how weights are stored: ``"int4"`` with ``group_size``, ``"int8"``, ``"fp8"``, ...),
    ``activations`` (weight GEMMs' activation and math dtype) and ``kv_cache`` (the KV cache's
    dtype) override the model's own settings when given.
    """
    network = model if isinstance(model, Network) else load_network(model)
    network = network.with_overrides(batch=batch, dtype=dtype, mode=mode,
                                      output_dtype=output_dtype,
                                      grad_accumulation=grad_accumulation, seq=seq,
                                      phase=phase, attention=attention,
                                      optimizer=optimizer, recompute=recompute,
                                      weights=weights, activations=activations,
                                      kv_cache=kv_cache, group_size=group_size)
    spec = hardware if isinstance(hardware, HardwareSpec) else load_hardware(hardware)
    return analyze(network, spec, quantization)
