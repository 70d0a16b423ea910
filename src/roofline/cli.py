"""The ``roofline`` command: parses options, calls the library, prints what it returns.

Bad input (an unreadable or invalid file, an unknown hardware name or dtype) exits with status 2
and one line on stderr; no command prints a traceback for it.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import re
import sys
import warnings
from typing import Any, NoReturn

import click

from . import __version__
from .errors import InputError, PlotError, RooflineError, one_line, render_options
from .files.numbers import MAX_INT, parse_int
from .model.dtypes import ACCUMULATION_DTYPES, DTYPES, KV_DTYPES, OUTPUT_DTYPES, WEIGHT_DTYPES

FORMATS = ("table", "json", "csv", "markdown", "html")
#: analysis.whatif.GEMM_LAYOUTS, a literal so that --help imports no analysis (a test holds them
#: equal)
GEMM_LAYOUTS = ("linear", "matmul")


class Count(click.ParamType):
    """An integer option read by the tool's one integer parser (``files.numbers.parse_int``:
    ASCII digits, ``low`` .. ``high``); anything else is click's usage error, exit 2."""

    name = "integer"

    def __init__(self, low: int = 1, high: int = MAX_INT) -> None:
        self.low, self.high = low, high

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int) and not isinstance(value, bool):  # a default
            return value
        try:
            return parse_int(value, self.low, self.high)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


COUNT = Count()


class Seconds(click.FloatRange):
    """A float option in a closed range that also refuses nan: click's range compares, and
    every comparison with nan is false, so ``nan`` passed it (``--measure-budget nan`` then
    bounded nothing: ``estimate > nan`` never holds). Refused as inf, 0 and -1 are."""

    def convert(self, value, param, ctx) -> float:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{number} is not in the range {self._describe_range()}.", param, ctx)
        return number


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
    return BadInput(f"{one_line(exc.format_message()).rstrip('.')} (see `{where} --help`)")


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
        from .hardware.catalog import HwdbWarning

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
            except OSError as exc:  # stdout failed: main() says so (click would exit 0 on EPIPE)
                if exc.filename is not None:
                    raise
                raise _OutputFailed(exc) from None
            finally:
                for warning in caught:  # the file asked for is reported once, as the error
                    if not (error and str(warning.message).startswith(error)):
                        _print_warning(warning)


_ARGV = "roofline.argv"


