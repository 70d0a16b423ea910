"""The ``local`` hardware entry behind ``analyze --hw local``: a saved probe of this machine,
made (a quick probe, saved as ``local``) the first time it is asked for."""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
#: The dtypes a probe times GEMMs in, so the only peaks a ``local`` entry can list: fp64 and
#: fp32 always; bf16 and fp16 on a GPU (``kernels.gpu.TorchBackend``), and on a CPU where it
#: has native units for them and torch runs them (``runner._cpu_lowp``).
PROBED_DTYPES = ("fp64", "fp32", "bf16", "fp16")
#: The dtypes a model computes in that ``local`` is asked for, each with the setting that
#: chose it (``dtype``, ``activations``), read only when a probe is due (a model file is read,
#: a module captured, just to know them).
Needs = Callable[[], Mapping[str, str]]


def local_hardware(progress: Progress | None = None, library: str = "numpy",
                   needs: Needs | None = None) -> HardwareSpec:
    """The ``local`` entry: a saved one if present, else a quick probe saved as ``local``, its
    GEMMs timed through ``library`` (the caller's: torch for a model captured from torch, when
    torch imports; numpy's BLAS otherwise). A saved ``local`` is used whatever its library (a
    report on a model in torch then says when it is numpy's).

    Whether ``local`` can be saved (the user directory writable, no file in the way) is
    checked before the probe runs, so a read-only directory fails at once, not after the
    probe's seconds of timing, and so is each dtype ``needs()`` names (the model's: its peak
    is what the analysis asks of the entry), ``check_probed``; a probe whose figures fail its
    own checks (``probe.checks``) is not saved."""
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
    if needs is not None:
        check_probed(needs())
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
                     library: str = "numpy", needs: Needs | None = None) -> HardwareSpec | str:
    """``name`` unchanged, except that ``local`` becomes local_hardware(progress, library,
    needs)."""
    return local_hardware(progress, library, needs) if name.lower() == "local" else name


def check_probed(dtypes: Mapping[str, str]) -> None:
    """UnsupportedDtypeError, before the quick probe behind ``--hw local`` runs, for the first
    of ``dtypes`` (each with the setting that chose it, which the message names) it would
    measure no peak for on this machine: one it never times (``PROBED_DTYPES``), or bf16 or
    fp16 on a CPU alone (no NVIDIA GPU that NVML lists) without native units for it
    (``ceilings.NATIVE_FLAGS``) or without torch to run them. Without this the model's dtype
    was refused only after the probe's 10-30 s. A GPU's probe is left to measure what it can:
    which dtypes its backend runs is not known before torch loads."""
    from ..errors import UnsupportedDtypeError, option
    from ..kernels.torch_cpu import installed
    from .ceilings import NATIVE_FLAGS, native_flag
    from .identify import identify_cpu, identify_gpus

    hw, measured = option("hardware", "local"), " and ".join(PROBED_DTYPES[:2])
    for dtype in dtypes:
        if dtype not in PROBED_DTYPES:
            raise UnsupportedDtypeError(
                f"{hw} would have no {dtype} peak: a probe times GEMMs in fp64 and fp32 (bf16 "
                f"and fp16 on a GPU or a CPU with native units), never {dtype}; choose one "
                f"of those with {option(dtypes[dtype])} (nothing was probed)")
    low = [d for d in dtypes if d not in PROBED_DTYPES[:2]]
    if not low or identify_gpus()[0]:
        return
    cpu = identify_cpu()
    for dtype in low:
        if native_flag(dtype, cpu.flags) is None:
            units = ", ".join(f.upper() for f in NATIVE_FLAGS[dtype])
            why = f"this CPU ({cpu.brand}) has no native {dtype} units (none of {units})"
        elif not installed():
            why = f"{dtype} GEMMs on a CPU run through torch, which is not installed"
        else:
            continue
        raise UnsupportedDtypeError(
            f"{hw} would have no {dtype} peak: {why}, so its probe would time {measured} "
            f"GEMMs only; choose one of them with {option(dtypes[dtype])} (nothing was probed)")


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
