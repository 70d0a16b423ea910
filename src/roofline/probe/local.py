"""The ``local`` hardware entry behind ``analyze --hw local``: a saved probe of this machine,
made (a quick probe, saved as ``local``) the first time it is asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import entry, runner
from .runner import Progress

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec

LOCAL_COMMAND = "roofline analyze --hw local (quick probe)"


def local_hardware(progress: Progress | None = None, library: str = "numpy") -> HardwareSpec:
    """The ``local`` entry: a saved one if present, else a quick probe saved as ``local``, its
    GEMMs timed through ``library`` (the caller's: torch for a model captured from torch, when
    torch imports; numpy's BLAS otherwise). A saved ``local`` is used whatever its library (a
    report on a model in torch then says when it is numpy's).

    Whether ``local`` can be saved (the user directory writable, no file in the way) is
    checked before the probe runs, so a read-only directory fails at once, not after the
    probe's seconds of timing; a probe whose figures fail its own checks
    (``probe.checks``) is not saved."""
    from ..errors import ProbeSaveError, UnknownHardwareError, option
    from ..hardware.catalog import load_hardware
    from ..kernels.torch_cpu import installed
    from .checks import unstable_reasons

    say = progress or (lambda message: None)
    try:
        return load_hardware("local")
    except UnknownHardwareError:
        pass
    try:
        entry.check_can_save("local")
    except ProbeSaveError as exc:
        raise ProbeSaveError(f"{option('hardware', 'local')} saves a quick probe of this "
                             f"machine, but {exc.args[0]}") from None
    if library == "torch" and not installed():
        library = "numpy"  # the capture says what is missing, in its own words
    through = "numpy's BLAS" if library == "numpy" else library
    say(f"no saved 'local' hardware entry: running a quick probe of this machine through "
        f"{through} (a few s)")
    result = runner.run_probe(quick=True, progress=say, library=library)
    reasons = unstable_reasons(result)
    if reasons:
        raise ProbeSaveError(f"the quick probe behind {option('hardware', 'local')} failed its "
                             f"own check: {reasons[0]}; nothing saved: run `roofline probe "
                             f"--save local` on an idle machine (`--force` saves it anyway)")
    command = LOCAL_COMMAND if library == "numpy" else LOCAL_COMMAND.replace(
        "quick probe", f"quick probe, --library {library}")
    path = entry.save_entry(result, "local", command=command)
    say(f"saved as 'local' in {path}; for steadier figures run "
        f"`roofline probe --save local --force`")
    return load_hardware("local")


def resolve_hardware(name: str, progress: Progress | None = None,
                     library: str = "numpy") -> HardwareSpec | str:
    """``name`` unchanged, except that ``local`` becomes local_hardware(progress, library)."""
    return local_hardware(progress, library) if name.lower() == "local" else name
