"""The ``roofline`` group: every RooflineError a command raises, and click's usage errors, as one
``Error:`` line with exit 2 (the library's argument names given as the options that set them,
``_FLAGS``); skipped user hardware files as ``Warning:`` lines; ``main``, the console script,
whose stdout failures end in one line too; Ctrl-C as ``Interrupted.`` and exit 130."""

from __future__ import annotations

import gc
import sys
import warnings
from typing import NoReturn

import click

from .. import __version__
from ..errors import InputError, RooflineError, one_line, render_options
from .console import _ARGV


class BadInput(click.ClickException):
    """A RooflineError shown as ``Error: <message>`` with exit status 2."""

    exit_code = 2


def _usage_line(exc: click.UsageError) -> click.ClickException:
    """click's usage error (a bad option value, an unknown option, a missing argument) as one
    ``Error:`` line naming the help to read, exit 2, as every other error is: click prints
    three lines (Usage, Try, Error). Help shown for a bare command stays help."""
    if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        return exc
    where = exc.ctx.command_path if exc.ctx is not None else "roofline"
    message = one_line(exc.format_message()).rstrip(".")
    if isinstance(exc, click.NoSuchOption) and exc.option_name in _SERVING_OPTIONS:
        message = (f"No such option '{exc.option_name}': `{where}` analyzes one GPU; a step "
                   f"or a generation served over several is `roofline analyze MODEL --hw GPU "
                   f"--tp N`'s")
    return BadInput(f"{message} (see `{where} --help`)")


#: analyze's, compare's and sweep's options for serving over several GPUs (``--tp N``), which
#: gemm lacks: its "No such option" names the command that has them
_SERVING_OPTIONS = ("--tp", "--gpus-per-node", "--intra")


class RooflineGroup(click.Group):
    """Turns every RooflineError raised by a command into BadInput, in one place, and prints
    each skipped user hardware file (a HwdbWarning) as one ``Warning:`` line on stderr;
    click's usage errors become one line too (``_usage_line``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)  # what the HTML page names as the command that made it
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _usage_line(exc) from None

    def invoke(self, ctx: click.Context):
        from ..hardware.catalog import HwdbWarning

        error = ""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HwdbWarning)
            try:
                return super().invoke(ctx)
            except click.UsageError as exc:
                raise _usage_line(exc) from None
            except RooflineError as exc:
                error = str(exc)
                raise BadInput(one_line(_with_flag(exc))) from None
            except KeyboardInterrupt:
                # Ctrl-C: one line and exit 130 (128 + SIGINT), as a shell reports a program
                # the signal ended, so a script can tell an interrupted run from a failed one
                # (click says 'Aborted!' and exits 1); a file being written is left as it was
                # (files.atomic)
                click.echo("Interrupted.", err=True)
                raise click.exceptions.Exit(130) from None
            except OSError as exc:  # stdout failed: main() says so (click would exit 0 on EPIPE)
                if exc.filename is not None:
                    raise
                raise _OutputFailed(exc) from None
            finally:
                for warning in caught:  # the file asked for is reported once, as the error
                    if not (error and str(warning.message).startswith(error)):
                        _print_warning(warning)



class _OutputFailed(Exception):
    """Writing stdout failed (a full device, a closed pipe): carried past click to main()."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


#: The library names the value it was given (a function argument); the command line names the
#: option that gave it. The one place one becomes the other.
_FLAGS = {"hardware": "--hw", "batches": "--batch", "seqs": "--seq", "workers": "--data-parallel",
          "interconnect": "--interconnect", "host_link": "--host-link",
          "name": "--save",  # probe's entry name
          "gpus": "--gpus", "tp": "--tp", "pp": "--pp", "vp": "--vp", "zero": "--zero",
          "ep": "--ep",
          "micro_batch": "--micro-batch", "intra": "--intra", "inter": "--inter",
          "gpus_per_node": "--gpus-per-node", "gemms": "--gemms",
          "measure_budget": "--measure-budget", "force": "--force"}


