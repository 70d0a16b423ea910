"""MODEL as the commands read it: read or captured once for every device, a captured module
refused by plan (which divides a model's layers over GPUs), and what a ``--hw local`` probe
must measure for it and through which library."""

from __future__ import annotations

from typing import Any

import click

from .console import _progress


def _local_library(model: str) -> str:
    """What a new ``--hw local`` probe times through: torch for a captured PyTorch module (the
    library it runs in), numpy's BLAS for a model file."""
    from ..api import model_framework

    return "torch" if model_framework(model) == "torch" else "numpy"


#: The settings a capture runs with (``api.load_model``); the rest are overrides of its result.
_CAPTURE_SETTINGS = ("batch", "dtype", "mode", "attention", "optimizer")


def _loaded(model: str, overrides: dict[str, Any]) -> Any:
    """MODEL read once as a Network for every device of the commands that take a captured
    module (analyze, compare): a model file read, ``package.module:callable`` captured once
    (the module run forward, and backward in training: tens of seconds for a 70B model, said
    on stderr as it starts) in the mode a generation (``--prompt``/``--generate``) implies."""
    from ..api import generation_settings, load_model, model_framework

    settings = {key: overrides.get(key) for key in _CAPTURE_SETTINGS}
    if model_framework(model) == "torch":
        settings["mode"], _ = generation_settings(
            model, settings["mode"], overrides.get("phase"), overrides.get("prompt"),
            overrides.get("generate"))
    return load_model(model, **settings, progress=_progress)


def _needs(network: Any, overrides: dict[str, Any], whole_step: bool = False) -> Any:
    """What a ``--hw local`` probe must measure for a model (``probe.local.check_probed``):
    the dtypes whose peaks its step is placed by, read only when a probe is due; ``network``
    a callable giving the Network (read once, a capture's seconds spent only then). With
    ``whole_step`` (analyze, compare: the step is the model's with ``overrides``, no
    generation) the step is checked first as its analysis checks it, so a setting it lacks (a
    config.json's batch or seq) is refused before the probe, not after its seconds."""
    from ..api import peak_dtypes
    from ..model.network import OVERRIDES

    def needs() -> Any:
        model = network()
        if whole_step and overrides.get("prompt") is None and overrides.get("generate") is None:
            model.with_overrides(**{key: value for key, value in overrides.items()
                                    if key in OVERRIDES}).check()
        return peak_dtypes(model, overrides.get("dtype"), overrides.get("activations"))

    return needs


def _not_captured(model: str) -> None:
    """InputError for ``package.module:callable`` (or a Python file holding one) given to plan,
    before ``--hw local`` probes (``api.refuse_capture``): it divides each layer's heads
    and FFN over the tensor-parallel ranks and runs it at each micro-batch, and a capture holds
    the ops the module ran at its one batch, not its layers. (sweep captures a factory at each
    batch: ``analysis.whatif_captures``.)"""
    from ..api import refuse_capture

    refuse_capture(model, str(click.get_current_context().info_name))
