"""The lines above compare's and sweep's tables: what the step is, its precision, what each
column is and on what basis, the memory each device or point is held against (sweep's largest
batch or seq that fits, and the chart's label for those that do not), notes and warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..analysis.predict import predicts
from . import generations
from .advice import past_context_text, whatif_warnings
from .hardware import capacity_text
from .precision import precision_text
from .report import (
    optimizer_states_text,
    peak_text,
    prefill_limit_text,
    quantization_line,
    recompute_setting,
    ridge_text,
    step_text,
    whole_generation_text,
)
from .serving_pp import group_line as pipeline_line
from .serving_tp import group_line, where_text
from .times import basis_sentence, parts_text, step_roof_text
from .whatif_verdict import _capacity

#: What sweep's ``tp comm`` column is (``--tp``): each point's exposed communication.
TP_COMM_TEXT = ("the all-reduces and the logits' gather, predicted (vLLM's custom all-reduce, "
                "else NCCL's ring), inside the times")
#: What sweep's ``pp comm`` column is (``--pp``): each point's hand-offs between stages.
PP_COMM_TEXT = ("the hand-offs between the pipeline's stages, predicted (each tensor's "
                "latency too), inside the times")

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.whatif_comparison import Comparison
    from ..analysis.whatif_sweep import Sweep


def dtype_note(c: Comparison, report: Report) -> str | None:
    """Why a device runs another dtype than the model's, or None."""
    if not c.substituted(report):
        return None
    return (f"{report.hardware.name} has no {c.requested_dtype} peak: runs "
            f"{report.dtype}, the nearest it has")


def _compare_header(c: Comparison) -> list[str]:
    net = c.baseline.network
    origins = ", ".join(sorted({r.hardware.origin for r in c.reports}))
    # the model's precision, from a device that runs it (the baseline may run another dtype)
    model = next((r for r in c.reports if not c.substituted(r)), c.baseline).network
    other = any(c.substituted(r) for r in c.reports)
    g = c.baseline.generation
    step = (step_text(net) if g is None else
            f"{net.mode}, a whole generation at batch {net.batch}")
    lines = [f"{net.name}: {step}; baseline {c.baseline.hardware.name}",
             "precision"
             + (" (the model's; a device without its dtype runs the nearest, as noted)"
                if other else "") + f": {precision_text(model)}",
             f"step time: {step_roof_text(c.baseline)}, at each entry's peak and bandwidth "
             f"({origins}); "
             f"predicted: each device's own basis (the verdict names it)"]
    if group := group_line(c.reports):
        lines.append(group)
    if pipeline := pipeline_line(c.reports):
        lines.append(pipeline)
    if g is not None:
        lines += [generations.terms_line(g, where_text(c.baseline)),
                  f"the step and GEMM tables: {generations.step_shown(c.baseline)}"]
    if c.baseline.quantization:
        lines.append(quantization_line(False, [r.hardware for r in c.reports]))
    held = [f"{r.hardware.name} {_capacity(r)}" for r in c.reports
            if r.memory is not None and r.memory.capacity_bytes is not None]
    if held:
        lines.append("memory" + peak_text(c.baseline) + " against: " + ", ".join(held))
    if left := optimizer_states_text(net):  # the same parameters on every device
        lines.append(f"memory: not counted: {left}")
    notes = (dtype_note(c, r) for r in c.reports)
    return (lines + [f"note: {note}" for note in notes if note]
            + [f"warning: {text}" for text in compare_warnings(c)])


def compare_warnings(c: Comparison) -> tuple[str, ...]:
    """compare's warnings: the model's and each device entry's (``advice.whatif_warnings``)."""
    return whatif_warnings(c.baseline.network, (r.hardware for r in c.reports))


# --------------------------------------------------------------------------------------- sweep

def fit_text(max_batch: int | None, seq: int | None, generation: bool = False) -> str | None:
    """The largest batch that fits in memory (with ``generation``, whose whole generation
    does: ``report.whole_generation_text``), in words (None: no capacity stated)."""
    if max_batch is None:
        return None
    if generation:
        return whole_generation_text(max_batch)
    at = f" at seq {seq}" if seq is not None else ""
    return (f"batch <= {max_batch} fits in memory{at}" if max_batch else
            f"no batch fits in memory{at}")


def seq_fit_text(max_seq: int | None, batch: int | None, context: bool = False) -> str | None:
    """The largest seq that fits in memory at a batch, in words (None: not known);
    ``context``: the model's context is the limit, memory would allow more."""
    if max_seq is None:
        return None
    if context:
        return f"every seq up to the model's context ({max_seq}) fits in memory at batch {batch}"
    return (f"seq <= {max_seq} fits in memory at batch {batch}" if max_seq else
            f"no seq fits in memory at batch {batch}")


def no_fit_label(limit: int, axis: str = "batch", context: bool = False,
                 generation: bool = False) -> str:
    """A sweep chart's label for the batches (or seqs) whose step (with ``generation``, whose
    whole generation) does not fit in memory, or (``context``) the seqs past the model's
    context, the memory limit lying beyond it; where none fits (``limit`` 0), it says so (not
    ``batch > 0``, as if batch 0 did)."""
    if context:
        return f"past the model's context (seq > {limit})"
    what = "the generation does not fit" if generation else "does not fit"
    if not limit:
        return f"{what} in memory (no {axis} fits)"
    return f"{what} in memory ({axis} > {limit})"