class _OutputFailed(Exception):
    """Writing stdout failed (a full device, a closed pipe): carried past click to main()."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def _command() -> str:
    """The command line being run, quoted for a shell: ``roofline analyze m.yaml --hw a100``."""
    import shlex

    return shlex.join(["roofline", *click.get_current_context().meta.get(_ARGV, [])])


def _terminal_width() -> int | None:
    """The characters a line of a plain-text table has: ``$COLUMNS`` where it is set to a
    positive number (asked for, a pipe included), else the width of the terminal stdout writes
    to; None where stdout is no terminal (a pipe, a file: nothing is cut, a reader there has
    no edge and may want every name whole, ``grep`` the full layer name)."""
    import os
    import shutil

    given = os.environ.get("COLUMNS", "")
    if given.isascii() and given.isdigit() and int(given) > 0:
        return int(given)
    try:
        terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):  # replaced by something without it, or closed
        return None
    return shutil.get_terminal_size().columns if terminal else None


def _render(formats: dict, fmt: str, result) -> str:
    """A compare or sweep result in ``fmt``; an HTML page also names the command."""
    return formats[fmt](result, command=_command()) if fmt == "html" else formats[fmt](result)


#: The library names the value it was given (a function argument); the command line names the
#: option that gave it. The one place one becomes the other.
_FLAGS = {"hardware": "--hw", "batches": "--batch", "seqs": "--seq", "workers": "--data-parallel",
          "interconnect": "--interconnect", "host_link": "--host-link",
          "name": "--save",  # probe's entry name
          "gpus": "--gpus", "tp": "--tp", "pp": "--pp", "zero": "--zero", "ep": "--ep",
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
    from .hardware.catalog import HwdbWarning

    if issubclass(warning.category, HwdbWarning):
        click.echo(f"Warning: {one_line(str(warning.message))}", err=True)
    else:
        warnings.showwarning(warning.message, warning.category, warning.filename,
                             warning.lineno)


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


def _model_option_list(batch: bool = True, seq: bool = True) -> list:
    """The options that override a model's own settings (every command that reads a model);
    sweep gives its batches and sequence lengths its own way."""
    options = [
        click.option("--batch", type=COUNT,
                     help="Override the model's batch (required when the file has none)."),
        click.option("--dtype", type=click.Choice(DTYPES),
                     help="Override the model's dtype (of A and B, the operands)."),
        click.option("--output-dtype", type=click.Choice(OUTPUT_DTYPES),
                     help="dtype of C, the output [default: the operands'; int8 -> int32, "
                          "fp8 -> bf16]."),
        click.option("--grad-accumulation", type=click.Choice(ACCUMULATION_DTYPES + ("none",)),
                     help="Weight gradients accumulate into a buffer of this dtype (C read "
                          "and written, beta = 1); none: written once [default: the model's]."),
        click.option("--mode", type=click.Choice(("train", "inference")),
                     help="train: forward and backward GEMMs (3n-1 for n linear layers); "
                          "inference: forward only."),
        click.option("--seq", type=COUNT,
                     help="Override the tokens per sample (transformer models need it). Past "
                          "the model's context the step is still analyzed, with a warning: a "
                          "shape to ask about."),
        click.option("--phase", type=click.Choice(("prefill", "decode")),
                     help="Inference phase: prefill (seq tokens at once) or decode (one new "
                          "token per sequence against a KV cache of seq tokens)."),
        click.option("--optimizer", type=click.Choice(("none", "sgd", "adam")),
                     help="Training: the optimizer update the step counts, on fp32 master "
                          "weights (a config.json has none) [default: the model's, else none]."),
        click.option("--weights", type=click.Choice(WEIGHT_DTYPES),
                     help="Inference: how weights are stored (int4 group-quantized, int8, fp8: "
                          "weight-only when narrower than --activations, dequantized and "
                          "counted) [default: the activations' dtype]."),
        click.option("--group-size", type=COUNT,
                     help="int4 weights: values per fp16 scale (must divide every weight "
                          "GEMM's K) [default: 128]."),
        click.option("--activations", type=click.Choice(DTYPES),
                     help="The activation operand and math dtype of weight GEMMs (int8 with "
                          "int8 weights: W8A8 at the int8 peak) [default: --dtype]."),
        click.option("--kv-cache", type=click.Choice(KV_DTYPES),
                     help="Inference: the KV cache's dtype (fp8, int8: half the cache and its "
                          "reads) [default: --dtype]."),
        click.option("--logits", type=click.Choice(("all", "last")),
                     help="Prefill: the output layer on every token (all: scoring) or on each "
                          "sequence's last token (last: generation); refused with --phase "
                          "decode, whose step makes one token a sequence [default: all; last "
                          "with --prompt/--generate]."),
        click.option("--recompute", type=click.Choice(("none", "selective", "full")),
                     help="Training: activation recomputation, for the memory count: none "
                          "(keep every tensor), selective (recompute the attention core), full "
                          "(keep each block's input) [default: the model's, else none]."),
        click.option("--attention", type=click.Choice(("flash", "naive")),
                     help="Attention form of every transformer block (a config.json has "
                          "none: flash) [default: the model's]."),
    ]
    omitted = {index for index, given in ((0, batch), (5, seq)) if not given}  # --batch, --seq
    return [o for index, o in enumerate(options) if index not in omitted]


def model_options(command, batch: bool = True, seq: bool = True):
    """Decorate ``command`` with the model-override options."""
    for option in reversed(_model_option_list(batch, seq)):
        command = option(command)
    return command


def generation_options(command):
    """Decorate ``command`` (analyze, compare, sweep) with ``--prompt`` and ``--generate``."""
    command = click.option("--generate", type=COUNT, metavar="G",
                           help="Generation: G output tokens per sequence (with --prompt).")(
        command)
    return click.option(
        "--prompt", type=COUNT, metavar="P",
        help="Generation: P prompt tokens per sequence (with --generate; sets the sequence "
             "lengths, so no --seq): time to first token, time per output token over the "
             "growing KV cache, tokens/s, latency (JSON generation), memory at the "
             "generation's peak. P + G must fit the model's context: the model writes each "
             "token at a position it has.")(command)


QUANTIZATION_HELP = ("Fold tile and wave quantization into compute-bound GEMM times (best "
                     "candidate tile of the entry, split-K where chosen); stated in the header.")


#: --plot's FILE, kept as typed: click's Path type reads '' as Path('.'), which
#: ``check_plot_path`` would name as '.' instead of saying the path is empty.
PLOT_FILE = click.Path(dir_okay=False)
#: MODEL, kept as typed for the same reason: an empty path is the library's to refuse as one
#: (``check_model``), where Path('') read as '.', a directory.
MODEL_FILE = click.Path(dir_okay=False)


def _write_plot(plot: str | None, draw) -> None:
    """When ``--plot`` was given, ``draw(roofline.plot)`` draws the chart (an Axes) and it is
    written to the file (replacing one only with --force); says so as it starts (matplotlib's
    import and drawing take 2-3 s here, after the report is out) and where it wrote."""
    if plot is not None:
        from . import plot as charts

        click.echo(f"drawing {plot} ...", err=True)
        charts.save_chart(draw(charts), plot, force=_forced())
        click.echo(f"wrote {plot}", err=True)


_FORCE = "roofline.force"
#: ``--force`` of a command that writes a chart: its value goes to ``_check_plot`` and
#: ``_write_plot`` through the context, the command's own arguments untouched.
force_option = click.option(
    "--force", is_flag=True, expose_value=False,
    callback=lambda ctx, param, value: ctx.meta.__setitem__(_FORCE, value),
    help="Replace an existing --plot FILE (without it, an existing file stops the run before "
         "any work, the file as it was).")


def _forced() -> bool:
    return bool(click.get_current_context().meta.get(_FORCE))


def _one_device(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> str:
    """The one --hw a single-device command takes; a repeated --hw is a usage error (click
    would keep the last and drop the others unsaid)."""
    if len(value) > 1:
        raise click.BadParameter(f"`roofline {ctx.info_name}` takes one device, given "
                                 f"{len(value)} ({', '.join(value)}); `roofline compare` "
                                 f"takes several", ctx, param)
    return value[0]


def _local_library(model: str) -> str:
    """What a new ``--hw local`` probe times through: torch for a captured PyTorch module (the
    library it runs in), numpy's BLAS for a model file."""
    from .api import model_framework

    return "torch" if model_framework(model) == "torch" else "numpy"


