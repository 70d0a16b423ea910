"""``roofline plan`` as text, Markdown and JSON (its CSV: ``output.plan_csv``): the header
(model, device, batch, links, assumptions), the fastest fitting layouts at each GPU count, the
Pareto front, and the best layout's details. The pieces are shared with the HTML page
(``output.html.plan``): each line and cell is made once here, so every format says the same."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..analysis.parallel_result import exposed_comm_s
from ..units import count, seconds, si
from .advice import whatif_warnings
from .hardware import capacity_text
from .json import to_json
from .report import PART_NAMES
from .scaling import link_text, step_latency
from .table import aligned, markdown, markdown_text
from .times import basis_sentence

if TYPE_CHECKING:
    from ..analysis.parallel import LayoutResult
    from ..analysis.plan import Plan

#: A cell: its text and the raw figure it shows (None for a word), which the HTML page sorts
#: by and the JSON holds.
FigureCell = tuple[str, "float | None"]


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:.1f}"


def rate_unit(plan: Plan) -> str:
    """Throughput's unit: tokens, or samples for a model without a sequence (its JSON
    ``tokens_per_s`` counts a sample as one token)."""
    return "tok/s" if plan.network.seq else "samples/s"


def layout_cells(r: LayoutResult, unit: str, vp: bool = False) -> list[FigureCell]:
    """One layout: its predicted step and the parts of it, the roofline step beside it (its
    vp after pp where ``vp``: a plan with interleaved layouts); each cell with its figure."""
    lay, p = r.layout, r.predicted
    parts = p.parts
    comm = exposed_comm_s(parts)
    ints = [lay.gpus, lay.tp, lay.pp, *([lay.vp] if vp else []), lay.dp, lay.ep, lay.zero,
            lay.micro_batch, r.micro_batches]
    return [*((str(n), float(n)) for n in ints),
            ("yes" if lay.sequence_parallel and lay.tp > 1 else "no", None),
            (seconds(p.step_s), p.step_s), (seconds(r.step_s), r.step_s),
            (seconds(parts["compute_s"]), parts["compute_s"]), (seconds(comm), comm),
            (seconds(parts["dp_comm_overlapped_s"]), parts["dp_comm_overlapped_s"]),
            (f"{r.bubble_fraction:.0%}", r.bubble_fraction),
            (_gb(r.memory_bytes), float(r.memory_bytes)),
            (si(p.tokens_per_s, unit), p.tokens_per_s), (p.bound, None)]


def _row(r: LayoutResult, unit: str, vp: bool = False) -> list[str]:
    """``layout_cells``' texts."""
    return [text for text, _ in layout_cells(r, unit, vp)]


HEADER = ["gpus", "tp", "pp", "dp", "ep", "zero", "mb", "m", "sp", "predicted", "roofline",
          "compute", "comm exposed", "comm hidden", "bubble", "mem GB", "throughput", "bound"]
#: The columns of text: ``sp`` and ``bound`` (the last).
TEXT_COLUMNS = ("sp", "bound")


def interleaves(plan: Plan) -> bool:
    """Whether some layout interleaves (vp > 1): its tables then have a vp column."""
    return any(r.layout.vp > 1 for r in plan.results)


def layout_header(plan: Plan) -> list[str]:
    """The layout table's columns: ``HEADER``, vp after pp where a layout interleaves."""
    return [*HEADER[:3], "vp", *HEADER[3:]] if interleaves(plan) else HEADER


def step_settings(plan: Plan) -> str:
    """The step every layout runs, in words: ``global batch 1024 x seq 8192, bf16, optimizer
    adam, recompute none, attention flash`` (no seq for a model without one); the table's
    header and the chart's title."""
    from ..analysis.plan import attention_form

    net = plan.network
    per = f" x seq {net.seq}" if net.seq else ""
    attention = attention_form(net)
    act = net.activation_dtype
    dtype = net.operand_dtype + (f" (weight GEMMs {act}, the LM head's and routers' "
                                 f"{net.operand_dtype})" if act != net.operand_dtype else "")
    return (f"global batch {plan.batch}{per}, {dtype}, optimizer {net.optimizer}, "
            f"recompute {net.recompute}" + (f", attention {attention}" if attention else ""))


def title_line(plan: Plan) -> str:
    """``model: ...   hardware: ...   training step: ...``, the table's first line."""
    return (f"model: {plan.network.name}   hardware: {plan.hardware.name}   training step: "
            f"{step_settings(plan)}")


def links_text(plan: Plan) -> str:
    """The links the collectives run on, inside a node and between nodes."""
    fabric = plan.fabric
    return (f"inside a node ({count(fabric.gpus_per_node, 'GPU')}) "
            + link_text(fabric.intra.label, fabric.intra.bandwidth_gbs, " per direction",
                        step_latency(fabric.intra.latency_us))
            + "; between nodes "
            + link_text(fabric.inter.label, fabric.inter.bandwidth_gbs,
                        " per direction per GPU", step_latency(fabric.inter.latency_us)))


