"""``roofline plan`` as text: the header (model, device, batch, links, assumptions), the fastest
fitting layouts at each GPU count, the Pareto front, and the best layout's details; JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import count, seconds, si
from .advice import whatif_warnings
from .hardware import capacity_text
from .json import to_json
from .report import PART_NAMES
from .scaling import link_text, step_latency
from .table import aligned
from .times import basis_sentence

if TYPE_CHECKING:
    from ..analysis.parallel import LayoutResult
    from ..analysis.plan import Plan


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:.1f}"


def _rate_unit(plan: Plan) -> str:
    """Throughput's unit: tokens, or samples for a model without a sequence (its JSON
    ``tokens_per_s`` counts a sample as one token)."""
    return "tok/s" if plan.network.seq else "samples/s"


def _row(r: LayoutResult, unit: str, vp: bool = False) -> list[str]:
    """One layout: its predicted step and the parts of it, the roofline step beside it (its
    vp after pp where ``vp``: a plan with interleaved layouts)."""
    lay, p = r.layout, r.predicted
    parts = p.parts
    comm = (parts["tp_comm_s"] + parts["ep_comm_s"] + parts["p2p_s"]
            + parts["dp_comm_exposed_s"])
    return [str(lay.gpus), str(lay.tp), str(lay.pp), *([str(lay.vp)] if vp else []),
            str(lay.dp), str(lay.ep), str(lay.zero),
            str(lay.micro_batch), str(r.micro_batches),
            "yes" if lay.sequence_parallel and lay.tp > 1 else "no", seconds(p.step_s),
            seconds(r.step_s), seconds(parts["compute_s"]), seconds(comm),
            seconds(parts["dp_comm_overlapped_s"]), f"{r.bubble_fraction:.0%}",
            _gb(r.memory_bytes), si(p.tokens_per_s, unit), p.bound]


HEADER = ["gpus", "tp", "pp", "dp", "ep", "zero", "mb", "m", "sp", "predicted", "roofline",
          "compute", "comm exposed", "comm hidden", "bubble", "mem GB", "throughput", "bound"]


def step_settings(plan: Plan) -> str:
    """The step every layout runs, in words: ``global batch 1024 x seq 8192, bf16, optimizer
    adam, recompute none, attention flash`` (no seq for a model without one); the table's
    header and the chart's title."""
    from ..analysis.plan import attention_form

    net = plan.network
    per = f" x seq {net.seq}" if net.seq else ""
    attention = attention_form(net)
    return (f"global batch {plan.batch}{per}, {net.operand_dtype}, optimizer {net.optimizer}, "
            f"recompute {net.recompute}" + (f", attention {attention}" if attention else ""))