#: The settings a capture runs with (``api.load_model``); the rest are overrides of its result.
_CAPTURE_SETTINGS = ("batch", "dtype", "mode", "attention", "optimizer")


def _loaded(model: str, overrides: dict[str, Any]) -> Any:
    """MODEL read once as a Network for every device of the commands that take a captured
    module (analyze, compare): a model file read, ``package.module:callable`` captured once
    (the module run forward, and backward in training: tens of seconds for a 70B model, said
    on stderr as it starts) in the mode a generation (``--prompt``/``--generate``) implies."""
    from .api import generation_settings, load_model, model_framework

    settings = {key: overrides.get(key) for key in _CAPTURE_SETTINGS}
    if model_framework(model) == "torch":
        settings["mode"], _ = generation_settings(
            model, settings["mode"], overrides.get("phase"), overrides.get("prompt"),
            overrides.get("generate"))
    return load_model(model, **settings, progress=_progress)


def _needs(network: Any, overrides: dict[str, Any]) -> Any:
    """What a ``--hw local`` probe must measure for a model (``probe.local.check_probed``):
    the dtypes whose peaks its step is placed by, read only when a probe is due; ``network``
    a callable giving the Network (read once, a capture's seconds spent only then)."""
    from .api import peak_dtypes

    return lambda: peak_dtypes(network(), overrides.get("dtype"), overrides.get("activations"))


def _not_captured(model: str) -> None:
    """InputError for ``package.module:callable`` given to a command that varies the batch
    (sweep, plan): a capture holds the one batch it ran at."""
    from .api import model_framework

    if model_framework(model) == "torch":
        command = click.get_current_context().info_name
        raise InputError(str(model), "", f"`roofline {command}` needs a model.yaml or "
                                         f"config.json: it varies the batch, and a captured "
                                         f"module holds the one batch it ran at (analyze and "
                                         f"compare take package.module:callable)")


def _check_plot(plot: str | None) -> None:
    if plot is not None:
        from .plot import check_plot_path

        check_plot_path(plot, _forced())  # a bad path fails before any analysis work


@cli.command(short_help="Every GEMM and op of a model on a device: bound, time, advice.")
@click.argument("model", type=MODEL_FILE)
@click.option("--hw", "hardware", multiple=True, required=True, metavar="NAME",
              help="Hardware entry name or alias (see `roofline hw list`), or a path to an "
                   "entry YAML file; `local` probes this machine once and reuses the result. "
                   "Repeat to compare devices.")
@model_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format. json prints one object (a list of them with several --hw); "
                   "html one self-contained page (redirect it to a file).")
@click.option("--gemms-only", is_flag=True,
              help="Hide the non-GEMM ops (norms, activations, softmax, ...) in tables and "
                   "CSV; the totals still count them.")
@click.option("--expand", is_flag=True,
              help="Show every copy of a repeated layer (by default only the first).")
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw the roofline chart to FILE (.png, .svg or .pdf).")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
@click.option("--stream-input", is_flag=True,
              help="Each step's input (the first layer's: dense, sparse rows with indices, "
                   "images) streams from host memory over the entry's host link: its bytes, "
                   "time, and whether the step is host-link-bound (JSON host_link).")
@click.option("--host-link", metavar="NAME|GBPS",
              help="The host link to stream over instead of the entry's (implies "
                   "--stream-input): a name from links.yaml (pcie3-x16, nvlink2-cpu, "
                   "nvlink2-cpu-snapml, ...) or GB/s per direction.")
@click.option("--data-parallel", "workers", metavar="P[,P...]",
              help="Data-parallel training on P workers (a comma list for a table): ring "
                   "all-reduce of the gradients, 2(P-1)/P x bytes / bandwidth, step time with "
                   "and without overlap, scaling efficiency (JSON data_parallel). Needs "
                   "--interconnect; --mode train only (inference has no gradients).")
@click.option("--interconnect", metavar="NAME|GBPS",
              help="The network the all-reduce runs over: 10gbe, 25gbe, 100gbe, ib-edr, "
                   "ib-hdr, ib-ndr, nvlink2, nvlink3, nvlink4 (links.yaml), or GB/s per "
                   "direction.")
@generation_options
@click.option("--measure", is_flag=True,
              help="Also time every GEMM at its shape and dtype on this machine (--hw local or "
                   "an entry probed here; numpy's BLAS: fp64/fp32; torch or cupy on a GPU): "
                   "measured time, FLOP/s, share of the roof, measured / predicted; each "
                   "distinct shape once; progress on stderr.")
