"""``roofline plan``: the best split of a training step over N GPUs, and its ``--zero`` list."""

from __future__ import annotations

import functools

import click

from ..errors import InputError
from .console import _command, _progress, _terminal_width
from .group import cli
from .loading import _needs, _not_captured
from .options import (
    COUNT,
    MODEL_FILE,
    PLAN_FORMATS,
    PLOT_FILE,
    QUANTIZATION_HELP,
    Count,
    _given,
    _one_device,
)
from .overrides import INFERENCE_ONLY, model_options
from .plots import _check_plot, _write_plot, force_option


@cli.command(short_help="The best split of a training step over N GPUs.")
@click.argument("model", type=MODEL_FILE)
@click.option("--hw", "hardware", multiple=True, required=True, callback=_one_device,
              metavar="NAME", help="The GPU every rank is (entry name, alias or file).")
@click.option("--gpus", required=True, metavar="N|LIST|A..B",
              help="GPU counts to plan for: 64, a comma list (8,16,64) or A..B (A, every "
                   "power of two between, and B: 8..512; 6..48 is 6,8,16,32,48).")
@functools.partial(model_options, training=True)
@click.option("--tp", metavar="LIST", help="Tensor-parallel degrees to consider [default: "
              "every divisor of N up to --gpus-per-node that divides the heads, kv_heads and "
              "FFN].")
@click.option("--pp", metavar="LIST", help="Pipeline stages to consider, a list or A..B "
              "[default: every divisor of N no deeper than the transformer blocks; stages "
              "uneven where the depth does not divide them]. Values the model cannot take are "
              "left out, on a 'left out:' line, and the plan refused only where none is left "
              "(--tp and --ep alike).")
@click.option("--vp", metavar="LIST", help="Model chunks each pipeline GPU holds (virtual "
              "pipeline stages: Megatron-LM's interleaved 1F1B schedule, its "
              "--num-virtual-stages-per-pipeline-rank; named for the chunk count its "
              "virtual_pipeline_model_parallel_size is, not --num-layers-per-virtual-pipeline-"
              "stage's layers a chunk). The pp x vp chunks split the blocks as evenly as they "
              "go, chunk c on GPU c mod pp; the bubble shrinks to (p - 1) / vp micro-batch "
              "times, point-to-point transfers grow vp times, the first stage keeps (1 + (p - "
              "1) / (p vp)) times 1F1B's activations; the micro-batches a data-parallel rank "
              "runs must be a multiple of pp (a value no layout runs is named on the 'left out:' "
              "line). Needs --pp above 1 [default: 1, plain 1F1B].")
@click.option("--zero", metavar="LIST", help="ZeRO stages to consider, 0-3 (3 = FSDP's full "
              "sharding; 2 and 3 not with a pipeline: left out where every --pp given has one, "
              "as --tp values are) [default: 0,1,2,3; 0 alone where dp is "
              "1, which a stage leaves unchanged].")
@click.option("--micro-batch", metavar="LIST", help="Sequences per micro-batch to consider "
              "[default: 1,2,4,8 and each data-parallel rank's whole share of --batch].")
@click.option("--ep", metavar="LIST", help="Expert-parallel degrees (MoE models; divide dp and "
              "the experts) [default: 1].")
@click.option("--sequence-parallel/--no-sequence-parallel", default=True, show_default=True,
              help="Sequence parallelism with tensor parallelism (Korthikanti et al.): "
                   "activations and norms divided by tp, the same transfers a micro-batch, "
                   "and once a step the gradients of the parameters every GPU of the group "
                   "holds whole (norms, routers) all-reduced over it.")
@click.option("--gpus-per-node", type=Count(high=1024), default=8,
              show_default=True, help="GPUs that share the intra-node link.")
@click.option("--intra", metavar="NAME|GBPS", help="The link inside a node (links.yaml: "
              "nvswitch-h100, nvswitch-a100, nvlink4, pcie5-x16, ...; or GB/s per direction) "
              "[default: the NVSwitch of an SXM entry's NVLink, else PCIe of its host link].")
@click.option("--inter", metavar="NAME|GBPS", help="The link between nodes, per GPU (ib-ndr, "
              "ib-hdr, 400gbe, 100gbe, ...; or GB/s per direction) [default: ib-ndr].")
@click.option("--top", type=COUNT, default=3, show_default=True,
              help="Layouts shown per GPU count (JSON and CSV: all that fit unless given).")
@click.option("--format", "fmt", type=click.Choice(PLAN_FORMATS), default="table",
              show_default=True, help="table: the text; json: every fitting layout unless "
              "--top is given; csv: a row per fitting layout (every one unless --top is "
              "given), the JSON's figures; markdown: the text's lines and tables; html: one "
              "self-contained page, its chart and sortable tables (redirect it to a file).")