def _flag(name: str, value: str | None = None) -> str:
    """The option that sets the library argument ``name`` (``output_dtype``: --output-dtype)."""
    flag = _FLAGS.get(name, "--" + name.replace("_", "-"))
    return flag if value in (None, "True") else f"{flag} {value}"


def _with_flag(exc: RooflineError) -> str:
    """The error's message, each argument's name replaced by the option that gave it."""
    if isinstance(exc, InputError) and exc.source in _FLAGS and not exc.path:
        return f"{_FLAGS[exc.source]}: {render_options(exc.problem, _flag)}"
    return (f"{_flag(exc.option)}: " if exc.option else "") + exc.text(_flag)


def _print_warning(warning: warnings.WarningMessage) -> None:
    """A warning the command raised, on stderr: a hardware file's as one line, any other (the
    user's module's, torch's, matplotlib's) as Python formats it. Written here, not through
    ``warnings.showwarning``: inside ``catch_warnings(record=True)`` that appends to the very
    list being printed, and a captured module that warned once looped until memory ran out."""
    from ..hardware.catalog import HwdbWarning

    if issubclass(warning.category, HwdbWarning):
        click.echo(f"Warning: {one_line(str(warning.message))}", err=True)
    else:
        click.echo(warnings.formatwarning(warning.message, warning.category, warning.filename,
                                          warning.lineno).rstrip("\n"), err=True)


@click.group(cls=RooflineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roofline")
def cli() -> None:
    """Roofline / GEMM-shape advisor.

    Lists the GEMMs of a network, says which are memory-bound on a device, which dimensions
    miss Tensor-Core alignment and what batch makes a layer compute-bound; measures what this
    machine delivers.

    \b
    Examples:
      roofline analyze examples/mlp-1024-4096-1000.yaml --hw a100-sxm4-80gb
      roofline analyze model.yaml --hw v100 --batch 1 --format json
      roofline analyze examples/snapml-criteo.yaml --hw v100 --host-link nvlink2-cpu-snapml
      roofline analyze examples/resnet50.yaml --hw 8180 --data-parallel 1,8,32 --interconnect 10gbe
      roofline gemm 512 4096 1024 --hw a100
      roofline compare model.yaml --hw v100 --hw a100 --hw h100
      roofline sweep model.yaml --hw v100 --batch 1..4096
      roofline plan examples/hf/llama-2-7b.json --hw h100 --gpus 8..512 --batch 512 --seq 4096
      roofline hw list --kind gpu
      roofline probe --quick
    """


def main() -> None:
    """Console-script entry point. Output that cannot be written (stdout on a full device, a
    closed pipe) ends the run with one line, never a traceback (``_output_failed``)."""
    # A deep model makes 100,000s of small objects, none in a cycle; at the default first
    # threshold (700) the collector rescans them thousands of times: 10-20% of the CPU time of a
    # 10,000-layer analysis. Collected every 100,000 allocations instead, cycles still go.
    gc.set_threshold(100_000, 50, 100)
    try:
        try:
            cli(prog_name="roofline")
        finally:  # text still buffered fails here, not in the interpreter's own exit
            sys.stdout.flush()
    except _OutputFailed as exc:
        _output_failed(exc.error)
    except OSError as exc:
        if exc.filename is not None:  # a named file, not stdout: not ours to explain
            raise
        _output_failed(exc)


def _output_failed(exc: OSError) -> NoReturn:
    """stdout failed: a reader that went away (``| head -1``) ends the run quietly, exit 1;
    any other failure (``> /dev/full``: no space left) is one line on stderr, exit 2. What is
    still buffered is dropped (stdout goes to /dev/null), so the exit does not fail again."""
    import errno
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    if exc.errno == errno.EPIPE:
        sys.exit(1)
    try:
        click.echo(f"Error: cannot write the output: {exc.strerror or exc}", err=True)
    except OSError:
        pass
    sys.exit(2)