@click.option("--measure-budget", type=Seconds(min=1, max=86_400), default=60,
              show_default=True, metavar="SECONDS",
              help="With --measure: the timing's budget. A run whose least timing (10 calls "
                   "of each distinct shape, each at least its roofline time or 5 ms) passes "
                   "it is refused; one under way stops its rounds at it, the operands made "
                   "and checked included, the command's start (reading the model, "
                   "identifying this machine: 1-2 s) not.")
def analyze(model: str, hardware: tuple[str, ...], fmt: str, gemms_only: bool, expand: bool,
            plot: str | None, quantization: bool, stream_input: bool, host_link: str | None,
            workers: str | None, interconnect: str | None, measure: bool,
            measure_budget: float, **overrides) -> None:
    """List every GEMM of MODEL (a model.yaml, a Hugging Face config.json, or
    package.module:factory, a callable returning a PyTorch module and its example inputs,
    captured on the meta device; called with --batch when it has a batch parameter) and its
    other ops with FLOPs, bytes, intensity, bound, attainable throughput, time, alignment
    warnings and advice on the given hardware.

    Peaks are the dense datasheet figures of the hardware entry (or measured ones, for an
    entry saved by `roofline probe --save`). Beside each GEMM's and op's roofline time (a
    bound) stands a predicted time: calibrated from the probe on a measured entry; on a GPU
    entry, the GPU GEMM model fitted on public measurements; on a CPU datasheet entry, the
    roofline time itself (no per-call cost is documented: probe the machine to calibrate).
    The report says which.
    """
    from .api import analyze_model

    _check_plot(plot)
    if _given("measure_budget") and not measure:
        raise InputError("measure_budget", "", "goes with --measure (it bounds the time "
                                               "--measure spends timing GEMMs)")
    from .analysis.scaling import scale
    from .probe import resolve_hardware

    library = _local_library(model)
    from .hardware.catalog import load_hardware

    loaded = functools.cache(lambda: _loaded(model, overrides))  # captured once for every --hw
    needs = _needs(loaded, overrides)
    resolved = [resolve_hardware(hw, _progress, library, needs) for hw in hardware]
    specs = [hw if not isinstance(hw, str) else load_hardware(hw) for hw in resolved]
    names = [spec.name for spec in specs]
    if len(set(names)) < len(names):
        raise InputError("hardware", "", f"a device is given twice: {', '.join(names)}")
    network = loaded()
    reports = [scale(analyze_model(network, spec, quantization=quantization, **overrides),
                     stream_input, host_link, workers, interconnect) for spec in specs]
    from .output.report import View, check_listed

    view = View(gemms_only, expand, _terminal_width() if fmt == "table" else None)
    check_listed(reports, fmt, view)  # before anything is timed
    if measure:
        from .analysis.measure import check_budget, check_measurable, measure_report
        from .probe.identify import this_machine

        # this machine's host and CPU (py-cpuinfo, about 1 s), where an entry was measured
        machine = (this_machine() if any(r.hardware.origin == "measured" for r in reports)
                   else None)
        for report in reports:  # refuse before any timing starts
            check_measurable(report, machine=machine)
            check_budget(report, measure_budget)
        reports = [measure_report(r, _progress, budget_s=measure_budget, machine=machine)
                   for r in reports]
    _say_rows(reports, fmt)
    if fmt == "json" and len(reports) == 1:
        _stream_json(reports[0])
    elif fmt == "csv":
        from .output.report import csv_chunks

        with _Chunked() as out:  # made row by row: a deep model's CSV is 200 MB
            for chunk in csv_chunks(reports, view):
                out.write(chunk)
    elif fmt in ("table", "markdown") and len(reports) == 1:
        from .output.report import report_markdown_lines, report_table_lines

        lines = report_table_lines if fmt == "table" else report_markdown_lines
        with _Chunked() as out:  # made line by line: a deep model's table is 60 MB
            for line in lines(reports[0], view):
                out.write(f"{line}\n")
    else:
        click.echo(_render_reports(reports, fmt, view), nl=False)
    _write_plot(plot, lambda charts: charts.plot_roofline(reports))


#: Past this many GEMMs and ops in all, the per-row formats (JSON, CSV, HTML: every copy of a
#: repeated layer, where the table shows the first) take seconds to write (a 10,000-block
#: transformer's 100,000 rows: about 2.5-3.6 s of JSON on 2 cores), and the run says so first.
ROWS_SAID = 20_000


def _say_rows(reports: list, fmt: str) -> None:
    """A progress line on stderr before a per-row format of more than ``ROWS_SAID`` rows."""
    rows = sum(len(r.results) + len(r.ops) for r in reports)
    if fmt in ("json", "csv", "html") and rows > ROWS_SAID:
        _progress(f"writing {fmt} for {rows:,} GEMMs and ops (every copy of a repeated "
                  f"layer)...")


def _stream_json(report) -> None:
    """``report.to_dict()`` as JSON, its GEMMs and ops converted and written one at a time: the
    same text as json_output.to_json, without 300,000 dicts and a 200 MB string in memory at
    once. The header keys come from to_dict itself (on a one-row copy), so they cannot drift."""
    from dataclasses import replace

    from .analysis.report import gemm_objects
    from .output.json import write_json

    data = replace(report, results=report.results[:1], ops=report.ops[:1]).to_dict()
    data["warnings"] = list(report.warnings)  # a warning may count every GEMM (layout_warning)
    data["gemms"] = gemm_objects(report.results)
    data["ops"] = (result.to_dict() for result in report.ops)
    data["totals"] = report.totals
    with _Chunked() as out:
        write_json(data, out.write)


