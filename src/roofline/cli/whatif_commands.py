"""``roofline compare`` (one model on several devices) and ``roofline sweep`` (one device over
batches or sequence lengths): the what-if questions of ``analysis.whatif``."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import click

from ..errors import PlotError
from .console import _Chunked, _progress, _render, _terminal_width
from .group import cli
from .loading import _loaded, _local_library, _needs
from .options import FORMATS, MODEL_FILE, PLOT_FILE, QUANTIZATION_HELP, _one_device
from .overrides import (
    check_serving_options,
    data_parallel_option,
    generation_options,
    model_options,
    pipeline_options,
    refuse_data_parallel,
    serving_options,
)
from .plots import _check_plot, _write_plot, force_option


@cli.command(short_help="One model on several devices: per-GEMM and step speedups.")
@click.argument("model", type=MODEL_FILE)
@click.option("--hw", "hardware", multiple=True, required=True, metavar="NAME",
              help="A device to compare (two or more; the first is the baseline).")
@model_options
@generation_options
@serving_options
@pipeline_options
@data_parallel_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw step time by device (stacked memory/compute-bound) to FILE; "
                   "with --prompt/--generate, each device's generation latency (time to "
                   "first token and decode steps).")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
def compare(model: str, hardware: tuple[str, ...], fmt: str, plot: str | None,
            quantization: bool, tp: int, gpus_per_node: int, intra: str | None, pp: int,
            inter: str | None, dp: int, **overrides) -> None:
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

    With --tp N each device serves it over N GPUs of one node, as `analyze --tp N` does, on
    its own intra-node link (or --intra's): every figure is one GPU's shard, its times
    holding the group's all-reduces, and tokens/s are the N GPUs'. With --pp N each device
    serves it over a pipeline of N stages, each a --tp group, as `analyze --pp N` does: every figure
    is one GPU's of tp x pp, its memory the most loaded stage's with the KV cache of the N
    batches in flight, its step time one batch's through every stage and hand-off, and
    tokens/s the pipeline's with its N batches in flight.
    """
    from ..analysis.whatif import compare as run_compare
    from ..output.whatif import COMPARE_CHUNKS, COMPARE_FORMATS
    from ..probe import resolve_hardware

    _check_plot(plot)
    refuse_data_parallel(dp, "compare")
    check_serving_options(tp, pp)
    library = _local_library(model)
    network = _loaded(model, overrides)
    needs = _needs(lambda: network, overrides, whole_step=True)
    result = run_compare(network, [resolve_hardware(hw, _progress, library, needs)
                                   for hw in hardware],
                         quantization=quantization, tp=tp, gpus_per_node=gpus_per_node,
                         intra=intra, pp=pp, inter=inter, **overrides)
    if fmt == "table":  # its GEMM table's layer names cut to the terminal's width
        from ..output.whatif import comparison_table

        click.echo(comparison_table(result, _terminal_width()), nl=False)
    elif fmt in COMPARE_CHUNKS:
        _write_chunks(COMPARE_CHUNKS[fmt](result))
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
@serving_options
@pipeline_options
@data_parallel_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw per-GEMM intensity against the swept batch (or seq), with the "
                   "ridge, to FILE (not for a batch x seq grid); with --prompt/--generate, "
                   "tokens/s and time per output token against batch.")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
def sweep(model: str, hardware: str, batches: str | None, seqs: str | None, fmt: str,
          plot: str | None, quantization: bool, tp: int, gpus_per_node: int,
          intra: str | None, pp: int, inter: str | None, dp: int, **overrides) -> None:
    """Step time and samples/s (roofline and predicted), memory and which GEMMs are
    memory-bound for MODEL at each batch
    (--batch), each sequence length (--seq) or each pair of both; the batch at which each GEMM
    turns compute-bound (closed form; null/never if no batch does) and, for a model with a
    sequence, the sequence length at which it does. Steps that do not fit in the device's
    memory are marked, not dropped.

    MODEL may be package.module:factory, a factory with a batch parameter (def
    make(batch=8): return module, inputs_of_that_batch): the module is captured at each
    --batch (on the meta device, said on stderr; at most 64 batches; no --seq or
    --prompt/--generate), and the batch at which each GEMM turns compute-bound is read from
    the captures: the closed form over the dimension that grew in proportion to the batch
    between them; unknown, with the reason, where they show neither that nor a shape that
    stays the same (or one batch is swept).

    With --prompt P --generate G each point is a whole generation at that batch (as `analyze
    --prompt P --generate G` gives it): time to first token, time per output token, latency,
    tokens/s, and memory at the generation's peak (the prefill's or the last decode step's,
    the larger), batches past the largest the whole generation fits marked; the step columns
    and transitions are its last decode step.

    With --tp N each point is served over N GPUs of one node, as `analyze --tp N` does (a
    model file's, not a captured module's): every figure is one GPU's shard, its times holding
    the group's all-reduces (the tp comm column), and throughput is the N GPUs'. With --pp N
    each point is served over a pipeline of N stages, each a --tp group, as `analyze --pp N` does:
    every figure is one GPU's of tp x pp, its memory the most loaded stage's (batches past
    what it fits marked), its times holding the hand-offs (the pp comm column), and throughput
    the pipeline's with its N batches in flight."""
    from ..analysis.whatif import sweep as run_sweep
    from ..analysis.whatif_values import parse_batches
    from ..output.whatif_sweep import SWEEP_CHUNKS, SWEEP_FORMATS
    from ..probe import resolve_hardware

    _check_plot(plot)
    refuse_data_parallel(dp, "sweep")
    check_serving_options(tp, pp)
    # bad input fails before any work
    batch_values = parse_batches(batches) if batches is not None else None
    seq_values = parse_batches(seqs, "seqs") if seqs is not None else None
    if plot is not None and batch_values and seq_values and len(batch_values) > 1 and len(
            seq_values) > 1:
        raise PlotError("--plot draws one swept axis: give one batch or one seq with it (a "
                        "batch x seq grid is a table, CSV, Markdown or JSON)")
    # the dtypes a due --hw local probe measures: a captured module's at the first batch
    first = {"batch": batch_values[0] if batch_values else None}
    needs = _needs(lambda: _loaded(model, overrides | first), overrides)
    result = run_sweep(model, resolve_hardware(hardware, _progress, _local_library(model),
                                               needs),
                       batch_values, quantization=quantization, seqs=seq_values,
                       progress=_progress, tp=tp, gpus_per_node=gpus_per_node, intra=intra,
                       pp=pp, inter=inter, **overrides)
    if fmt in SWEEP_CHUNKS:
        _write_chunks(SWEEP_CHUNKS[fmt](result))
    else:
        click.echo(_render(SWEEP_FORMATS, fmt, result), nl=False)
    _write_plot(plot, lambda charts: result.plot())


def _write_chunks(chunks: Iterator[str]) -> None:
    """A listing format's pieces (JSON, CSV: every GEMM, a repeat's copies included) on stdout
    as they are made, in writes of about 1 MB (``_Chunked``): the document is never held
    whole (0.9.0: compare's JSON of 10**4 blocks on three devices had held 567 MiB)."""
    with _Chunked() as out:
        for chunk in chunks:
            out.write(chunk)
