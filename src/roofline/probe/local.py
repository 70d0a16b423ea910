"""The ``local`` hardware entry behind ``analyze --hw local``: a saved probe of this machine,
made (a quick probe, saved as ``local``) the first time it is asked for."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import entry, runner
from .runner import Progress

if TYPE_CHECKING:
    from ..hardware.spec import HardwareSpec

LOCAL_COMMAND = "roofline analyze --hw local (quick probe)"
#: How long a quick probe takes, as the announcement, README and ``probe --help`` say it: most
#: of it is the calibration's rounds (``calibrate_rounds``), 3 of them, and up to 3 more when
#: a figure contradicts its neighbours or other programs kept the CPUs busy through every
#: round (on the 2-vCPU development VM: 23 s with 6 rounds, 16 s of them the rounds; 31 s in
#: a new user's first run).
QUICK_PROBE_TIME = "about 10-30 s, longer on a busy machine"


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
        f"{through} ({QUICK_PROBE_TIME})")
    result = runner.run_probe(quick=True, progress=say, library=library)
    reasons = unstable_reasons(result)
    if reasons:
        raise ProbeSaveError(_refused(reasons[0], result.metadata.get("duration_s"),
                                      option("hardware", "local")))
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


def _refused(reason: str, duration_s: float | None, hw: str) -> str:
    """The one line of a quick probe behind ``--hw local`` that failed its own check: nothing
    is saved, so the next ``--hw local`` probes (and most likely fails) again; the ways past it
    are a probe saved when the machine is idle, or one forced, by the probe command (analyze's
    own ``--force`` is its chart's)."""
    from ..units import seconds

    took = f" (this one took {seconds(duration_s)})" if duration_s else ""
    return (f"the quick probe behind {hw} failed its own check: {reason}; nothing saved, so "
            f"every {hw} probes again{took}: run `roofline probe --save local` when the "
            f"machine is idle, or `roofline probe --quick --save local --force` to keep this "
            f"machine's figures as they come")