class _Chunked:
    """Text for stdout gathered into writes of about 1 MB: a 600,000-line table is a few dozen
    writes, not one system call a line when stdout is unbuffered (``PYTHONUNBUFFERED``, set in
    many containers). ``sys.stdout`` at each write: what click.echo and CliRunner use too."""

    LIMIT = 2**20

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._size = 0

    def write(self, text: str) -> None:
        self._pieces.append(text)
        self._size += len(text)
        if self._size >= self.LIMIT:
            self.flush()

    def flush(self) -> None:
        sys.stdout.write("".join(self._pieces))
        self._pieces, self._size = [], 0

    def __enter__(self) -> _Chunked:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:  # an error leaves what was not yet written unwritten
            self.flush()
            sys.stdout.flush()


def _render_reports(reports: list, fmt: str, view=None) -> str:
    from .output.json import to_json
    from .output.report import REPORT_FORMATS


    if fmt == "json" and len(reports) > 1:
        return to_json([r.to_dict() for r in reports]) + "\n"
    from .output.report import View

    view = view or View()
    if fmt == "html":  # one page for every device
        from .output.html import report_page

        return report_page(reports, view, _command())
    if fmt == "csv":
        from .output.report import reports_csv

        return reports_csv(reports, view)
    text = [REPORT_FORMATS[fmt](r, view) for r in reports]
    return ("\n" if fmt != "json" else "").join(text) + ("\n" if fmt == "json" else "")


