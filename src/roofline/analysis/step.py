"""The whole step's verdict: the smallest batch at which the step, taken as one, turns
compute-bound, or never, and why.

The step is compute-bound at batch B when its compute time, the sum of every GEMM's and op's
work over its peak (a GEMM's dequantization included, and the forward GEMMs and ops
recomputation runs again: ``Network.tally``), reaches its memory time, the sum of their bytes
over the bandwidth: the roofline of the step as one fused kernel, beside the
per-GEMM transitions (``analysis.batch``). Both are affine in the batch, C(B) = c0 + c1 B and
M(B) = m0 + m1 B (weights and the optimizer update are fixed, tokens grow with B), over the
batches that are multiples of the step's routing period P (``_period``: 1 without a mixture of
experts), so the first batch from which it stays compute-bound is about ceil((m0 - c0) / (c1 -
m1)) when c1 > m1, then found against the step itself; when c1 <= m1 no batch gets there:
each sample (a sequence, where the model has one)
adds more byte time than compute time, and the reason is the part whose bytes grow fastest with
the batch among those that hold the step down, whose added bytes take longer than their added
work (in decode, attention reading the KV cache at about 1 FLOP/B). The slopes are read between
batches P and 2P: a mixture of experts' decode step reads more experts' weights as the batch
grows until its routed rows reach every expert (Mixtral's 2 of 8 at batch 1, all from batch 4),
so slopes read at batches 1 and 2 took each added sequence to add 2 experts' weights (0.9.0:
Mixtral's decode "tends to 1.1 FLOP/B", memory-bound at every batch, where it tends to 644
FLOP/B and is compute-bound from batch 1105 at 128 keys on an H200). Between multiples of P
the experts' rows round up, work added at a GEMM's intensity, so a batch just below the
crossing may read compute-bound where the next multiple of P does not: the verdict names the
batch from which every batch is. A part is the GEMMs, the
sparse linears (a sparse layer's products, forward and backward: ops here, not GEMMs, but the
products of the step all the same, ``SPARSE``), or one kind of op. Which parts hold the step
down is judged against the device, not against the step's mean intensity: below a mean there is
always a part, however small (SLIDE's relu-backward, 0% of the bytes, was named while its sparse
products, under the ridge too, made all of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..files.numbers import MAX_INT
from ..hardware.spec import HardwareSpec
from ..model.gemm import Gemm
from ..model.layers import routing_period
from ..model.network import Network


@dataclass(frozen=True)
class StepVerdict:
    """``batch``: the smallest batch at which the whole step is compute-bound (None: none);
    ``intensity_limit``: the FLOPs over the bytes each added sample brings (FLOP/B, what the
    step's intensity tends to); ``limiter``: the GEMMs (``"gemm"``), the sparse linears
    (``SPARSE``) or the op kind whose bytes grow fastest with the batch among those whose added
    bytes take longer than their added work on the device (those that hold it down: GPT-2's
    GEMMs at 622 FLOP/B make the most bytes, but above a 295 ridge),
    its ``limiter_share`` of that growth and its own ``limiter_intensity``; ``max_batch``: the
    largest batch that fits in memory (None: no capacity stated)."""

    batch: int | None
    intensity_limit: float | None  # None: no bytes grow with the batch
    limiter: str
    limiter_share: float
    limiter_intensity: float | None
    max_batch: int | None = None
    captured_batch: int | None = None  # a captured module: judged at this batch only

    @property
    def fits(self) -> bool | None:
        if self.batch is None or self.max_batch is None:
            return None
        return self.batch <= self.max_batch

    def to_dict(self) -> dict[str, object]:
        """The JSON ``step`` object."""
        return {"min_compute_bound_batch": self.batch, "fits": self.fits,
                "intensity_limit": self.intensity_limit, "limiter": self.limiter,
                "limiter_share": self.limiter_share,
                "limiter_intensity": self.limiter_intensity,
                "captured_batch": self.captured_batch}


#: The part a sparse layer's products make, whichever pass (``sparse-linear``,
#: ``sparse-linear-backward-data``, ``sparse-linear-backward-weight``): one part, as the GEMMs
#: are, not three op kinds each a third of the bytes.
SPARSE = "sparse-linear"


def _part(kind: str) -> str:
    """The part of the step an op of ``kind`` counts in: its kind, a sparse product's ``SPARSE``."""
    return SPARSE if kind.startswith(SPARSE) else kind


def _times(network: Network, hardware: HardwareSpec, batch: int) -> tuple[
        float, float, dict[str, tuple[int, int, float]]]:
    """(compute time, memory time, per part (FLOPs, bytes, compute time)) of the step at
    ``batch``: the FLOPs summed exactly per dtype and each sum over its peak (a GEMM's at its
    own dtype's, an op's at the model's), the bytes summed exactly over the bandwidth. Read once
    per distinct layer and pass, times its copies (``Network.tally``)."""
    net = replace(network, batch=batch)
    op_dtype = net.operand_dtype
    work: dict[str, int] = {}  # dtype -> FLOPs at its peak
    nbytes = 0
    kinds: dict[str, tuple[int, int, float]] = {}
    for count, items in net.tally():
        for item in items:
            if isinstance(item, Gemm):
                kind, dtype, flops = "gemm", item.dtype, item.work
            else:
                kind, dtype, flops = _part(item.kind), op_dtype, item.flops
            work[dtype] = work.get(dtype, 0) + flops * count
            nbytes += item.bytes * count
            f, b, t = kinds.get(kind, (0, 0, 0.0))
            kinds[kind] = (f + flops * count, b + item.bytes * count,
                           t + flops * count / hardware.peak_flops_per_s(dtype))
    compute = sum(flops / hardware.peak_flops_per_s(dtype) for dtype, flops in work.items())
    return compute, nbytes / hardware.bandwidth_bytes_per_s, kinds


def step_verdict(network: Network, hardware: HardwareSpec,
                 max_batch: int | None = None) -> StepVerdict:
    """The whole step's verdict (see the module docstring). A captured module ran at one
    batch, so no other batch is judged: the verdict names that batch instead."""
    if network.captured_batch is not None:
        return StepVerdict(None, None, "", 0.0, None, max_batch, network.captured_batch)
    period = _period(network)
    c_one, m_one, k_one = _times(network, hardware, 1)
    c_p, m_p, k_p = (c_one, m_one, k_one) if period == 1 else _times(network, hardware, period)
    c_two, m_two, k_two = _times(network, hardware, 2 * period)
    c1, m1 = (c_two - c_p) / period, (m_two - m_p) / period  # per added sample
    none = (0, 0, 0.0)
    growth = {kind: tuple(two - one for two, one in zip(k_two[kind], k_p.get(kind, none)))
              for kind in k_two}
    flops_slope = sum(int(f) for f, _, _ in growth.values())
    bytes_slope = sum(int(b) for _, b, _ in growth.values())
    limit = flops_slope / bytes_slope if bytes_slope > 0 else None
    # the parts whose added bytes outlast their added work hold the step down (where no batch
    # makes the step compute-bound one always does: the sums do)
    bandwidth = hardware.bandwidth_bytes_per_s
    low = [kind for kind, (_, b, t) in growth.items()
           if b > 0 and t <= b / bandwidth] or list(growth)
    limiter = max(low, key=lambda kind: growth[kind][1])
    lf, lb = int(growth[limiter][0]), int(growth[limiter][1])
    verdict = StepVerdict(None, limit, limiter, lb / bytes_slope if bytes_slope else 0.0,
                          lf / lb if lb else None, max_batch)
    if c_one >= m_one:
        return replace(verdict, batch=1)
    if c1 <= m1:
        return verdict
    batch = max(1, math.ceil(((m_p - m1 * period) - (c_p - c1 * period)) / (c1 - m1)))

    def compute_bound(b: int) -> bool:
        c, m, _ = _times(network, hardware, b)
        return c >= m

    # rounding; a period's uneven expert rows: from the batch found, every batch is
    while batch < MAX_INT and not all(compute_bound(b) for b in range(batch, batch + period)):
        batch += 1
    while batch > 1 and compute_bound(batch - 1):
        batch -= 1
    return replace(verdict, batch=min(batch, MAX_INT))


def _period(network: Network) -> int:
    """The batches over which the step is affine: the multiples of every block's local
    experts (``routing_period``; 1 without a mixture of experts). At such a batch each block's
    T k routed rows reach all its experts and spread evenly over them."""
    return math.lcm(1, *(routing_period(layer) for _, layer in network.layer_groups()))