@click.option("--gemms", is_flag=True, help="Also print one GPU's GEMMs and ops in the best "
              "layout (its tensor-parallel shard at the micro-batch: shapes, alignment, "
              "advice), as analyze does.")
@force_option
@click.option("--plot", type=PLOT_FILE, metavar="FILE",
              help="Also draw step time against GPUs, every fitting layout and the Pareto "
                   "front, to FILE (.png, .svg or .pdf).")
@click.option("--quantization", is_flag=True, help=QUANTIZATION_HELP)
def plan(model: str, hardware: str, gpus: str, tp: str | None, pp: str | None,
         vp: str | None, zero: str | None, micro_batch: str | None, ep: str | None,
         sequence_parallel: bool, gpus_per_node: int, intra: str | None, inter: str | None,
         top: int, fmt: str, gemms: bool, plot: str | None, quantization: bool,
         **overrides) -> None:
    """The best way to split MODEL's training step over N GPUs: every tensor-, pipeline-,
    data- (ZeRO 0-3) and expert-parallel layout that fits in each GPU's memory, ranked by
    predicted step time (the roofline's beside it), and the Pareto front of predicted step time
    against GPU count.

    --batch is the global batch (sequences per optimizer step); each layout runs it as dp x
    micro-batches of --micro-batch. Per GPU: the tensor-parallel shard's GEMMs and ops at their
    roof and at their predicted times, communication by ring (hierarchical across nodes) on
    the links given, the 1F1B bubble (interleaved over --vp model chunks a GPU where given),
    memory with ZeRO. The optimizer defaults to adam (mixed precision, 16 B per parameter).

    Training steps only: serving (an inference step, --phase, --weights, --kv-cache, a
    generation) over the GPUs of a node is `roofline analyze --tp N`'s.
    """
    from ..analysis.plan import parse_counts
    from ..api import plan as plan_call
    from ..api import zero_stages
    from ..model.network import load_network
    from ..probe import resolve_hardware

    _check_plot(plot)
    _not_captured(model)
    _refuse_inference(overrides)
    if gemms and fmt != "table":
        raise InputError("gemms", "", "the per-GPU GEMM table goes with --format table (for "
                                      "JSON: roofline analyze on the shard)")
    counts = parse_counts(gpus, "gpus")
    lists = {name: parse_counts(value, name) if value is not None else None
             for name, value in (("tp", tp), ("pp", pp), ("micro_batch", micro_batch),
                                 ("ep", ep), ("vp", vp))}
    zeros = None if zero is None else zero_stages(zero)
    spec = resolve_hardware(hardware, _progress,
                            needs=_needs(lambda: load_network(model), overrides))
    result = plan_call(model, spec, counts, zero=zeros, sequence_parallel=sequence_parallel,
                       gpus_per_node=gpus_per_node, intra=intra, inter=inter,
                       quantization=quantization, progress=_progress, **lists, **overrides)
    from ..output.plan import PLAN_FORMATS as RENDERERS

    if fmt == "json":
        click.echo(RENDERERS["json"](result, top if _given("top") else None), nl=False)
    elif fmt == "csv":  # what it leaves out and the warnings on stderr: stdout stays CSV
        from ..output.plan_csv import csv_notes

        listed = top if _given("top") else None
        for line in csv_notes(result, listed):
            _progress(line)
        click.echo(RENDERERS["csv"](result, listed), nl=False)
    elif fmt == "html":  # the page names the command that made it
        click.echo(RENDERERS["html"](result, top, command=_command()), nl=False)
    else:
        click.echo(RENDERERS[fmt](result, top), nl=False)
    best = result.best
    if gemms and best is not None and best.report is not None and fmt == "table":
        from ..output.report import View, report_table

        click.echo(f"\none GPU of {best.layout.label}: its shard at micro-batch "
                   f"{best.layout.micro_batch}")
        click.echo(report_table(best.report, View(width=_terminal_width())), nl=False)
    _write_plot(plot, lambda charts: charts.plot_plan(result))


def _refuse_inference(overrides: dict) -> None:
    """One line for an inference setting given to plan, which lays out training steps only:
    without it, --phase was refused as 'an inference setting, but the step trains: give --mode
    inference', and --mode inference then as 'modelled for training steps (give mode train)'."""
    given = [name for name in INFERENCE_ONLY if overrides.get(name) is not None]
    if overrides.get("mode") == "inference":
        given.insert(0, "mode")
    if given:
        option = "--" + given[0].replace("_", "-")
        what = "inference" if given[0] == "mode" else "an inference setting"
        raise InputError(option, "", f"{what}, but `roofline plan` splits training steps "
                                     f"only: serving over several GPUs is `roofline "
                                     f"analyze --tp N`'s (a step, or --prompt P --generate "
                                     f"G)")