def plan_table(plan: Plan, top: int = 3) -> str:
    """The header, the ``top`` fastest fitting layouts at each count, the front, the best."""
    from ..analysis.parallel import blocks_of

    net, hw, fabric = plan.network, plan.hardware, plan.fabric
    capacity = hw.memory_capacity_bytes
    unit = _rate_unit(plan)
    lines = [f"model: {net.name}   hardware: {hw.name}   training step: {step_settings(plan)}",
             f"links: inside a node ({count(fabric.gpus_per_node, 'GPU')}) "
             + link_text(fabric.intra.label, fabric.intra.bandwidth_gbs, " per direction",
                         step_latency(fabric.intra.latency_us))
             + "; between nodes "
             + link_text(fabric.inter.label, fabric.inter.bandwidth_gbs,
                         " per direction per GPU", step_latency(fabric.inter.latency_us)),
             "memory per GPU against " + (capacity_text(capacity, hw.memory_capacity_basis)
                                          if capacity else "no stated capacity")]
    lines += [f"assumes: {text}" for text in plan.assumptions]
    lines += [f"left out: {text}" for text in plan.left_out]
    lines.append(basis_sentence(hw))
    lines += [f"warning: {text}" for text in whatif_warnings(net, [hw])]
    rows, skipped = [], []
    vp = any(r.layout.vp > 1 for r in plan.results)  # a vp column only where one interleaves
    for n in plan.gpus:
        ranked = plan.ranked(n)
        short = plan.shortfall(n)
        if short:
            considered = sum(1 for r in plan.results if r.layout.gpus == n)
            skipped.append(f"{count(n, 'GPU')}: none of {considered} layouts fits (the smallest "
                           f"needs {_gb(short['least_bytes'])} GB; without activations, at "
                           f"least {_gb(short['least_without_activations_bytes'])} GB)")
        elif not ranked:
            skipped.append(f"{count(n, 'GPU')}: no layout divides the batch")
        rows += [_row(r, unit, vp) for r in ranked[:top]]
    again = ", the forward recomputation runs again in compute" if net.recompute != "none" else ""
    lines += ["", f"fastest layouts that fit (up to {top} per GPU count; compute, comm and "
                  f"bubble: parts of the predicted step{again}):"]
    header = [*HEADER[:3], "vp", *HEADER[3:]] if vp else HEADER
    lines += aligned(header, rows, {len(header) - 1}) if rows else ["none fits"]
    blocks = len(blocks_of(net))
    shown = [r.layout for n in plan.gpus for r in plan.ranked(n)[:top]]
    uneven = sorted({lay.pp for lay in shown
                     if blocks and lay.pp > 1 and lay.vp == 1 and blocks % lay.pp})
    if uneven:
        lines.append(f"uneven stages: pp {', '.join(map(str, uneven))} split the model's "
                     f"{blocks} transformer blocks with the first stages one block more")
    chunked = sorted({(lay.pp, lay.vp) for lay in shown
                      if blocks and lay.vp > 1 and blocks % (lay.pp * lay.vp)})
    if chunked:
        lines.append(f"uneven chunks: {', '.join(f'pp {p} vp {v}' for p, v in chunked)} split "
                     f"the model's {blocks} transformer blocks into pp x vp chunks with the "
                     f"first chunks one block more")
    lines += skipped
    lines += _fit_hints(plan)
    front = plan.front
    if front:
        base = front[0]
        lines += ["", "Pareto front (predicted step time against GPUs; efficiency against the "
                      "smallest):"]
        front_rows = [[str(r.layout.gpus), r.layout.label, seconds(r.predicted_step_s),
                       seconds(r.step_s), si(r.predicted.tokens_per_s, unit),
                       f"{_efficiency(base, r):.0%}", r.predicted.bound] for r in front]
        lines += aligned(["gpus", "layout", "predicted", "roofline", "throughput",
                          "efficiency", "bound"], front_rows, {1, 6})
        lines += ["", *best_lines(front[-1], len(blocks_of(net)))]
    return "\n".join(lines) + "\n"


def _fit_hints(plan: Plan) -> list[str]:
    """Where a GPU count had no layout that fits, what else would keep less per GPU and was
    not tried: recomputation (its setting here), which lowers the activations only; where the
    weights, gradients, optimizer states and workspace alone outgrow every layout's GPU
    (``Plan.shortfall``), no recomputation fits it, and that is said instead. (Every pipeline
    no deeper than the blocks is tried, in uneven stages where it does not divide them.)"""
    capacity = plan.hardware.memory_capacity_bytes or 0
    shorts = {n: short for n in plan.gpus if (short := plan.shortfall(n))}
    states = [n for n, short in shorts.items()
              if short["least_without_activations_bytes"] > capacity]
    lines = []
    recompute = plan.network.recompute
    if len(states) < len(shorts) and recompute != "full":
        more = "selective or full" if recompute == "none" else "full"
        lines.append(f"to fit: --recompute {more} keeps fewer activations (recompute "
                     f"{recompute} here)")
    if states:
        least = min(shorts[n]["least_without_activations_bytes"] for n in states)
        lines.append(f"no recomputation fits {', '.join(map(str, states))} GPUs: the weights, "
                     f"gradients, optimizer states and workspace alone need {_gb(least)} GB a "
                     f"GPU or more, past the {_gb(capacity)} GB; more GPUs divide them further")
    return lines


def _stages_text(blocks: int, pp: int, vp: int = 1) -> str:
    """``16 stages of 8 transformer blocks each``, or uneven ``16 uneven stages (the first 14
    of 8 blocks, the other 2 of 7)`` (``parallel.stage_blocks``); ``16 stages`` for a model
    without blocks; interleaved, ``16 stages of 2 chunks (32 chunks of 4 transformer blocks
    each)``, the chunks as uneven stages are."""
    from ..analysis.parallel import stage_blocks

    if not blocks:
        return f"{pp} stages" + (f" of {vp} chunks" if vp > 1 else "")
    if vp > 1:
        sizes = stage_blocks(blocks, pp * vp)
        more = sum(1 for size in sizes if size == sizes[0])
        chunks = (f"{len(sizes)} chunks of {count(sizes[0], 'transformer block')} each"
                  if more == len(sizes) else
                  f"{len(sizes)} uneven chunks: the first {more} of {count(sizes[0], 'block')},"
                  f" the other {len(sizes) - more} of {sizes[-1]}")
        return f"{pp} stages of {vp} chunks ({chunks})"
    sizes = stage_blocks(blocks, pp)
    if len(set(sizes)) == 1:
        return f"{pp} stages of {count(sizes[0], 'transformer block')} each"
    more = sum(1 for size in sizes if size == sizes[0])
    return (f"{pp} uneven stages (the first {more} of {count(sizes[0], 'block')}, the other "
            f"{len(sizes) - more} of {sizes[-1]})")


