"""``roofline analyze`` (every GEMM and op of a model on one or more devices) and ``roofline
gemm`` (one GEMM's verdict): both print a Report."""

from __future__ import annotations

import functools

import click

from ..errors import InputError
from ..model.dtypes import DTYPES, OUTPUT_DTYPES
from .console import _Chunked, _progress, _terminal_width
from .group import cli
from .loading import _loaded, _local_library, _needs
from .options import (
    FORMATS,
    GEMM_LAYOUTS,
    MODEL_FILE,
    PLOT_FILE,
    QUANTIZATION_HELP,
    Seconds,
    SignedArguments,
    _given,
    _one_device,
)
from .overrides import (
    check_serving_options,
    data_parallel_option,
    generation_options,
    model_options,
    pipeline_options,
    serving_options,
)
from .plots import _check_plot, _write_plot, force_option
from .reports import _render_reports, _say_rows, _stream_json


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
                   "ib-hdr, ib-ndr, nvlink2 .. nvlink5 (links.yaml), or GB/s per "
                   "direction.")
@generation_options
@serving_options
@pipeline_options
@data_parallel_option
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
            workers: str | None, interconnect: str | None, tp: int, gpus_per_node: int,
            intra: str | None, pp: int, inter: str | None, dp: int, measure: bool,
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
    from ..api import analyze_model

    _check_plot(plot)
    check_serving_options(tp, pp, dp)
    if _given("measure_budget") and not measure:
        raise InputError("measure_budget", "", "goes with --measure (it bounds the time "
                                               "--measure spends timing GEMMs)")
    from ..analysis.scaling import scale
    from ..probe import resolve_hardware

    library = _local_library(model)
    from ..hardware.catalog import load_hardware

    loaded = functools.cache(lambda: _loaded(model, overrides))  # captured once for every --hw
    needs = _needs(loaded, overrides, whole_step=True)
    resolved = [resolve_hardware(hw, _progress, library, needs) for hw in hardware]
    specs = [hw if not isinstance(hw, str) else load_hardware(hw) for hw in resolved]
    names = [spec.name for spec in specs]
    if len(set(names)) < len(names):
        raise InputError("hardware", "", f"a device is given twice: {', '.join(names)}")
    network = loaded()
    reports = [scale(analyze_model(network, spec, quantization=quantization, tp=tp,
                                   gpus_per_node=gpus_per_node, intra=intra, pp=pp,
                                   inter=inter, dp=dp, **overrides),
                     stream_input, host_link, workers, interconnect) for spec in specs]
    from ..output.report import View, check_listed

    view = View(gemms_only, expand, _terminal_width() if fmt == "table" else None)
    check_listed(reports, fmt, view)  # before anything is timed
    if measure:
        from ..analysis.measure import check_budget, check_measurable, measure_report
        from ..probe.identify import this_machine

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
        from ..output.report import csv_chunks

        with _Chunked() as out:  # made row by row: a deep model's CSV is 200 MB
            for chunk in csv_chunks(reports, view):
                out.write(chunk)
    elif fmt in ("table", "markdown") and len(reports) == 1:
        from ..output.report import report_markdown_lines, report_table_lines

        lines = report_table_lines if fmt == "table" else report_markdown_lines
        with _Chunked() as out:  # made line by line: a deep model's table is 60 MB
            for line in lines(reports[0], view):
                out.write(f"{line}\n")
    else:
        click.echo(_render_reports(reports, fmt, view), nl=False)
    _write_plot(plot, lambda charts: charts.plot_roofline(reports))


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
    from ..analysis.whatif import gemm_report
    from ..output.whatif import GEMM_NOTE
    from ..probe import resolve_hardware

    _check_plot(plot)
    spec = resolve_hardware(hardware, _progress, needs=lambda: {dtype: "dtype"})
    report = gemm_report(m, n, k, spec, dtype, output_dtype, quantization, layout)
    click.echo(_render_reports([report], fmt), nl=False)
    if fmt in ("table", "markdown"):
        click.echo("\n" + GEMM_NOTE)
    _write_plot(plot, lambda charts: charts.plot_roofline([report]))
