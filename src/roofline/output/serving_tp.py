"""The lines of a report served over several GPUs by tensor parallelism (``analyze --tp``,
``analysis.serving_tp``): the header line that says the tables are one GPU's shard, and the
communication line under the totals; what a title adds, ``shard_words``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import count, seconds, si

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.serving_tp import StepComm, TensorParallel


def link_text(tp: TensorParallel) -> str:
    """``NVSwitch (DGX H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a step)``."""
    link = tp.link
    latency = f", {seconds(link.latency_us * 1e-6)} a step" if link.latency_us else \
        ", no latency stated"
    return f"{link.label} ({link.bandwidth_gbs:g} GB/s{latency})"


def shard_words(report: Report) -> str:
    """What a title adds to the device's name where the report is one GPU's shard: `` (one
    GPU of tp 8)``; nothing otherwise (the chart's and the HTML page's titles)."""
    tp = report.tensor_parallel
    return f" (one GPU of tp {tp.tp})" if tp else ""


def header_line(tp: TensorParallel) -> str:
    """The header's line: ``tensor-parallel over 8 GPUs (each GPU's shard below); all-reduces
    on <link> (<GB/s>, <latency>), exposed``, and where KV heads are replicated what each GPU
    holds (``replication_text``)."""
    return (f"tensor-parallel over {count(tp.tp, 'GPU')} (each GPU's shard below); "
            f"all-reduces on {link_text(tp)}, exposed{replication_text(tp)}")


def replication_text(tp: TensorParallel) -> str:
    """``; KV heads replicated: tp 16 passes the 8 KV heads, so each GPU holds one, the same
    on 2 GPUs (vLLM's QKVParallelLinear): its K and V weights and KV cache are 1/8 of the
    model's, not 1/16``; nothing where each GPU holds its own KV heads."""
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


def comm_line(report: Report) -> str | None:
    """What the group sends and what it costs, in the step time above (and the generation's
    times below)."""
    tp = report.tensor_parallel
    if tp is None:
        return None
    if tp.prefill is None:
        text = f"tensor-parallel communication, in the step time above: {_step_text(tp.step)}"
        if report.network.phase == "prefill":  # whose logits the gather sends
            text += (" (the logits of each sequence's last token, which a server samples; "
                     "--logits all: every token's)" if report.network.logits == "last"
                     else " (every token's logits, --logits all)")
    else:
        text = (f"tensor-parallel communication, in the generation's times below: prefill "
                f"{_step_text(tp.prefill)}")
        if tp.decode is not None:
            text += f"; each decode step {_step_text(tp.decode)}"
        text += (f"; the whole generation {seconds(tp.generation_s or 0.0)} roof, "
                 f"{seconds(tp.predicted_generation_s or 0.0)} predicted")
    return (text + " (roof: the bytes at the link's bandwidth; predicted: vLLM's custom "
            "all-reduce kernels, one-shot or two-shot, two syncs of one step's latency each, "
            "else NCCL's ring, 2 (p - 1) steps; not overlapped with compute); memory, the "
            "fitting batch and the batch advice are one GPU's")
