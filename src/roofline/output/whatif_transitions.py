"""The batch (and, with a sequence, the seq) at which each GEMM of a sweep turns compute-bound,
grouped, each marked where it does not fit in memory (of a captured module, what the captures
show, those they do not grouped by why), and the whole step's verdict after them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.item_numbers import grouped_names
from . import generations
from .report import compact_names, step_line

if TYPE_CHECKING:
    from ..analysis.whatif_sweep import Sweep
    from ..model.item_numbers import Names


def _grouped(groups: dict[int | None, Names], unit: str, limit: int | None,
             never: str = "never") -> list[str]:
    """A line per group of GEMMs that turn compute-bound at one value (``Sweep.transition_groups``
    and the like), the smallest first, never last."""
    order = sorted(groups, key=lambda b: (b is None, b or 0))

    def mark(b: int | None) -> str:
        if b is None or limit is None or b <= limit:
            return ""
        return (f" (does not fit in memory: at most {unit} {limit})" if limit else
                f" (does not fit in memory: no {unit} fits)")

    return [f"  {never if b is None else f'{unit} >= {b}'}: {compact_names(groups[b], 8)}"
            f"{mark(b)}" for b in order]


def transition_lines(s: Sweep) -> list[str]:
    """The batch (and, for a model with a sequence, the seq) at which each GEMM turns
    compute-bound, each marked when it does not fit in memory."""
    first = s.reports[0].network
    lines: list[str] = []
    if s.grid:
        limits = s.max_batch_by_seq()
        for seq, transitions in s.transition_groups_by_seq().items():
            lines += [f"compute-bound from (closed form, any batch) at seq {seq}:",
                      *_grouped(transitions, "batch", limits[seq])]
    elif s.generating:
        shown = generations.step_shown(s.reports[0], brackets=False)
        lines += [f"compute-bound from (closed form, any batch), {shown}:",
                  *_grouped(s.transition_groups(), "batch", s.max_batch)]
    elif s.captured:
        lines += _captured_lines(s)
    elif s.axis == "batch":
        lines += ["compute-bound from (closed form, any batch)"
                  + (f" at seq {first.seq}:" if first.seq is not None else ":"),
                  *_grouped(s.transition_groups(), "batch", s.max_batch)]
    by_seq = s.seq_transition_groups()
    if by_seq is not None:
        which = " (the sweep's first)" if s.axis == "batch" and len(s.batches) > 1 else ""
        lines += [f"compute-bound from (searched, any seq up to {s.seq_limit}) at batch "
                  f"{first.batch}{which}:",
                  *_grouped(by_seq, "seq", s.max_seq, f"not up to {s.seq_limit}")]
    # the whole step's verdict (analyze's), at the first swept seq: the GEMMs' crossings
    # above are each GEMM's own, and a step with ops may never follow them
    head = s.reports[0]
    at = f" (at seq {head.network.seq})" if s.axis == "seq" or s.grid else ""
    line = step_line(head) + at
    if s.captured:  # each row is its own capture's step
        line = ("step: not judged across batches: a captured module's step is known at the "
                "batches it was captured at, each row above")
    if s.generating:  # "step (the last decode step, KV cache 2559 tokens): ..."
        line = f"step ({generations.step_shown(head, brackets=False)}):{line[len('step:'):]}"
    return lines + [line]


def _captured_lines(s: Sweep) -> list[str]:
    """A captured module's transitions: over the dimension its captures show growing with the
    batch (``analysis.captured_scaling``), then those they do not show, grouped by why."""
    unknown = s.unknown_transitions
    known = {name: b for name, b in s.transitions().items() if name not in unknown}
    lines = []
    if known:
        lines += [f"compute-bound from (closed form over the dimension that grew in proportion "
                  f"to the batch across the captures at batches {_batches(s.batches)}; "
                  f"assumed to keep doing so):",
                  *_grouped(grouped_names(known), "batch", s.max_batch)]
    reasons: dict[str, list[str]] = {}
    for name, why in unknown.items():
        reasons.setdefault(why, []).append(name)
    if reasons:
        lines.append("compute-bound from: unknown")
        lines += [f"  {compact_names(names, 8)}: {why}" for why, names in reasons.items()]
    return lines


def _batches(values: tuple[int, ...]) -> str:
    return ", ".join(map(str, values)) if len(values) <= 8 else (
        f"{values[0]} to {values[-1]} ({len(values)})")
