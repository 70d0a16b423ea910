"""The lines of a report served over data-parallel ranks (``analyze --dp``,
``analysis.serving_dp``): the header line that says whose figures the tables are and where the
experts sit, ``header_line``, and the line under the totals, ``dp_line``: the experts' dispatch
and combine, the D ranks' tokens/s and the batch the group fits."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import count, seconds, si
from .scaling import link_text as scaling_link_text
from .scaling import step_latency

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.serving_dp import DataParallel, DispatchComm

#: What the predicted communication is, after each line that gives it.
PREDICTED_TEXT = ("roof: the bytes at the link's bandwidth; predicted: NCCL's ring, p - 1 "
                  "steps' latency each; not overlapped with compute")


def link_text(dp: DataParallel) -> str:
    """``NVSwitch (DGX H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a step)``."""
    link = dp.link
    return scaling_link_text(link.label, link.bandwidth_gbs, more=step_latency(link.latency_us))


def header_line(dp: DataParallel) -> str:
    """The header's line: ``data-parallel attention over 8 ranks of tp 1, experts over 8 GPUs
    (expert-parallel: 256/8 = 32 whole experts a GPU) ...``, or a dense model's replicas."""
    ranks = (f"every figure below is one GPU's, running its rank's "
             f"{count(dp.rank_batch, 'sequence')} of the batch's {dp.batch}")
    if not dp.moe:
        return (f"data-parallel over {count(dp.dp, 'replica')} of tp {dp.tp} "
                f"({count(dp.gpus, 'GPU')}), as vLLM's --data-parallel-size {dp.dp}: {ranks}; "
                f"a dense model's replicas share nothing (vLLM runs their engines "
                f"independently), so no communication between them; tokens/s are the "
                f"{dp.dp} replicas' together")
    return (f"data-parallel attention over {count(dp.dp, 'rank')} of tp {dp.tp}, experts over "
            f"{count(dp.gpus, 'GPU')} (expert-parallel: {dp.experts}/{dp.gpus} = "
            f"{count(dp.local_experts or 0, 'whole expert')} a GPU), as vLLM's "
            f"--data-parallel-size {dp.dp} "
            f"--enable-expert-parallel: {ranks}; every layer but the routed experts "
            f"(attention, embedding, LM head, any dense block or shared expert) whole on every "
            f"GPU (tp {dp.tp}), its KV cache its own "
            f"rank's sequences only; each MoE layer's tokens all-gathered to every GPU and its "
            f"experts' output reduce-scattered back (vLLM's default all2all backend, "
            f"allgather_reducescatter) on {link_text(dp)}, exposed; the routed rows spread "
            f"evenly over the experts and the batch over the ranks, so every rank is equally "
            f"loaded: none runs a dummy step and the step time is every rank's")


def _step_text(step: DispatchComm) -> str:
    """``58 MoE layers x (all-gather of 3.69 MB, reduce-scatter of 3.67 MB): 830 us roof, 3.59
    ms predicted``."""
    if step.dispatch is None or step.combine is None:
        return "none"
    return (f"{count(step.layers, 'MoE layer')} x (all-gather of "
            f"{si(step.dispatch.nbytes, 'B')}: each GPU's {count(step.tokens, 'token')}' hidden "
            f"states in {step.hidden_dtype}, top-k ids and weights, "
            f"{si(step.dispatch.per_gpu, 'B')}; reduce-scatter "
            f"of {si(step.combine.nbytes, 'B')}): {seconds(step.roof_s)} roof, "
            f"{seconds(step.predicted_s)} predicted")


def dp_line(report: Report) -> str | None:
    """What the ranks send, the group's tokens/s and the batch it fits, under the totals; None
    without data parallelism."""
    dp = report.data_parallel
    if dp is None:
        return None
    if dp.moe:
        if dp.prefill is None:
            sent = f"in the step time above: {_step_text(dp.step)}"
        else:
            sent = f"in the generation's times below: prefill {_step_text(dp.prefill)}"
            if dp.decode is not None:
                sent += f"; each decode step {_step_text(dp.decode)}"
            sent += (f"; the whole generation {seconds(dp.generation_s or 0.0)} roof, "
                     f"{seconds(dp.predicted_generation_s or 0.0)} predicted")
        text = f"data-parallel communication, {sent} ({PREDICTED_TEXT})"
    else:
        text = "data-parallel: no communication between the replicas"
    if dp.prefill is None:
        text += (f"; {si(dp.tokens_per_s(), '')}tokens/s on the {count(dp.gpus, 'GPU')} roof, "
                 f"{si(dp.tokens_per_s(True), '')}tokens/s predicted ({dp.dp} x "
                 f"{count(dp.step.tokens, 'token')} a rank each step)")
    if dp.rank_max_batch is not None:
        text += (f"; memory: one GPU's, its rank's {count(dp.rank_batch, 'sequence')}: fits "
                 f"up to batch {dp.rank_max_batch} a rank, {dp.max_batch} over the "
                 f"{dp.dp} ranks")
    return text