def sweep_header(s: Sweep) -> list[str]:
    if s.generating:
        return _generation_header(s)
    first = s.reports[0]
    net = first.network
    what = {"batch": "batch sweep", "seq": f"seq sweep at batch {net.batch}"}[s.axis]
    lines = [f"{net.name} on {s.hardware.name}: {first.dtype}, {net.mode}"
             + (f", {net.step_phase}" if net.seq is not None and net.step_phase != net.mode
                else "")
             + (f", {again}" if (again := recompute_setting(net)) else "")
             + f" ({'batch x seq grid' if s.grid else what})",
             f"precision: {precision_text(net)}",
             ridge_text(first),
             f"step time, {s.unit}/s: {step_roof_text(first)}; memory-bound time: its share "
             f"in memory-bound {parts_text(first, 'ops')}"
             + (("; a decode step makes one token a sequence" if net.step_phase == "decode"
                 else "; tokens/s: batch x seq tokens a step") if s.unit == "tokens" else ""),
             basis_sentence(s.hardware) + f" (the predicted column: {parts_text(first, 'ops')})"]
    if group := group_line(s.reports):
        lines.append(f"{group}; tp comm: {TP_COMM_TEXT}, of each step")
    if pipeline := pipeline_line(s.reports):
        lines.append(f"{pipeline}; pp comm: {PP_COMM_TEXT}, of each step")
    if first.quantization:
        lines.append(quantization_line(False, [s.hardware]))
    capacity = first.memory.capacity_bytes if first.memory else None
    at_context = first.memory is not None and first.memory.seq_limit == "context"
    fit = (seq_fit_text(s.max_seq, net.batch, at_context) if s.axis == "seq" else
           fit_text(s.max_batch, net.seq))
    if fit is not None and capacity is not None:
        larger = "longer sequences" if s.axis == "seq" else "larger batches"
        # past the context the limit is the model's, not memory's: a row says its own fit
        limit = s.max_seq if s.axis == "seq" else s.max_batch
        marked = ("every row is marked 'does not fit'" if limit == 0 else
                  "a row whose step does not fit is marked 'does not fit'" if at_context and
                  s.axis == "seq" else f"{larger} are marked 'does not fit'")
        basis = first.memory.capacity_basis if first.memory else None
        left = optimizer_states_text(net)
        lines.append(f"memory: {fit} ({capacity_text(capacity, basis)})"
                     + (f"; not counted: {left}" if left else "") + f"; {marked}"
                     + ("; each row says whether its step fits" if s.grid else ""))
    lines += [f"note: {text}" for text in past_context_note(s)]
    return lines + [f"warning: {text}" for text in sweep_warnings(s)]


def _generation_header(s: Sweep) -> list[str]:
    """``sweep_header`` of generations: what each column is, which step the step columns
    are, and the batch the whole generation fits."""
    first = s.reports[0]
    net, g = first.network, first.generation
    assert g is not None
    lines = [f"{net.name} on {s.hardware.name}: {first.dtype}, {net.mode}, a whole generation "
             f"at each batch (batch sweep)",
             f"precision: {precision_text(net)}", ridge_text(first),
             *([f"{group}; tp comm: {TP_COMM_TEXT}, of the whole generation"]
               if (group := group_line(s.reports)) else []),
             *([f"{pipeline}; pp comm: {PP_COMM_TEXT}, of the whole generation"]
               if (pipeline := pipeline_line(s.reports)) else []),
             generations.terms_line(g, where_text(first)),
             f"memory-bound time (its share in memory-bound GEMMs and ops), the compute-bound "
             f"batches and the step's verdict: {generations.step_shown(first)}",
             basis_sentence(s.hardware) + (" (the predicted columns: GEMMs and ops)"
                                           if predicts(s.hardware) else
                                           " (so no predicted columns)")]
    if first.quantization:
        lines.append(quantization_line(False, [s.hardware]))
    memory = first.memory
    if memory is not None and memory.capacity_bytes is not None and s.max_batch is not None:
        marked = ("every row is marked 'does not fit'" if s.max_batch == 0 else
                  "larger batches are marked 'does not fit'")
        lines.append(f"memory{peak_text(first)}: {fit_text(s.max_batch, None, True)} "
                     f"({capacity_text(memory.capacity_bytes, memory.capacity_basis)})"
                     f"{prefill_limit_text(g.decode_max_batch)}; {marked}")
    return lines + [f"warning: {text}" for text in sweep_warnings(s)]


def past_context_note(s: Sweep) -> list[str]:
    """The sentence naming every swept seq past the model's context, if any: the text's and
    HTML's note, and one of the JSON's ``warnings`` (as analyze's and compare's JSON carry
    theirs; before 0.9.0 the sweep JSON had none, its points past the context reading
    ``fits: true``)."""
    context = s.reports[0].network.context
    past = [seq for seq in s.seqs if context is not None and seq > context]
    if s.generating or not past or context is None:
        return []
    return [past_context_text(past, context)]


def sweep_warnings(s: Sweep) -> tuple[str, ...]:
    """sweep's warnings: the model's, but its seq past the context, which a note names with
    every swept seq past it, and its device entry's (``advice.whatif_warnings``)."""
    return whatif_warnings(s.reports[0].network, [s.hardware], context=False)