class SignedArguments(click.Command):
    """A command whose arguments are numbers (gemm's M N K): a word of a minus and a digit
    (``-1``, ``-1.5``) is an argument, left to the number check to refuse (``expected a positive
    integer, got '-1'``), not an option click does not know (click reads every word starting
    with ``-`` as one: ``No such option '-1'``). Such a command line is parsed with its
    arguments, in their order, after ``--``; every other is parsed as click parses it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        head = args[:args.index("--")] if "--" in args else args
        if any(_SIGNED.fullmatch(word) for word in head):
            args = self._arguments_last(args)
        return super().parse_args(ctx, args)

    def _arguments_last(self, args: list[str]) -> list[str]:
        nargs = {name: param.nargs for param in self.params if isinstance(param, click.Option)
                 and not param.is_flag and not param.count for name in param.opts}
        options: list[str] = []
        arguments: list[str] = []
        words = iter(args)
        for word in words:
            if word == "--":
                arguments += words
            elif word.startswith("-") and not _SIGNED.fullmatch(word):
                values = list(itertools.islice(words, nargs.get(word, 0)))  # not --hw=a100's
                if len(values) < nargs.get(word, 0):
                    return args  # an option without its value: click names it
                options += [word, *values]
            else:
                arguments.append(word)
        return [*options, "--", *arguments]


_SIGNED = re.compile(r"-\.?[0-9].*", re.DOTALL)


@cli.command(cls=SignedArguments,
             short_help="The full verdict for one GEMM of shape M x N x K.")
@click.argument("m", metavar="M")
@click.argument("n", metavar="N")
@click.argument("k", metavar="K")
@click.option("--hw", "hardware", multiple=True, required=True, callback=_one_device,
              metavar="NAME",
              help="Hardware entry name, alias or entry file; `local` probes this machine.")
@click.option("--dtype", type=click.Choice(DTYPES), default="fp16", show_default=True,
              help="dtype of A and B.")
@click.option("--output-dtype", type=click.Choice(OUTPUT_DTYPES),
              help="dtype of C [default: the operands'; int8 -> int32, fp8 -> bf16].")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format; json is the analyze object with one GEMM, MM1.")
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw the roofline chart to FILE (.png, .svg or .pdf).")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
@click.option("--layout", type=click.Choice(GEMM_LAYOUTS), default="linear", show_default=True,
              help="How the operands are stored, row-major as PyTorch keeps them: linear, "
                   "F.linear(x, W) with W N x K (A and B both run along K); matmul, A @ B with "
                   "B K x N (B runs along N). It matters on Hopper in TF32, whose fast kernels "
                   "take A and B along K only.")
def gemm(m: str, n: str, k: str, hardware: str, dtype: str, output_dtype: str | None, fmt: str,
         plot: str | None, quantization: bool, layout: str) -> None:
    """The full verdict for one GEMM C(M, N) = A(M, K) . B(K, N): FLOPs, bytes, intensity,
    bound, time, alignment, tile and wave quantization, batch advice.

    The shape is read as the forward GEMM of a linear layer with K inputs and N outputs at
    batch M, so batch advice is about M (the rows of A and C).
    """
    from .analysis.whatif import gemm_report
    from .output.whatif import GEMM_NOTE
    from .probe import resolve_hardware

    _check_plot(plot)
    spec = resolve_hardware(hardware, _progress, needs=lambda: {dtype: "dtype"})
    report = gemm_report(m, n, k, spec, dtype, output_dtype, quantization, layout)
    click.echo(_render_reports([report], fmt), nl=False)
    if fmt in ("table", "markdown"):
        click.echo("\n" + GEMM_NOTE)
    _write_plot(plot, lambda charts: charts.plot_roofline([report]))


@cli.command(short_help="One model on several devices: per-GEMM and step speedups.")
@click.argument("model", type=MODEL_FILE)
@click.option("--hw", "hardware", multiple=True, required=True, metavar="NAME",
              help="A device to compare (two or more; the first is the baseline).")
@model_options
@generation_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw step time by device (stacked memory/compute-bound) to FILE; "
                   "with --prompt/--generate, each device's generation latency (time to "
                   "first token and decode steps).")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
def compare(model: str, hardware: tuple[str, ...], fmt: str, plot: str | None,
            quantization: bool, **overrides) -> None:
    """Per-GEMM and whole-step time of MODEL (a model.yaml, a Hugging Face config.json, or
    package.module:factory, captured as analyze captures it) on each device, the speedup over
    the first, and why: a GEMM memory-bound on both gains the bandwidth ratio, one
    compute-bound on both the peak ratio, one that changes side says so. Ends in one plain
    sentence, then the same at each device's predicted step time (GEMMs and ops; a datasheet
    CPU entry has no prediction beyond its roofline and is left out of that ranking).

    A device without the model's dtype runs the nearest one it has (same element size and
    kind first, e.g. fp16 -> bf16 on a Xeon; then wider, e.g. fp16 -> fp32) and says so.

    With --prompt P --generate G each device runs a whole generation: time to first token,
    time per output token, latency and tokens/s, the speedup of its tokens/s, whether the
    generation fits at its peak; the step and GEMM tables are its last decode step.
    """
    from .analysis.whatif import compare as run_compare
    from .output.whatif import COMPARE_FORMATS
    from .probe import resolve_hardware

    _check_plot(plot)
    library = _local_library(model)
    network = _loaded(model, overrides)
    needs = _needs(lambda: network, overrides)
    result = run_compare(network, [resolve_hardware(hw, _progress, library, needs)
                                   for hw in hardware],
                         quantization=quantization, **overrides)
    if fmt == "table":  # its GEMM table's layer names cut to the terminal's width
        from .output.whatif import comparison_table

        click.echo(comparison_table(result, _terminal_width()), nl=False)
    else:
        click.echo(_render(COMPARE_FORMATS, fmt, result), nl=False)
    _write_plot(plot, lambda charts: result.plot())


@cli.command(short_help="Step time, throughput and memory over batches or seqs.")
@click.argument("model", type=MODEL_FILE)
@click.option("--hw", "hardware", multiple=True, required=True, callback=_one_device,
              metavar="NAME",
              help="Hardware entry name, alias or entry file; `local` probes this machine.")
@click.option("--batch", "batches", metavar="LIST|A..B",
              help="Batches: a comma list (1,8,64,512) or a..b: a, every power of two "
                   "between, and b (3..100: 3, 4, 8, 16, 32, 64, 100; 1..4096: 1, 2, 4, ..., "
                   "4096) [default: the model's].")
@click.option("--seq", "seqs", metavar="N|LIST|A..B",
              help="Sequence lengths (tokens per sample; in decode, the KV cache), the same "
                   "way: one value, or several to sweep them (with several batches too: a "
                   "batch x seq grid) [default: the model's].")
@functools.partial(model_options, batch=False, seq=False)
@generation_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw per-GEMM intensity against the swept batch (or seq), with the "
                   "ridge, to FILE (not for a batch x seq grid); with --prompt/--generate, "
                   "tokens/s and time per output token against batch.")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
def sweep(model: str, hardware: str, batches: str | None, seqs: str | None, fmt: str,
          plot: str | None, quantization: bool, **overrides) -> None:
    """Step time and samples/s (roofline and predicted), memory and which GEMMs are
    memory-bound for MODEL at each batch
    (--batch), each sequence length (--seq) or each pair of both; the batch at which each GEMM
    turns compute-bound (closed form; null/never if no batch does) and, for a model with a
    sequence, the sequence length at which it does. Steps that do not fit in the device's
    memory are marked, not dropped.

    With --prompt P --generate G each point is a whole generation at that batch (as `analyze
    --prompt P --generate G` gives it): time to first token, time per output token, latency,
    tokens/s, and memory at the generation's peak (the prefill's or the last decode step's,
    the larger), batches past the largest the whole generation fits marked; the step columns
    and transitions are its last decode step."""
    from .analysis.whatif import parse_batches
    from .analysis.whatif import sweep as run_sweep
    from .output.whatif import SWEEP_FORMATS
    from .probe import resolve_hardware

    _check_plot(plot)
    _not_captured(model)
    # bad input fails before any work
    batch_values = parse_batches(batches) if batches is not None else None
    seq_values = parse_batches(seqs, "seqs") if seqs is not None else None
    if plot is not None and batch_values and seq_values and len(batch_values) > 1 and len(
            seq_values) > 1:
        raise PlotError("--plot draws one swept axis: give one batch or one seq with it (a "
                        "batch x seq grid is a table, CSV, Markdown or JSON)")
    from .model.network import load_network

    needs = _needs(lambda: load_network(model), overrides)
    result = run_sweep(model, resolve_hardware(hardware, _progress, needs=needs), batch_values,
                       quantization=quantization, seqs=seq_values, **overrides)
    click.echo(_render(SWEEP_FORMATS, fmt, result), nl=False)
    _write_plot(plot, lambda charts: result.plot())


@cli.command(short_help="The best split of a training step over N GPUs.")
@click.argument("model", type=MODEL_FILE)
@click.option("--hw", "hardware", multiple=True, required=True, callback=_one_device,
              metavar="NAME", help="The GPU every rank is (entry name, alias or file).")
@click.option("--gpus", required=True, metavar="N|LIST|A..B",
              help="GPU counts to plan for: 64, a comma list (8,16,64) or A..B (A, every "
                   "power of two between, and B: 8..512; 6..48 is 6,8,16,32,48).")
@model_options
@click.option("--tp", metavar="LIST", help="Tensor-parallel degrees to consider [default: "
              "every divisor of N up to --gpus-per-node that divides the heads, kv_heads and "
              "FFN].")
@click.option("--pp", metavar="LIST", help="Pipeline stages to consider [default: every "
              "divisor that divides the transformer blocks].")
@click.option("--zero", metavar="LIST", help="ZeRO stages to consider, 0-3 (3 = FSDP's full "
              "sharding; 2 and 3 not with a pipeline) [default: 0,1,2,3; 0 alone where dp is "
              "1, which a stage leaves unchanged].")
@click.option("--micro-batch", metavar="LIST", help="Sequences per micro-batch to consider "
              "[default: 1,2,4,8 and each data-parallel rank's whole share of --batch].")
@click.option("--ep", metavar="LIST", help="Expert-parallel degrees (MoE models; divide dp and "
              "the experts) [default: 1].")
@click.option("--sequence-parallel/--no-sequence-parallel", default=True, show_default=True,
              help="Sequence parallelism with tensor parallelism (Korthikanti et al.): "
                   "activations and norms divided by tp, same communication.")
@click.option("--gpus-per-node", type=Count(high=1024), default=8,
              show_default=True, help="GPUs that share the intra-node link.")
@click.option("--intra", metavar="NAME|GBPS", help="The link inside a node (links.yaml: "
              "nvswitch-h100, nvswitch-a100, nvlink4, pcie5-x16, ...; or GB/s per direction) "
              "[default: the NVSwitch of an SXM entry's NVLink, else PCIe of its host link].")
@click.option("--inter", metavar="NAME|GBPS", help="The link between nodes, per GPU (ib-ndr, "
              "ib-hdr, 400gbe, 100gbe, ...; or GB/s per direction) [default: ib-ndr].")
@click.option("--top", type=COUNT, default=3, show_default=True,
              help="Layouts shown per GPU count (JSON: all that fit unless given).")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
@click.option("--gemms", is_flag=True, help="Also print one GPU's GEMMs and ops in the best "
              "layout (its tensor-parallel shard at the micro-batch: shapes, alignment, "
              "advice), as analyze does.")
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw step time against GPUs, every fitting layout and the Pareto "
                   "front, to FILE (.png, .svg or .pdf).")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
def plan(model: str, hardware: str, gpus: str, tp: str | None, pp: str | None,
         zero: str | None, micro_batch: str | None, ep: str | None, sequence_parallel: bool,
         gpus_per_node: int, intra: str | None, inter: str | None, top: int, fmt: str,
         gemms: bool, plot: str | None, quantization: bool, **overrides) -> None:
    """The best way to split MODEL's training step over N GPUs: every tensor-, pipeline-,
    data- (ZeRO 0-3) and expert-parallel layout that fits in each GPU's memory, ranked by
    predicted step time (the roofline's beside it), and the Pareto front of predicted step time
    against GPU count.

    --batch is the global batch (sequences per optimizer step); each layout runs it as dp x
    micro-batches of --micro-batch. Per GPU: the tensor-parallel shard's GEMMs and ops at their
    roof and at their predicted times,
    communication by ring (hierarchical across nodes) on the links given, the 1F1B bubble,
    memory with ZeRO. The optimizer defaults to adam (mixed precision, 16 B per parameter).
    """
    from .analysis.plan import make_fabric, parse_counts, plan_layouts
    from .model.network import load_network
    from .probe import resolve_hardware

    _check_plot(plot)
    _not_captured(model)
    if gemms and fmt != "table":
        raise InputError("gemms", "", "the per-GPU GEMM table goes with --format table (for "
                                      "JSON: roofline analyze on the shard)")
    counts = parse_counts(gpus, "gpus")
    lists = {name: parse_counts(value, name) if value is not None else None
             for name, value in (("tp", tp), ("pp", pp), ("micro_batch", micro_batch),
                                 ("ep", ep))}
    zeros = None
    if zero is not None:
        zeros = tuple(sorted({_zero_stage(piece) for piece in zero.split(",")}))
    from .hardware.catalog import load_hardware

    spec = resolve_hardware(hardware, _progress,
                            needs=_needs(lambda: load_network(model), overrides))
    spec = spec if not isinstance(spec, str) else load_hardware(spec)
    network = load_network(model).with_overrides(**overrides)
    if overrides.get("optimizer") is None and network.mode == "train":  # plan's default: adam
        network = network.with_overrides(optimizer="adam")
    fabric = make_fabric(spec, intra, inter, gpus_per_node)
    result = plan_layouts(network, spec, counts, network.settled()[0], fabric,
                          zero=zeros, sequence_parallel=sequence_parallel,
                          quantization=quantization, progress=_progress, **lists)
    from .output.plan import plan_json, plan_table

    if fmt == "json":
        click.echo(plan_json(result, top if _given("top") else None), nl=False)
    else:
        click.echo(plan_table(result, top), nl=False)
    best = result.best
    if gemms and best is not None and best.report is not None and fmt == "table":
        from .output.report import View, report_table

        click.echo(f"\none GPU of {best.layout.label}: its shard at micro-batch "
                   f"{best.layout.micro_batch}")
        click.echo(report_table(best.report, View(width=_terminal_width())), nl=False)
    _write_plot(plot, lambda charts: charts.plot_plan(result))


def _zero_stage(piece: str) -> int:
    from .files.numbers import parse_int, quoted

    try:
        return parse_int(piece, low=0, high=3)
    except ValueError:
        raise InputError("zero", "", f"expected ZeRO stages 0, 1, 2 or 3 (a comma list), got "
                                     f"{quoted(piece)}") from None


def _given(name: str) -> bool:
    """Whether option ``name`` came from the command line (not its default)."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(name) == ParameterSource.COMMANDLINE


@cli.group()
def hw() -> None:
    """Browse the hardware database (bundled entries plus your own)."""


@hw.command("list")
@click.option("--kind", type=click.Choice(("gpu", "cpu")), help="Only GPUs or only CPUs.")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
def hw_list(kind: str | None, fmt: str) -> None:
    """List hardware entries with their headline figures (dense peaks)."""
    from .hardware.catalog import list_hardware, user_hwdb_dir
    from .output.hardware import hardware_list_json, hardware_table

    specs = list_hardware(kind)
    if fmt == "json":
        click.echo(hardware_list_json(specs))
    else:
        click.echo(hardware_table(specs), nl=False)
        click.echo(f"\nuser entries: {user_hwdb_dir()} (set $ROOFLINE_HWDB to change)")


@hw.command("show", short_help="Every figure of one entry, its sources and ridge points.")
@click.argument("name")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table",
              show_default=True)
