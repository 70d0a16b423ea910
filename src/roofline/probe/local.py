"""The ``local`` hardware entry behind ``analyze --hw local``: a saved probe of this machine,
made (a quick probe, saved as ``local``) the first time it is asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import entry, runner
from .runner import Progress

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec


def local_hardware(progress: Progress | None = None) -> HardwareSpec:
    """The ``local`` entry: a saved one if present, else a quick probe saved as ``local``."""
    from ..errors import UnknownHardwareError
    from ..hardware.catalog import load_hardware

    say = progress or (lambda message: None)
    try:
        return load_hardware("local")
    except UnknownHardwareError:
        pass
    say("no saved 'local' hardware entry: running a quick probe of this machine (a few s)")
    result = runner.run_probe(quick=True, progress=say)
    path = entry.save_entry(result, "local",
                            command="roofline analyze --hw local (quick probe)")
    say(f"saved as 'local' in {path}; for steadier figures run "
        f"`roofline probe --save local --force`")
    return load_hardware("local")


def resolve_hardware(name: str, progress: Progress | None = None) -> HardwareSpec | str:
    """``name`` unchanged, except that ``local`` becomes local_hardware(progress)."""
    return local_hardware(progress) if name.lower() == "local" else name
