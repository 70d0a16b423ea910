"""The lines of a report served over a pipeline of stages (``analyze --pp``,
``analysis.serving_pp``): the header line that says every figure is one GPU's of tp x pp and
how the stages split the model (``header_line``), and the pipeline's line under the totals:
each stage's time, the bottleneck, the hand-offs and what the batches in flight make
(``pipeline_line``). compare's and sweep's (``--pp``, 0.9.0): the header line over their
devices or points, ``group_line``, and each device's pipeline, ``device_lines``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..units import count, seconds, si
from .scaling import link_text, step_latency

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.serving_pp import PipelineParallel, PipelineStep
    from ..hardware.links import Link

#: How the pipeline's figures are worked out, after the line that gives them.
PIPELINE_TEXT = ("vLLM's rules: get_pp_indices' split, IntermediateTensors sent by "
                 "send-allgather, pp batches in flight, each a round of max(latency, pp x the "
                 "slowest stage); hand-offs roof: the bytes at the link's bandwidth; predicted: "
                 "each tensor's latency too; not overlapped with compute")


def _link(link: Link) -> str:
    return link_text(link.label, link.bandwidth_gbs, more=step_latency(link.latency_us))


def _stages_text(pp: PipelineParallel) -> str:
    """``stage 0 embed .. blk.63 (63 blocks), stage 1 blk.64 .. lm_head (63 blocks)``."""
    stages = pp.stages
    return ", ".join(f"stage {s} {first} .. {last} ({count(blocks, 'block')})"
                     for s, ((first, last), blocks) in enumerate(zip(stages.names,
                                                                     stages.blocks)))


def _split_text(pp: PipelineParallel) -> str:
    """Whose split of the blocks the stages are: vLLM's, or the one given (``--pp A,B``)."""
    return ("the split given, as VLLM_PP_LAYER_PARTITION gives vLLM one" if pp.stages.given
            else "vLLM's split")


def header_line(pp: PipelineParallel) -> str:
    """The header's line: ``pipeline-parallel over 2 stages of tp 8 (16 GPUs, 2 nodes of 8):
    every figure below is one GPU's of its stage; <stages>; hand-offs on <link>, exposed; 2
    batches in flight, each GPU holding their KV cache for its stage's layers``."""
    gpus = pp.tp * pp.pp
    on = _links_text(pp)
    if pp.inter_given and not any(h.crosses_nodes for h in pp.step.handoffs):
        # a link given and left unused: said, not dropped
        on += (f" (--inter {pp.fabric.inter.name} unused: the {count(gpus, 'GPU')} sit in one "
               f"node of {pp.fabric.gpus_per_node})")
    return (f"pipeline-parallel over {count(pp.pp, 'stage')} of tp {pp.tp} "
            f"({count(gpus, 'GPU')}, {count(pp.nodes, 'node')} of {pp.fabric.gpus_per_node}): "
            f"every figure below is one GPU's of its stage, the step time one batch's through "
            f"every stage; {_stages_text(pp)} ({_split_text(pp)}); hand-offs {on}, exposed; "
            f"{pp.in_flight} batches in flight, each GPU holding their KV cache for its "
            f"stage's layers")


def _step_text(step: PipelineStep) -> str:
    """``stages 12 ms, 11 ms roof (14 ms, 13 ms predicted), the slowest stage 0; 1 hand-off of
    hidden_states + residual, 65.5 kB each (8.19 kB a GPU, then all-gathered): 2.6 us roof,
    40 us predicted; one batch's step 23 ms roof, 27 ms predicted``."""
    stage_s = ", ".join(seconds(t) for t in step.stage_s)
    predicted = ", ".join(seconds(t) for t in step.predicted_stage_s)
    slow, slow_p = step.slowest(), step.slowest(True)
    text = (f"stages {stage_s} roof ({predicted} predicted), the slowest stage {slow}"
            + (f" ({slow_p} predicted)" if slow_p != slow else ""))
    if step.handoffs:
        h = step.handoffs[0]
        gathered = (f", {si(h.sent, 'B')} a GPU, then all-gathered in the node"
                    if h.gathered else "")
        text += (f"; {count(len(step.handoffs), 'hand-off')} of {' + '.join(h.tensors)}, "
                 f"{si(h.nbytes, 'B')} each{gathered}: {seconds(step.transfer_s)} roof, "
                 f"{seconds(step.predicted_transfer_s)} predicted")
    return text + (f"; one batch's step {seconds(step.latency())} roof, "
                   f"{seconds(step.latency(True))} predicted")


