"""``sweep`` of a PyTorch module named by its factory, ``package.module:callable``: the factory
called with each batch (its ``batch`` parameter) and the module captured at it
(``model.capture_factory.capture_factory``, on the meta device), each capture analyzed as
analyze analyzes it. What a capture cannot vary is refused in one line before the first: a
factory without a ``batch`` parameter (each call would make the same batch), a sequence length
(the inputs' shapes are the step: one length) and a generation (``generation.refuse_captured``);
a capture that fails, or whose inputs do not have the batch asked, names that batch. The batch
at which each GEMM turns compute-bound is read from the captures (``Sweep.transitions``,
``captured_scaling``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import CaptureError, InputError, option
from ..hardware.spec import HardwareSpec
from ..model.capture_factory import capture_factory, takes_batch
from ..model.network import Network, check_overrides
from .generation import checked_source, refuse_captured
from .report import Report, analyze
from .whatif_limits import _check_captures, _check_grid, _check_items
from .whatif_sweep import Sweep
from .whatif_values import _values

#: The settings a capture runs with (``capture_factory``); the others override its result.
CAPTURE_SETTINGS = ("dtype", "mode", "attention", "optimizer")


def captured_sweep(spec: str, hardware: HardwareSpec, batches: str | int | Iterable[int] | None,
                   quantization: bool, seqs: Any, generating: bool,
                   progress: Callable[[str], None] | None, overrides: dict[str, Any]) -> Sweep:
    """The factory ``spec`` captured and analyzed at each of ``batches`` on ``hardware``, every
    refusal before the first capture."""
    check_overrides(overrides, "sweep")
    if generating:
        refuse_captured(checked_source(spec, overrides.get("phase"), overrides.get("mode")))
    if seqs is not None:
        raise InputError("seqs", "", f"{spec} is a captured module, whose step is its example "
                                     f"inputs' shapes, one sequence length: sweeping seqs "
                                     f"needs a model.yaml or config.json (sweep varies a "
                                     f"factory's batch)")
    if batches is None:
        raise InputError("sweep", "", f"give the batches to sweep ({option('batches')}): "
                                      f"{spec} is captured at each")
    values = _values(batches, "batches")
    _check_grid(len(values), values, ())
    _check_captures(values)
    if not takes_batch(spec):
        name = spec.partition(":")[2]
        raise CaptureError(f"{spec}: sweep captures the module at each batch, calling the "
                           f"factory with it, so it needs a batch parameter: def "
                           f"{name}(batch=8): return module, example_inputs (inputs whose "
                           f"leading dimension is batch)")
    settings = {key: overrides.get(key) for key in CAPTURE_SETTINGS}
    reports: list[Report] = []
    for index, batch in enumerate(values):
        network = _captured(spec, batch, f" at batch {batch} ({index + 1} of {len(values)})",
                            settings, progress).with_overrides(**overrides)
        reports.append(analyze(network, hardware, quantization))
        if len(reports) == 1:
            _check_items(reports[0], len(values), 1, values)
    return Sweep(tuple(reports), values, ())


def _captured(spec: str, batch: int, point: str, settings: dict[str, Any],
              progress: Callable[[str], None] | None) -> Network:
    """The factory called with ``batch`` and its module captured; a capture that fails, or
    inputs of another batch, CaptureError naming the batch."""
    try:
        network = capture_factory(spec, batch, **settings, progress=progress, point=point)
    except CaptureError as exc:
        text = str(exc)
        raise CaptureError(f"{spec}: at batch {batch}: "
                           f"{text.removeprefix(f'{spec}: ')}") from None
    if network.captured_batch != batch:
        raise CaptureError(f"{spec}: at batch {batch}: the factory, called with "
                           f"batch={batch}, made inputs of batch {network.captured_batch} (the "
                           f"first input's leading dimension): make them at the batch given")
    return network