def _efficiency(base: LayoutResult, r: LayoutResult) -> float:
    """GPU-seconds of the step on ``base`` over those on ``r`` (predicted times)."""
    return (base.predicted_step_s * base.layout.gpus) / (r.predicted_step_s * r.layout.gpus)


def best_lines(r: LayoutResult, blocks: int = 0) -> list[str]:
    """One layout in words: its predicted step by part (the roofline beside it),
    communication and memory."""
    lay, mem, p = r.layout, r.memory, r.predicted
    parts = p.parts
    out = [f"best on {count(lay.gpus, 'GPU')}: {lay.label}: {r.micro_batches} micro-batch"
           f"{'es' if r.micro_batches != 1 else ''} of "
           f"{lay.micro_batch} per data-parallel rank, step {seconds(p.step_s)} predicted "
           f"({seconds(p.step_no_overlap_s)} without overlap; roofline {seconds(r.step_s)}), "
           f"{p.bound}-bound",
           "  step = " + " + ".join(f"{key.removesuffix('_s').replace('_', ' ')} "
                                    f"{seconds(value)}" for key, value in parts.items()
                                    if value and key != "dp_comm_overlapped_s")
           + (f" (data-parallel {seconds(parts['dp_comm_overlapped_s'])} hidden)"
              if parts["dp_comm_overlapped_s"] else "")]
    again = r.report.network.recompute if r.report is not None else "none"
    if p.recompute_s:
        out.append(f"  recompute {again}: {seconds(p.recompute_s)} of the compute, the forward "
                   f"work run again in the backward passes (roofline "
                   f"{seconds(r.recompute_s)})")
    if lay.tp > 1:
        from ..analysis.parallel_comm import RECOMPUTED_TRANSFERS as more

        full = again == "full"  # the recomputed forward's transfers made again
        out.append(f"  tensor parallel: {4 + more if full else 4} all-reduces of "
                   f"{si(r.allreduce_bytes, 'B')} per block per micro-batch (2 forward, "
                   + (f"{more} again in the recomputed forward, " if full else "")
                   + "2 backward)"
                   + (" as reduce-scatter + all-gather (sequence parallel)"
                      if lay.sequence_parallel else ""))
    if lay.pp > 1 and lay.vp > 1:
        out.append(f"  pipeline: {_stages_text(blocks, lay.pp, lay.vp)}, interleaved: chunk c "
                   f"on GPU c mod {lay.pp}; bubble {r.bubble_fraction:.1%} = (p - 1) / (v m + "
                   f"p - 1) with m = {r.micro_batches}, v = {lay.vp}; point-to-point "
                   f"{seconds(p.parts['p2p_s'])}, a transfer at every chunk boundary")
    elif lay.pp > 1:
        out.append(f"  pipeline: {_stages_text(blocks, lay.pp)}, bubble "
                   f"{r.bubble_fraction:.1%} = (p - 1) / (m + p - 1) with m = {r.micro_batches}")
    # each part at three digits in its own unit: an MLP's 24.6 MB of weights read "0.0 GB"
    out.append("  memory per GPU: " + ", ".join(f"{PART_NAMES.get(key, key)} {si(value, 'B')}"
                                                 for key, value in mem.items() if value)
               + f"; {si(r.memory_bytes, 'B')} of "
               + (si(r.capacity_bytes, "B") if r.capacity_bytes else "?"))
    if r.replicated:
        out.append(f"  replicated on every tensor-parallel GPU: {', '.join(r.replicated)}")
    return out


def plan_json(plan: Plan, top: int | None = None) -> str:
    """``Plan.to_dict`` with the model's and the entry's warnings (``advice.whatif_warnings``)."""
    warnings = whatif_warnings(plan.network, [plan.hardware])
    return to_json(plan.to_dict(top) | {"warnings": list(warnings)}) + "\n"


def plan_fragment(plan: Plan, top: int = 3) -> str:
    """The plan's table (``plan_table``) as an HTML block for Jupyter (``Plan._repr_html_``):
    preformatted, as the shell shows it."""
    from html import escape

    return (f'<div class="roofline-plan"><pre style="font-size: 12px; line-height: 1.3">'
            f"{escape(plan_table(plan, top))}</pre></div>")