def capacity_line(plan: Plan) -> str:
    """What a GPU's memory is checked against, and what that figure rests on."""
    hw = plan.hardware
    capacity = hw.memory_capacity_bytes
    return "memory per GPU against " + (capacity_text(capacity, hw.memory_capacity_basis)
                                        if capacity else "no stated capacity")


def plan_warnings(plan: Plan) -> tuple[str, ...]:
    """The model's and the entry's warnings (``advice.whatif_warnings``)."""
    return tuple(whatif_warnings(plan.network, [plan.hardware]))


def header_lines(plan: Plan) -> list[str]:
    """The lines above the tables: the step, the links, memory, what is assumed and left out,
    the prediction's basis, the warnings."""
    return [title_line(plan), f"links: {links_text(plan)}", capacity_line(plan),
            *(f"assumes: {text}" for text in plan.assumptions),
            *(f"left out: {text}" for text in plan.left_out),
            basis_sentence(plan.hardware), *(f"warning: {text}" for text in plan_warnings(plan))]


def layouts_title(plan: Plan, top: int) -> str:
    """What the layout table holds and what its columns are parts of (no colon)."""
    again = (", the forward recomputation runs again in compute"
             if plan.network.recompute != "none" else "")
    return (f"fastest layouts that fit (up to {top} per GPU count; compute, comm and bubble: "
            f"parts of the predicted step{again})")


def shortfall_text(plan: Plan, n: int) -> str | None:
    """Why ``n`` GPUs have no row: none of the layouts tried fits (and what the smallest
    needs), or none divides the batch; None where one fits."""
    if plan.ranked(n):
        return None
    short = plan.shortfall(n)
    if short:
        considered = sum(1 for r in plan.results if r.layout.gpus == n)
        return (f"{count(n, 'GPU')}: none of {considered} layouts fits (the smallest needs "
                f"{_gb(short['least_bytes'])} GB; without activations, at least "
                f"{_gb(short['least_without_activations_bytes'])} GB)")
    return f"{count(n, 'GPU')}: no layout divides the batch"


def stage_lines(plan: Plan, top: int) -> list[str]:
    """The depths among the layouts shown that split the blocks unevenly, stages or chunks."""
    from ..analysis.parallel import blocks_of

    blocks = len(blocks_of(plan.network))
    shown = [r.layout for n in plan.gpus for r in plan.ranked(n)[:top]]
    lines = []
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
    return lines


def notes_lines(plan: Plan, top: int) -> list[str]:
    """The lines under the layout table: uneven stages, the counts without a row and why,
    what else would fit (``fit_hints``)."""
    skipped = [text for n in plan.gpus if (text := shortfall_text(plan, n))]
    return [*stage_lines(plan, top), *skipped, *fit_hints(plan)]


FRONT_TITLE = "Pareto front (predicted step time against GPUs; efficiency against the smallest)"
FRONT_HEADER = ["gpus", "layout", "predicted", "roofline", "throughput", "efficiency", "bound"]


def front_cells(plan: Plan) -> list[list[FigureCell]]:
    """A row per layout on the front: GPUs, layout, predicted and roofline step, predicted
    throughput, efficiency against the smallest count's and what bounds it."""
    front, unit = plan.front, rate_unit(plan)
    if not front:
        return []
    base = front[0]
    return [[(str(r.layout.gpus), float(r.layout.gpus)), (r.layout.label, None),
             (seconds(r.predicted_step_s), r.predicted_step_s), (seconds(r.step_s), r.step_s),
             (si(r.predicted.tokens_per_s, unit), r.predicted.tokens_per_s),
             (f"{_efficiency(base, r):.0%}", _efficiency(base, r)), (r.predicted.bound, None)]
            for r in front]


#: The chart's words, the PNG's (``plot.plan``) and the page's (``output.html.plan``) alike:
#: its y axis and the key's lines.
STEP_AXIS = "predicted step time per global batch"
FRONT_KEY = "Pareto front (best, predicted)"
FRONT_ROOF_KEY = "the front's roofline (lower bound)"
IDEAL_KEY = "linear scaling from the first"


def bound_key(bound: str) -> str:
    """The key's name of the layouts a part bounds: ``a layout, compute-bound``."""
    return f"a layout, {bound}-bound"


def gpus_axis(plan: Plan) -> str:
    """The chart's x axis: ``GPUs``, and the counts asked for where no layout fits (no point
    there: said, not left off unsaid)."""
    drawn = {r.layout.gpus for r in plan.fitting}
    empty = [n for n in plan.gpus if n not in drawn]
    shown = ", ".join(str(n) for n in empty[:6]) + (", ..." if len(empty) > 6 else "")
    return "GPUs" + (f" (no layout fits in memory at {shown})" if empty else "")