def hw_show(name: str, fmt: str) -> None:
    """Show every figure of one entry, its sources, and the ridge point per dtype."""
    from .hardware.catalog import load_hardware
    from .output.hardware import hardware_detail, hardware_json

    spec = load_hardware(name)
    click.echo(hardware_json(spec) if fmt == "json" else hardware_detail(spec), nl=False)


def _progress(message: str) -> None:
    click.echo(message, err=True)


@cli.command(short_help="Measure what this machine delivers: GEMMs, memory, caches.")
@click.option("--quick", is_flag=True, help="About 10-30 s (longer on a busy machine) "
                                            "instead of about a minute on 2 cores "
                                            "(smaller sizes, fewer repeats and rounds).")
@click.option("--save", "save_name", metavar="NAME",
              help="Save the result as user hardware entry NAME, usable as `--hw NAME`.")
@click.option("--force", is_flag=True, help="With --save: replace an existing entry NAME, and "
                                            "save a result the probe's own checks call "
                                            "unstable (fp32 slower than fp64, an efficiency "
                                            "above 1.05, a spread above 25%, other "
                                            "programs keeping over 0.25 CPUs busy).")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "html")), default="table",
              show_default=True)
@click.option("--library", type=click.Choice(("numpy", "torch")), default="numpy",
              show_default=True,
              help="What the CPU GEMMs, and so the calibration of predicted times, go through: "
                   "numpy's BLAS, or torch (its MKL / oneDNN / OpenBLAS), for models that run "
                   "in torch.")
