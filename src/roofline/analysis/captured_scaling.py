"""Which dimension of a captured GEMM is the batch, read from captures at several batches.

A capture records each GEMM's shape at the one batch its inputs had, not which dimension
grows with the batch: a Linear's forward M is the batch, a convolution's M is the batch x its
output positions, its weight gradient's K the same, and a GEMM over a layer's widths does not
change at all (``analysis.batch.batch_advice`` claims nothing about another batch for one
capture). Captures at two batches or more say it: ``scaled_gemm`` takes one GEMM (the same
name, layer and pass) at each captured batch and gives it back with the ``batch_dims`` those
captures show, a dimension that is f x batch at every one of them (f the same) getting f, one
that stays the same 0, so that the closed form of ``analysis.batch.min_compute_bound_batch``
applies to it as to a model.yaml GEMM. The reading is checked: the GEMM so scaled must be, at
each captured batch, that capture's GEMM, its dimensions and its bytes (its tensors, a
convolution's input map among them, scaling with their matrices as ``Gemm.traffic`` scales
them). Whatever else the captures show (a dimension that changes but not in proportion, a
batch count and a dimension that both grow, a GEMM one capture ran and another did not,
bytes that do not follow) is not read: the reason, a phrase, comes back instead, and the
transition is unknown. Between and beyond the captured batches the reading assumes that the
dimension keeps growing so; the sweep says so where it shows the transitions."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from ..model.gemm import Gemm

#: The fields a GEMM keeps from one capture to the next whatever the batch; one that differs
#: is another GEMM under the same name.
_KIND = ("layer", "pass_", "dtype", "c_dtype", "c_read", "b_dtype", "group_size", "tf32")


def one_batch_reason(batch: int) -> str:
    """Why no GEMM of a module captured at one ``batch`` has a transition."""
    return (f"captured at one batch ({batch}): which of its dimensions grow with the batch is "
            f"not known; sweep two batches or more")


def scaled_gemm(gemms: list[Gemm | None], batches: list[int]) -> Gemm | str:
    """The GEMM captured as ``gemms[i]`` at ``batches[i]`` (two distinct batches or more; None
    where a capture has no GEMM of its name), with ``batch_dims`` as the captures show them
    (``batch_dims`` all 0 where its intensity is the same at every batch: none of M, N, K
    changes, though a batch count may grow with the batch), or why that cannot be read."""
    first = gemms[0]
    if first is None or any(g is None or _kind(g) != _kind(first) for g in gemms):
        return "not the same GEMM at every captured batch (the module ran other GEMMs)"
    found = [g for g in gemms if g is not None]
    factors: list[float] = []
    for dim in "mnk":
        values = [getattr(g, dim) for g in found]
        if len(set(values)) == 1:
            factors.append(0)
        elif len({Fraction(v, b) for v, b in zip(values, batches, strict=True)}) == 1:
            factors.append(values[0] / batches[0])
        else:
            return (f"its {dim.upper()} ({_listed(values)} at batches {_listed(batches)}) "
                    f"neither stays the same nor grows in proportion to the batch")
    counts = {g.batch_count for g in found}
    if len(counts) > 1:
        if any(factors) or len({g.work_intensity for g in found}) > 1:
            return (f"its batch count ({_listed([g.batch_count for g in found])}) grows with "
                    f"the batch and so does its intensity: not one batch dimension")
        return replace(first, batch_dims=(0, 0, 0))  # batched over the batch: intensity kept
    scaled = replace(first, batch_dims=(factors[0], factors[1], factors[2]))
    for gemm, batch in zip(found, batches, strict=True):
        dims = scaled.dims_at_batch(batch)
        if dims != (gemm.m, gemm.n, gemm.k) or scaled.traffic(dims) != gemm.bytes:
            return (f"its bytes at batch {batch} are not those at batch {batches[0]} scaled "
                    f"with its dimensions")
    return scaled


def _kind(gemm: Gemm) -> tuple[object, ...]:
    return tuple(getattr(gemm, name) for name in _KIND)


def _listed(values: list[int]) -> str:
    shown = ", ".join(f"{v:,}" for v in values[:6])
    return shown + (", ..." if len(values) > 6 else "")
