"""The lines of a report served over several GPUs by tensor parallelism (``analyze --tp``,
``analysis.serving_tp``): the header line that says the tables are one GPU's shard, and the
communication line under the totals; what a title adds, ``shard_words``; where tokens/s are
made, ``where_text``. compare's and sweep's (``--tp``, 0.9.0): the header line over their
devices or points, ``group_line``, and each device's communication, ``device_comm_lines``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..units import count, seconds, si
from .scaling import link_text as scaling_link_text
from .scaling import step_latency

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.serving_tp import StepComm, TensorParallel

#: What the predicted communication is, after each line that gives it.
PREDICTED_TEXT = ("roof: the bytes at the link's bandwidth; predicted: vLLM's custom "
                  "all-reduce kernels, one-shot or two-shot, two syncs of one step's latency "
                  "each, else NCCL's ring, 2 (p - 1) steps; not overlapped with compute")


def link_text(tp: TensorParallel) -> str:
    """``NVSwitch (DGX H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a step)``; a bandwidth given
    as a number, ``100 GB/s (no latency stated)``."""
    link = tp.link
    return scaling_link_text(link.label, link.bandwidth_gbs, more=step_latency(link.latency_us))


def shard_words(report: Report) -> str:
    """What a title adds to the device's name where the report is one GPU's shard: `` (one
    GPU of tp 8)``, over a pipeline `` (one GPU of tp 8 x pp 2)``; nothing otherwise (the
    chart's and the HTML page's titles)."""
    tp, pp, dp = report.tensor_parallel, report.pipeline_parallel, report.data_parallel
    if dp is not None:  # (analysis.serving_dp: never with a pipeline)
        return f" (one GPU of dp {dp.dp} x tp {dp.tp})"
    if pp is not None:
        return f" (one GPU of tp {pp.tp} x pp {pp.pp})"
    return f" (one GPU of tp {tp.tp})" if tp else ""


def where_text(report: Report) -> str:
    """Where a generation's tokens/s are made: ``on the 8 GPUs`` where the report is one GPU's
    shard (the group's tokens; a pipeline's tp x pp), else ``on the device``."""
    served = report.tensor_parallel or report.pipeline_parallel or report.data_parallel
    return f"on the {served_gpus(report)} GPUs" if served else "on the device"


def served_gpus(report: Report) -> int:
    """The GPUs the report's figures are one GPU's of: tp, over a pipeline tp x pp, over
    data-parallel ranks dp x tp; 1 where one GPU runs the step."""
    tp, pp, dp = report.tensor_parallel, report.pipeline_parallel, report.data_parallel
    if dp is not None:
        return dp.gpus
    if pp is not None:
        return pp.tp * pp.pp
    return tp.tp if tp else 1


def header_line(tp: TensorParallel) -> str:
    """The header's line: ``tensor-parallel over 8 GPUs (each GPU's shard below); all-reduces
    on <link> (<GB/s>, <latency>), exposed``, and where KV heads are replicated what each GPU
    holds (``replication_text``)."""
    return (f"tensor-parallel over {count(tp.tp, 'GPU')} (each GPU's shard below); "
            f"all-reduces on {link_text(tp)}, exposed{replication_text(tp)}")


def replication_text(tp: TensorParallel) -> str:
    """``; KV heads replicated: tp 16 passes the 8 KV heads, so each GPU holds one, the same
    on 2 GPUs (vLLM's QKVParallelLinear): its K and V weights and KV cache are 1/8 of the
    model's, not 1/16``; nothing where each GPU holds its own KV heads. With latent attention
    (MLA): its cache whole on every GPU, as vLLM keeps it."""
    if tp.latent:
        return (f"; latent KV cache whole on every GPU: latent attention keeps one latent a "
                f"token for all heads, which vLLM does not split (MLA as one KV head), so each "
                f"GPU's KV cache is the model's whole, not 1/{tp.tp}")
    if tp.kv_replicas == 1:
        return ""
    heads = tp.tp // tp.kv_replicas
    share = "the model's whole" if heads == 1 else f"1/{heads} of the model's"
    return (f"; KV heads replicated: tp {tp.tp} passes the model's {count(heads, 'KV head')}, "
            f"so each GPU holds one, the same on {count(tp.kv_replicas, 'GPU')} (vLLM's "
            f"QKVParallelLinear): its K and V weights and KV cache are {share}, not 1/{tp.tp}")


def _step_text(step: StepComm) -> str:
    """``65 all-reduces of 8.19 kB (one-shot) and 1 gather of 65.5 kB: 2.2 us roof, 454 us
    predicted``."""
    parts = []
    for t in step.transfers:
        what = "gather" if t.what == "gather" else "all-reduce"
        how = "" if t.algorithm == "gather" else f" ({t.algorithm})"
        parts.append(f"{count(t.count, what)} of {si(t.nbytes, 'B')}{how}")
    return (f"{', '.join(parts)}: {seconds(step.roof_s)} roof, {seconds(step.predicted_s)} "
            f"predicted")


def _comm_text(report: Report, tp: TensorParallel) -> str:
    """What the group sends each step and what it costs: the step's transfers, or a
    generation's prefill's, each decode step's and the whole generation's."""
    if tp.prefill is None:
        text = _step_text(tp.step)
        if report.network.phase == "prefill":  # whose logits the gather sends
            text += (" (the logits of each sequence's last token, which a server samples; "
                     "--logits all: every token's)" if report.network.logits == "last"
                     else " (every token's logits, --logits all)")
        return text
    text = f"prefill {_step_text(tp.prefill)}"
    if tp.decode is not None:
        text += f"; each decode step {_step_text(tp.decode)}"
    return text + (f"; the whole generation {seconds(tp.generation_s or 0.0)} roof, "
                   f"{seconds(tp.predicted_generation_s or 0.0)} predicted")


def comm_line(report: Report) -> str | None:
    """What the group sends and what it costs, in the step time above (and the generation's
    times below)."""
    tp = report.tensor_parallel
    if tp is None:
        return None
    where = ("the generation's times below" if tp.prefill is not None else
             "the step time above")
    return (f"tensor-parallel communication, in {where}: {_comm_text(report, tp)} "
            f"({PREDICTED_TEXT}); memory, the fitting batch and the batch advice are one GPU's")


def group_line(reports: Sequence[Report]) -> str | None:
    """compare's and sweep's header line where each device or point is served over several
    GPUs (``--tp``): ``tensor-parallel over 2 GPUs: every figure below is one GPU's shard
    (memory and fits too), its times holding the group's all-reduces, exposed, on <link>``
    (each device's own where they differ) ``; throughput (tokens/s) is the 2 GPUs' together``
    (over a pipeline, ``--pp``, the pipeline's line says whose), and where KV heads are
    replicated what each GPU holds (``replication_text``); None for one GPU."""
    tp = reports[0].tensor_parallel
    if tp is None:
        return None
    links = {r.hardware.name: link_text(r.tensor_parallel) for r in reports
             if r.tensor_parallel is not None}
    on = (f"on {next(iter(links.values()))}" if len(set(links.values())) == 1 else
          "on each device's own: " + "; ".join(f"{name} {link}" for name, link in links.items()))
    whose = ("" if reports[0].pipeline_parallel else
             f"; throughput (tokens/s) is the {tp.tp} GPUs' together")
    return (f"tensor-parallel over {count(tp.tp, 'GPU')}: every figure below is one GPU's "
            f"shard (memory and fits too), its times holding the group's all-reduces, "
            f"exposed, {on}{whose}{replication_text(tp)}")


def device_comm_lines(reports: Sequence[Report]) -> list[str]:
    """compare's lines under its device table: what each device's group sends a step and what
    it costs, in its step time (of generations, in its generation's times); none for one
    GPU."""
    served = [(r, r.tensor_parallel) for r in reports if r.tensor_parallel is not None]
    if not served:
        return []
    where = ("its generation's times" if served[0][1].prefill is not None else
             "its step time")
    return [f"tensor-parallel communication on {r.hardware.name}, in {where}: "
            f"{_comm_text(r, tp)}" for r, tp in served] + [f"({PREDICTED_TEXT})"]