@click.option("--preset", type=click.Choice(("full", "quick", "tiny")), hidden=True)
def probe(quick: bool, save_name: str | None, force: bool, fmt: str, library: str,
          preset: str | None) -> None:
    """Measure this machine (GEMM per dtype, DRAM and cache bandwidth, small-GEMM overhead,
    GPU figures when torch or cupy is installed) beside its theoretical peaks.

    Progress goes to stderr. `--hw local` in analyze runs `probe --quick --save local` once
    (with `--library torch` for a captured PyTorch model).
    """
    from .output.probe import PROBE_FORMATS
    from .probe import run_probe, save_entry
    from .probe.entry import check_can_save
    from .probe.runner import check_library

    check_library(library)  # before anything is timed, or a name checked
    if force and save_name is None:
        raise InputError("force", "", "goes with --save (it lets the result replace an entry "
                                      "or be saved though unstable)")
    if save_name is not None:  # checked before probing: an empty name is an error, not "no"
        check_can_save(save_name, force)
    result = run_probe(quick=quick, progress=_progress, preset=preset, library=library)
    click.echo(_render(PROBE_FORMATS, fmt, result), nl=False)
    if save_name is not None:
        path = save_entry(result, save_name, force=force)
        click.echo(f"saved {save_name!r} to {path}; use it with --hw {save_name}", err=True)


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
