"""Why each GEMM gains or loses on a device against compare's baseline (``change_text`` of
``Comparison.why``: the bandwidth ratio, the peak ratio, or the bound it turns to), the GEMMs
grouped by it, and those a device runs through slower kernels (rows off 16 bytes, TF32
operands not K-major)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..units import seconds, times
from .report import compact_names

if TYPE_CHECKING:
    from ..analysis.report import Report
    from ..analysis.whatif_comparison import Comparison, GemmChange
    from ..model.item_numbers import Names


def change_text(change: GemmChange, baseline: str) -> str:
    """Why one GEMM gains or loses on a device (``Comparison.why``), as a clause."""
    if change.kind == "memory":
        text = (f"memory-bound on both: the bandwidth ratio {change.other:g}/{change.base:g} = "
                f"{times(change.other / change.base)}")
        if change.bytes_ratio != 1.0:
            text += f", moving {change.bytes_ratio:.2g}x the bytes"
        return text
    if change.kind == "compute":
        base_dtype, dtype = change.dtypes
        peaks = (f"{change.other:g}/{change.base:g}" if base_dtype == dtype else
                 f"{change.other:g} ({dtype})/{change.base:g} ({base_dtype})")
        return (f"compute-bound on both: the peak ratio {peaks} = "
                f"{times(change.other / change.base)}")
    relation = ">=" if change.bound == "compute" else "<"
    return (f"turns {change.bound}-bound (intensity {change.intensity:.1f} {relation} "
            f"ridge {change.ridge:.1f}; {change.base_bound}-bound on {baseline})")


def why_texts(c: Comparison, report: Report) -> list[tuple[str, str]]:
    """Every GEMM's name and why it gains or loses on ``report``'s device, in order
    (``Comparison.changes``; each distinct change written once)."""
    texts: dict[int, str] = {}
    baseline = c.baseline.hardware.name
    return [(name, texts.get(id(change)) or texts.setdefault(id(change),
                                                             change_text(change, baseline)))
            for name, change in c.changes(report)]


def why_groups(c: Comparison, report: Report) -> dict[str, Names]:
    """The GEMMs grouped by why they gain or lose on ``report``'s device, in the order each
    reason first comes: their numbers as runs (``Comparison.grouped_changes``; a repeat's
    copies are not named one by one), for ``compact_names``."""
    baseline = c.baseline.hardware.name
    return c.grouped_changes(report, lambda change: change_text(change, baseline))


def _why_lines(c: Comparison) -> list[str]:
    """Per device, the GEMMs grouped by why they gain or lose."""
    lines = []
    for r in c.reports[1:]:
        lines.append(f"{r.hardware.name} vs {c.baseline.hardware.name}:")
        lines += [f"  {compact_names(names, 8)}: {why}"
                  for why, names in why_groups(c, r).items()]
    return lines


def slow_kernel_lines(c: Comparison) -> list[str]:
    """Per device that runs Tensor-Core GEMMs through TMA, those whose rows miss 16 bytes and
    their predicted time as they are and padded (``predict.misaligned_rows``); per device whose
    fast kernels take only K-major operands, those with one that is not, as they are and as
    if K-major (``predict.strided_gemms``)."""
    from ..analysis.predict import misaligned_rows, strided_gemms

    # what slows them, and what the other figure is
    kinds = ((misaligned_rows, "have rows off 16 bytes: older kernels (TMA needs 16-byte rows)",
              "padded to the 16-byte rule"),
             (strided_gemms, "have TF32 operands not K-major: other kernels (the fast ones "
                             "take K-major only)", "were both K-major"))
    lines = []
    for r in c.reports:
        for slowed, why, otherwise in kinds:
            names, count, now, other = slowed(r)
            if count:
                lines.append(f"{r.hardware.name}: {_slowed_names(names, count)} {why}, "
                             f"predicted {seconds(now)} as they are, {seconds(other)} "
                             f"{otherwise}")
    return lines


def _slowed_names(names: list[str], count: int) -> str:
    """``compact_names`` of the GEMMs a table lists, and how many repeated copies besides."""
    more = f" (and {count - len(names):,} in repeated copies)" if count > len(names) else ""
    return compact_names(names, 8) + more