def plan_table(plan: Plan, top: int = 3) -> str:
    """The header, the ``top`` fastest fitting layouts at each count, the front, the best."""
    from ..analysis.parallel import blocks_of

    unit, vp = rate_unit(plan), interleaves(plan)
    lines = header_lines(plan)
    rows = [_row(r, unit, vp) for n in plan.gpus for r in plan.ranked(n)[:top]]
    lines += ["", f"{layouts_title(plan, top)}:"]
    header = layout_header(plan)
    lines += aligned(header, rows, {len(header) - 1}) if rows else ["none fits"]
    lines += notes_lines(plan, top)
    front = front_cells(plan)
    if front:
        lines += ["", f"{FRONT_TITLE}:"]
        lines += aligned(FRONT_HEADER, [[text for text, _ in row] for row in front], {1, 6})
        lines += ["", *best_lines(plan.front[-1], len(blocks_of(plan.network)))]
    return "\n".join(lines) + "\n"


def plan_markdown(plan: Plan, top: int = 3) -> str:
    """``plan_table`` as Markdown: the header's lines (what is assumed, left out and warned of
    as bullets), each table a pipe table under a heading, the best layout's details as
    bullets; every sentence escaped (``table.markdown_text``)."""
    return "".join(f"{line}\n" for line in _markdown_lines(plan, top))


def _markdown_lines(plan: Plan, top: int) -> Iterator[str]:
    from ..analysis.parallel import blocks_of

    def bullets(prefix: str, texts: tuple[str, ...] | list[str]) -> list[str]:
        return [f"- {markdown_text(f'{prefix}: {text}')}" for text in texts]

    def heading(text: str) -> str:
        return f"## {markdown_text(text[0].upper() + text[1:])}"

    def lines(texts: list[str]) -> list[str]:  # one paragraph, a hard break after each line
        return ["  \n".join(map(markdown_text, texts)), ""] if texts else []

    unit, vp = rate_unit(plan), interleaves(plan)
    yield from lines([title_line(plan), f"links: {links_text(plan)}", capacity_line(plan)])
    yield from [*bullets("assumes", plan.assumptions), *bullets("left out", plan.left_out), ""]
    yield from lines([basis_sentence(plan.hardware)])
    if warned := plan_warnings(plan):
        yield from [*bullets("warning", warned), ""]
    yield heading(layouts_title(plan, top))
    yield ""
    rows = [_row(r, unit, vp) for n in plan.gpus for r in plan.ranked(n)[:top]]
    header = layout_header(plan)
    yield from [*markdown(header, rows, {header.index("sp"), len(header) - 1}), ""] if rows \
        else ["none fits", ""]
    yield from lines(notes_lines(plan, top))
    front = front_cells(plan)
    if front:
        yield heading(FRONT_TITLE)
        yield ""
        yield from markdown(FRONT_HEADER, [[text for text, _ in row] for row in front], {1, 6})
        best = best_lines(plan.front[-1], len(blocks_of(plan.network)))
        yield from ["", heading(best[0].partition(":")[0]), "", markdown_text(best[0]), "",
                    *(f"- {markdown_text(line.strip())}" for line in best[1:])]


def fit_hints(plan: Plan) -> list[str]:
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
    if r.tp_grad_bytes:
        held = ("norms, routers, latent down projections, row-parallel biases: each GPU runs "
                "them on its T / tp tokens" if lay.sequence_parallel
                else "the query and key norms: each GPU normalizes its own heads")
        out.append(f"  tensor parallel, once a step: the gradients of the parameters every GPU "
                   f"of the group holds whole ({held}) all-reduced after the data-parallel "
                   f"reduce, exposed: {si(r.tp_grad_bytes, 'B')} (the largest stage's)")
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
    return to_json(plan.to_dict(top) | {"warnings": list(plan_warnings(plan))}) + "\n"


def plan_html(plan: Plan, top: int = 3, command: str | None = None) -> str:
    """The self-contained HTML page (``output.html.plan_page``)."""
    from .html import plan_page

    return plan_page(plan, top, command)


def plan_csv(plan: Plan, top: int | None = None) -> str:
    """A row per fitting layout per GPU count, the JSON's figures (``output.plan_csv``)."""
    from .plan_csv import plan_csv as rows

    return rows(plan, top)


#: plan's ``--format`` renderers, each of a Plan and the layouts shown per count (``--top``;
#: JSON's and CSV's all that fit unless given); the CLI's choices are
#: ``cli.options.PLAN_FORMATS``.
PLAN_FORMATS: dict[str, Callable[..., str]] = {
    "table": plan_table, "json": plan_json, "csv": plan_csv, "markdown": plan_markdown,
    "html": plan_html}
