"""``roofline plan --format csv``: one row per fitting layout per GPU count, fastest predicted
first within a count (every one, or ``--top`` of them, as the JSON lists them), each row's
figures read from the dict the JSON writes (``Plan.layout_dict``), so that they are the JSON's
to the last bit (``csv.writer`` writes a float as its repr, as ``json`` does).

The columns, raw numbers in SI units, each unit in its name: the step's ``hardware``,
``batch`` and ``seq`` (empty without one); the layout's knobs (``gpus``, ``tp``, ``pp``,
``vp``, ``dp``, ``ep``, ``zero``, ``micro_batch``, ``sequence_parallel``) and the
micro-batches a data-parallel rank runs; ``rank`` (1 the fastest predicted at its GPU count:
the best there) and ``front`` (on the Pareto front); the predicted step, its bound,
throughput, recomputation and parts; the roofline's the same (with ``step_no_overlap_s`` and
the throughput per GPU, which the JSON gives for the roofline only); the bubble's share, one
tensor-parallel all-reduce's bytes and the duplicated gradients' a step (the most a stage
all-reduces); memory per GPU by part, its total, the capacity and
whether it fits; the blocks each pipeline GPU runs and the layers every tensor-parallel GPU
holds whole, each list joined with ``; ``. Throughput is ``tokens_per_s`` for a model with a
sequence and ``samples_per_s`` for one without (the JSON's ``tokens_per_s`` counts a sample
as a token). Plan computes no MFU: no column. A GPU count where no layout fits has no row;
``csv_notes`` says which and why, for the CLI's stderr."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from ..units import count
from .plan import plan_warnings, shortfall_text

if TYPE_CHECKING:
    from ..analysis.plan import Plan

#: The knobs of a layout (``Layout.to_dict``'s keys) and the micro-batches it runs.
KNOBS = ("gpus", "tp", "pp", "vp", "dp", "ep", "zero", "micro_batch", "sequence_parallel",
         "micro_batches")
#: The parts of a step (``LayoutResult.parts``' keys), each a column of the predicted step
#: (``predicted_compute_s``, ...) and of the roofline's (``compute_s``, ...).
PARTS = ("compute_s", "tp_comm_s", "ep_comm_s", "p2p_s", "bubble_s", "dp_comm_exposed_s",
         "dp_comm_overlapped_s", "tp_grad_allreduce_s", "optimizer_s")
#: Memory per GPU by part (``parallel_memory``'s keys), each ``memory_<part>_bytes``.
MEMORY = ("weights", "gradients", "optimizer", "activations", "workspace")


def csv_header(plan: Plan) -> list[str]:
    """The columns (module docstring); the throughput's by the model's unit."""
    rate = "tokens" if plan.network.seq else "samples"
    return ["hardware", "batch", "seq", *KNOBS, "rank", "front",
            "predicted_step_s", "predicted_bound", f"predicted_{rate}_per_s",
            "predicted_recompute_s", *(f"predicted_{part}" for part in PARTS),
            "step_s", "step_no_overlap_s", "bound", f"{rate}_per_s", f"{rate}_per_s_per_gpu",
            "recompute_s", *PARTS, "bubble_fraction", "tp_allreduce_bytes",
            "tp_grad_allreduce_bytes", *(f"memory_{part}_bytes" for part in MEMORY),
            "memory_total_bytes", "memory_capacity_bytes", "fits", "stage_blocks",
            "replicated_layers"]


def _cells(data: dict[str, Any], rank: int, front: bool) -> list[Any]:
    """One layout's JSON dict as ``csv_header``'s cells after the step's own three."""
    predicted, parts, memory = data["predicted_parts"], data["parts"], data["memory"]
    return [*(data[key] for key in KNOBS), rank, front,
            data["predicted_step_s"], data["predicted_bound"], data["predicted_tokens_per_s"],
            data["predicted_recompute_s"], *(predicted[part] for part in PARTS),
            data["step_s"], data["step_no_overlap_s"], data["bound"], data["tokens_per_s"],
            data["tokens_per_s_per_gpu"], data["recompute_s"], *(parts[part] for part in PARTS),
            data["bubble_fraction"], data["tp_allreduce_bytes"], data["tp_grad_allreduce_bytes"],
            *(memory[part] for part in MEMORY), memory["total_bytes"],
            memory["capacity_bytes"], memory["fits"],
            "; ".join(map(str, data["stage_blocks"])), "; ".join(data["replicated_layers"])]


def plan_csv(plan: Plan, top: int | None = None) -> str:
    """A header, then per GPU count its fitting layouts fastest predicted first (``top`` of
    them; all without), one row each (module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(csv_header(plan))
    step = [plan.hardware.name, plan.batch, "" if plan.network.seq is None else plan.network.seq]
    front = {id(r) for r in plan.front}
    for n in plan.gpus:
        for rank, r in enumerate(plan.ranked(n)[:top], 1):
            writer.writerow([*step, *_cells(plan.layout_dict(r), rank, id(r) in front)])
    return buffer.getvalue()


def csv_notes(plan: Plan, top: int | None = None) -> list[str]:
    """What the CSV leaves out, and the plan's warnings, as lines for stderr (stdout stays
    CSV): each GPU count without a row and why (``shortfall_text``), the fitting layouts past
    ``top``, and the model's and the entry's warnings (the JSON's ``warnings``)."""
    lines = [f"no csv row for {text}" for n in plan.gpus if (text := shortfall_text(plan, n))]
    if top is not None:
        past = sum(max(0, len(plan.ranked(n)) - top) for n in plan.gpus)
        if past:
            lines.append(f"left out of the csv: {count(past, 'fitting layout')} past --top "
                         f"{top} (every one without --top)")
    return lines + [f"warning: {text}" for text in plan_warnings(plan)]
