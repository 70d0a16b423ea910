"""A torch optimizer's step recorded: the optimizer given (a class, a callable of the
parameters or an instance) as a maker on the meta parameters, refused unless its states' memory
is modelled (``_optimizer``, ``OPTIMIZER_KINDS``); its first step, which creates its state, run
unrecorded and the second recorded (``_step``), each aten op summed over the parameters as one
op of pass ``update`` (``_record_update``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CaptureError, RooflineError
from .capture_ops import _items
from .capture_recorder import _Recorder
from .capture_tensors import _flatten
from .gemm import GemmShape

#: torch optimizer classes -> the optimizer whose states memory counts (``analysis/memory``)
OPTIMIZER_KINDS = {"Adam": "adam", "AdamW": "adam", "SGD": "sgd"}


def _optimizer(given: Any, label: str) -> Callable[[list[Any]], Any]:
    """A torch optimizer as a maker on the meta parameters, from a class or a callable
    taking the parameters (``functools.partial(torch.optim.AdamW, lr=1e-4)``), or an instance,
    rebuilt from its class and ``defaults`` (per-group settings are not carried over)."""
    import inspect

    import torch

    if isinstance(given, torch.optim.Optimizer):
        cls = type(given)
        accepted = inspect.signature(cls).parameters  # AdamW keeps settings it does not take
        defaults = {k: v for k, v in given.defaults.items() if k in accepted}
        make: Callable[[list[Any]], Any] = lambda params: cls(params, **defaults)  # noqa: E731
    elif callable(given):
        make = given
    else:
        raise CaptureError(f"optimizer: expected none, sgd, adam or a torch optimizer (a class, "
                           f"a callable of the parameters or an instance), got "
                           f"{type(given).__name__}")

    def checked(params: list[Any]) -> Any:
        opt = make(params)
        if not isinstance(opt, torch.optim.Optimizer):
            raise CaptureError(f"{label}: optimizer: the callable must return a "
                               f"torch.optim.Optimizer, got {type(opt).__name__}")
        if type(opt).__name__ not in OPTIMIZER_KINDS:
            raise CaptureError(f"{label}: optimizer: {type(opt).__name__} is not modelled "
                               f"(its states' memory is known for {', '.join(OPTIMIZER_KINDS)})")
        return opt

    return checked


def _step(rec: _Recorder, make: Callable[[list[Any]], Any], params: list[Any],
          label: str) -> None:
    """The optimizer's step on the meta parameters and the gradients the backward left them:
    the first step creates its state (zeroed moments, a momentum buffer) and is not recorded;
    the second, the one every later step repeats, is."""
    rec.module, rec.last = "optimizer", ""
    opt = make(params)
    rec.kind = OPTIMIZER_KINDS[type(opt).__name__]
    try:
        rec.quiet += 1
        try:
            if rec.live is not None:  # the states the first step creates, as torch keeps them
                rec.optimizer_states = rec.live.kept(opt.step)
            else:
                opt.step()
        finally:
            rec.quiet -= 1
        rec.updating = True
        opt.step()
    except RooflineError:
        raise
    except Exception as exc:  # a fused kernel has no meta implementation
        op = f", op {rec.last}" if rec.last else ""
        text = " ".join(str(exc).split())[:300]
        raise CaptureError(f"{label}: module 'optimizer'{op}: {type(opt).__name__}'s step failed "
                           f"on the meta device ({type(exc).__name__}: {text}); give it without "
                           f"fused=True (its eager or foreach step is recorded), or "
                           f"optimizer='adam' or 'sgd' for roofline's fused update op") from None
    finally:
        rec.updating = False


def _record_update(rec: _Recorder, op: str, args: Any, out: Any, view: bool = False) -> None:
    """One aten op of the optimizer's step, summed by op over the parameters; ops on host
    tensors only (the step count torch keeps on the CPU) are bookkeeping, not device work."""
    import torch

    if not any(t.is_meta for t in _flatten([*args, out]) if isinstance(t, torch.Tensor)):
        return
    rec.module, rec.last = "optimizer", f"aten.{op}"
    for item in _items(op, args, out, False, "optimizer", rec, view=view):
        if isinstance(item, GemmShape):
            raise CaptureError(f"module 'optimizer', op aten.{op}: the optimizer's step runs "
                               f"a GEMM; only elementwise steps (SGD, Adam) are recorded")
        sums = rec.update.setdefault((item.kind, item.dtype), [0, 0, 0])
        for index, value in enumerate((item.flops, item.elements, item.other_bytes)):
            sums[index] += value