def pipeline_line(report: Report) -> str | None:
    """What the pipeline adds and makes: each stage's time and the slowest, the hand-offs,
    one batch's step, and the tokens/s of the batches in flight; None without a pipeline."""
    pp = report.pipeline_parallel
    if pp is None:
        return None
    gpus = f"on the {pp.tp * pp.pp} GPUs"
    if pp.prefill is None:
        step = pp.step
        return (f"pipeline, in the step time above: {_step_text(step)}; {pp.in_flight} "
                f"batches in flight: a batch every {seconds(step.cycle())} roof, "
                f"{seconds(step.cycle(True))} predicted, {si(step.tokens_per_s(), '')}tokens/s "
                f"{gpus} roof, {si(step.tokens_per_s(True), '')}tokens/s predicted; memory: "
                f"stage {pp.stages.heaviest}'s, the most loaded ({PIPELINE_TEXT})")
    text = f"pipeline, in the generation's times below: prefill {_step_text(pp.prefill)}"
    if pp.decode is not None:
        text += f"; the last decode step {_step_text(pp.decode)}"
    return (text + f"; the generation's hand-offs {seconds(pp.generation_transfer() or 0.0)} "
            f"roof, {seconds(pp.generation_transfer(True) or 0.0)} predicted; tokens/s below "
            f"are {pp.in_flight} batches' in flight; memory: stage {pp.stages.heaviest}'s, the "
            f"most loaded ({PIPELINE_TEXT})")


def group_line(reports: Sequence[Report]) -> str | None:
    """compare's and sweep's header line where each device or point is served over a pipeline
    (``--pp``): ``pipeline-parallel over 2 stages of tp 8 (16 GPUs, 2 nodes of 8): every
    figure below is one GPU's of tp x pp, ...; <stages> (vLLM's split); hand-offs <links>
    (each device's own where they differ), exposed; tokens/s are the 16 GPUs' with 2 batches
    in flight``; None without a pipeline."""
    pp = reports[0].pipeline_parallel
    if pp is None:
        return None
    gpus = pp.tp * pp.pp
    links = {r.hardware.name: _links_text(r.pipeline_parallel) for r in reports
             if r.pipeline_parallel is not None}
    on = (next(iter(links.values())) if len(set(links.values())) == 1 else
          "on each device's own: " + "; ".join(f"{name} {text}" for name, text in links.items()))
    return (f"pipeline-parallel over {count(pp.pp, 'stage')} of tp {pp.tp} "
            f"({count(gpus, 'GPU')}, {count(pp.nodes, 'node')} of {pp.fabric.gpus_per_node}): "
            f"every figure below is one GPU's of tp x pp, its memory and fits the most loaded "
            f"stage's with the KV cache of the {pp.in_flight} batches in flight, its step time "
            f"one batch's through every stage, the hand-offs included; {_stages_text(pp)} "
            f"({_split_text(pp)}); hand-offs {on}, exposed; tokens/s are the {gpus} GPUs' with "
            f"{pp.in_flight} batches in flight, a batch every max(its latency, "
            f"{pp.pp} x the slowest stage)")


def _links_text(pp: PipelineParallel) -> str:
    """``between nodes on InfiniBand NDR 4x (50 GB/s, 14 us a step)``: where the hand-offs
    go (``header_line``'s words)."""
    links = sorted({h.crosses_nodes for h in pp.step.handoffs})
    return "; ".join(("between nodes on " + _link(pp.fabric.inter)) if across else
                     ("inside a node on " + _link(pp.fabric.intra)) for across in links)


def device_lines(reports: Sequence[Report]) -> list[str]:
    """compare's lines under its device table: each device's pipeline, in its step time (of
    generations, its generation's times): its stages, the hand-offs, and what its batches in
    flight make; then how they are worked out (``PIPELINE_TEXT``); none without a pipeline."""
    lines = []
    for r in reports:
        pp = r.pipeline_parallel
        if pp is None:
            continue
        gpus = f"on the {pp.tp * pp.pp} GPUs"
        if pp.prefill is None:
            step = pp.step
            lines.append(
                f"pipeline on {r.hardware.name}, in its step time: {_step_text(step)}; "
                f"{pp.in_flight} batches in flight: a batch every {seconds(step.cycle())} "
                f"roof, {seconds(step.cycle(True))} predicted, "
                f"{si(step.tokens_per_s(), '')}tokens/s {gpus} roof, "
                f"{si(step.tokens_per_s(True), '')}tokens/s predicted; memory: stage "
                f"{pp.stages.heaviest}'s")
            continue
        text = (f"pipeline on {r.hardware.name}, in its generation's times: prefill "
                f"{_step_text(pp.prefill)}")
        if pp.decode is not None:
            text += f"; the last decode step {_step_text(pp.decode)}"
        lines.append(text + f"; the generation's hand-offs "
                            f"{seconds(pp.generation_transfer() or 0.0)} roof, "
                            f"{seconds(pp.generation_transfer(True) or 0.0)} predicted; "
                            f"memory: stage {pp.stages.heaviest}'s")
    return lines + [f"({PIPELINE_TEXT})"] if lines else []
